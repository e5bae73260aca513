"""Find split-linear regions in a Dynamo FX graph and replace them with one op call.

Two kinds of region are recognized on the torch-level graph Dynamo hands to a
backend (``torch.cat``, ``torch._C._nn.linear``, ``operator.matmul``, ...):

* **vertical**: a linear whose weight and/or bias is a ``torch.cat`` along
  dim 0 of separate tensors (TransformerEngine ``parameters_split`` style)::

      F.linear(x, torch.cat([wq, wk, wv]), torch.cat([bq, bk, bv]))

* **horizontal**: two or more linears reading the same input (q/k/v, gate/up
  projections), all with a bias or all without::

      q_proj(x), k_proj(x), v_proj(x)

A *linear site* is any of ``linear(x, W, b)``, ``matmul(x, T(W))``,
``mm(x, T(W))``, ``addmm(b, x, T(W))`` and ``matmul(x, T(W)) + b``, where ``T``
is a 2-D transpose (``t``, ``.T``, ``.mT``, ``permute(1, 0)``,
``transpose(0, 1)``).  A region becomes one call
``linear_fn(x, [W_0, ..., W_{n-1}], [b_0, ..., b_{n-1}] | None)`` (in the
backend ``splitlinear.ops.linear``), the outputs of a horizontal region being
``torch.narrow`` views of the op's output along the last dimension (made
``.contiguous()`` where strides are observable: graph outputs and ``.view``
users, so results keep eager's layout).  The parts are passed as they are;
whether they are adjacent in memory is decided by the op on every call, since
Dynamo does not guard on storage.  Regions may chain (one region's output
feeding another's input or parts).

A region is left alone (a *rejection*, logged with its reason) when the parts
mix dtypes or devices, are not float16/bfloat16/float32/float64, have a K
different from the input's, have symbolic sizes, when the site's output dtype
differs from its input's (autocast), or when replacing it would move code
across a grad-mode/autocast change or before an operand's definition.

The structure follows Torch-TensorRT's dynamo partitioner: analysis
(:func:`find_linear_sites`, :func:`plan_regions`) is separate from rewriting
(:func:`rewrite_region`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.fx as fx
from torch.fx.experimental.symbolic_shapes import is_concrete_int

from .fx_state import AutocastState, GraphState

#: Element types the op computes in.
SUPPORTED_DTYPES: frozenset[torch.dtype] = frozenset(
    {torch.float16, torch.bfloat16, torch.float32, torch.float64}
)

_LINEAR_FNS: frozenset[Any] = frozenset({torch._C._nn.linear, torch.nn.functional.linear})
_CAT_FNS: frozenset[Any] = frozenset({torch.cat, torch.concat, torch.concatenate})
_MATMUL_FNS: frozenset[Any] = frozenset({operator.matmul, torch.matmul, torch.mm})
_ADD_FNS: frozenset[Any] = frozenset({operator.add, torch.add})

LinearFn = Callable[..., torch.Tensor]

#: Operand dtypes autocast casts to its lower-precision dtype (float64 is left as is).
_AUTOCAST_CAST_DTYPES: frozenset[torch.dtype] = frozenset({torch.float16, torch.bfloat16, torch.float32})


# ---------------------------------------------------------------------------
# Data model
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PartRef:
    """One weight or bias part: rows ``[start, start + length)`` of ``node``'s value.

    ``start is None`` means the whole value (no ``torch.narrow`` is emitted).
    """

    node: fx.Node
    start: int | None = None
    length: int | None = None


@dataclasses.dataclass
class LinearSite:
    """A node computing ``input @ weight.T (+ bias)``.

    Attributes:
        out: the node whose value is the linear's result (uses are redirected).
        input: the ``[..., K]`` input node.
        weight: the ``[N, K]`` weight node (possibly a ``torch.cat``).
        bias: the ``[N]`` bias node, or ``None``.
        intermediates: nodes feeding only ``out`` (transposes, the ``mm`` of an
            ``mm + b``) that become dead after the rewrite.
        form: a short name of the pattern, for logs.
    """

    out: fx.Node
    input: fx.Node
    weight: fx.Node
    bias: fx.Node | None
    intermediates: list[fx.Node]
    form: str
    # Filled by analysis.
    weight_parts: list[PartRef] = dataclasses.field(default_factory=list)
    bias_parts: list[PartRef] | None = None
    out_features: int = 0
    from_cat: bool = False
    bypassed: list[fx.Node] = dataclasses.field(default_factory=list)
    #: ``(device_type, dtype)`` of the autocast region the site runs in, or ``None``.
    autocast: tuple[str, torch.dtype] | None = None

    def describe(self) -> str:
        return f"{self.form} node {self.out.name!r}"


@dataclasses.dataclass
class Region:
    """Sites replaced by one op call (one site: vertical; several: horizontal)."""

    sites: list[LinearSite]

    @property
    def kind(self) -> str:
        return "horizontal" if len(self.sites) > 1 else "vertical"

    @property
    def input(self) -> fx.Node:
        return self.sites[0].input

    @property
    def weight_parts(self) -> list[PartRef]:
        return [p for s in self.sites for p in s.weight_parts]

    @property
    def bias_parts(self) -> list[PartRef] | None:
        if self.sites[0].bias_parts is None:
            return None
        return [p for s in self.sites for p in (s.bias_parts or [])]

    def describe(self) -> str:
        names = ", ".join(repr(s.out.name) for s in self.sites)
        return f"{self.kind} region [{names}] with {len(self.weight_parts)} parts"


@dataclasses.dataclass(frozen=True)
class Rejection:
    """A candidate left to the fallback, with the reason."""

    node: fx.Node
    reason: str

    def message(self) -> str:
        return f"node {self.node.name!r} ({_target_name(self.node)}): {self.reason}"


@dataclasses.dataclass
class Plan:
    """Result of :func:`plan_regions`."""

    regions: list[Region]
    rejections: list[Rejection]
    skipped: list[str]  # policy skips (min_parts), logged but not counted


# ---------------------------------------------------------------------------
# Small helpers over nodes
# ---------------------------------------------------------------------------


def _target_name(node: fx.Node) -> str:
    target = node.target
    if isinstance(target, str):
        return target if node.op != "call_method" else f"Tensor.{target}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or str(target)
    return f"{module}.{name}" if module else name


def node_value(node: Any) -> Any:
    """The example value Dynamo (``example_value``) or a fake propagation (``val``) recorded."""
    if not isinstance(node, fx.Node):
        return node
    if "example_value" in node.meta:
        return node.meta["example_value"]
    return node.meta.get("val")


def _tensor(node: Any) -> torch.Tensor | None:
    value = node_value(node)
    return value if isinstance(value, torch.Tensor) else None


def _arg(node: fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _static(value: Any) -> int | None:
    """``value`` as a Python int if it is a concrete (non-symbolic) size, else ``None``."""
    if isinstance(value, int):
        return value
    if isinstance(value, torch.SymInt) and is_concrete_int(value):
        return int(value)
    return None


def _dims_swap_2d(dims: Any, *, ordered: bool) -> bool:
    """``dims`` names the two axes of a 2-D tensor swapped (``ordered``: as a permutation)."""
    if not isinstance(dims, (tuple, list)) or len(dims) != 2 or not all(isinstance(d, int) for d in dims):
        return False
    if ordered:  # permute(1, 0)
        return (dims[0] % 2, dims[1] % 2) == (1, 0)
    return {dims[0] % 2, dims[1] % 2} == {0, 1}  # transpose(0, 1) / (1, 0) / (-1, -2)


def _is_2d_transpose_of(node: Any) -> fx.Node | None:
    """If ``node`` is a transpose of a 2-D tensor node ``W``, return ``W``."""
    if not isinstance(node, fx.Node) or not node.args or node.kwargs:
        return None
    src, args = node.args[0], tuple(node.args[1:])
    if not isinstance(src, fx.Node):
        return None
    value = _tensor(src)
    if value is None or value.dim() != 2:
        return None
    if node.op == "call_method":
        name = node.target
        if name == "t" and not args:
            return src
        if name == "permute":
            dims = args[0] if len(args) == 1 else args
            return src if _dims_swap_2d(dims, ordered=True) else None
        if name in ("transpose", "swapaxes", "swapdims"):
            return src if _dims_swap_2d(args, ordered=False) else None
        return None
    if node.op == "call_function":
        if node.target is getattr and args in (("T",), ("mT",)):
            return src
        if node.target is torch.t and not args:
            return src
        if node.target is torch.permute and len(args) == 1:
            return src if _dims_swap_2d(args[0], ordered=True) else None
        if node.target in (torch.transpose, torch.swapaxes, torch.swapdims):
            return src if _dims_swap_2d(args, ordered=False) else None
    return None


def _is_target(node: fx.Node, fns: frozenset[Any], methods: Iterable[str]) -> bool:
    if node.op == "call_function":
        return node.target in fns
    if node.op == "call_method":
        return node.target in tuple(methods)
    return False


def cat_parts(node: Any) -> tuple[list[fx.Node] | None, str | None]:
    """Decompose a ``torch.cat`` along dim 0.

    Returns:
        ``(parts, None)`` for a dim-0 concatenation of graph values,
        ``(None, reason)`` for a concatenation that cannot be used (other dim,
        constant parts), ``(None, None)`` if ``node`` is not a concatenation.
    """
    if not isinstance(node, fx.Node) or node.op != "call_function" or node.target not in _CAT_FNS:
        return None, None
    tensors = _arg(node, 0, "tensors")
    dim = _arg(node, 1, "dim", node.kwargs.get("axis", 0))
    out = _tensor(node)
    if not isinstance(tensors, (list, tuple)) or out is None:
        return None, "concatenation of an unknown list"
    if not isinstance(dim, int):
        return None, f"concatenation along a non-constant dim {dim!r}"
    if out.dim() == 0 or dim % out.dim() != 0:
        return None, f"concatenation along dim {dim}, expected dim 0"
    if not all(isinstance(t, fx.Node) for t in tensors):
        return None, "concatenation with a non-tensor part"
    return list(tensors), None


# ---------------------------------------------------------------------------
# Finding linear sites
# ---------------------------------------------------------------------------


def _match_site(node: fx.Node) -> LinearSite | None:
    """Recognize ``node`` as a linear site (without validating dtypes/shapes)."""
    if node.op == "call_function" and node.target in _LINEAR_FNS:
        x, w, b = _arg(node, 0, "input"), _arg(node, 1, "weight"), _arg(node, 2, "bias")
        if isinstance(x, fx.Node) and isinstance(w, fx.Node) and (b is None or isinstance(b, fx.Node)):
            return LinearSite(out=node, input=x, weight=w, bias=b, intermediates=[], form="linear")
        return None
    if _is_target(node, _MATMUL_FNS, ("matmul", "mm")) and len(node.args) == 2 and not node.kwargs:
        x, wt = node.args
        w = _is_2d_transpose_of(wt)
        if isinstance(x, fx.Node) and isinstance(wt, fx.Node) and w is not None:
            form = "mm" if (node.target is torch.mm or node.target == "mm") else "matmul"
            return LinearSite(out=node, input=x, weight=w, bias=None, intermediates=[wt], form=form)
        return None
    if _is_target(node, frozenset({torch.addmm}), ("addmm",)) and len(node.args) == 3:
        if any(node.kwargs.get(k, 1) != 1 for k in ("beta", "alpha")) or set(node.kwargs) - {"beta", "alpha"}:
            return None
        b, x, wt = node.args
        w = _is_2d_transpose_of(wt)
        bias = _tensor(b)
        if (isinstance(x, fx.Node) and isinstance(b, fx.Node) and isinstance(wt, fx.Node)
                and w is not None and bias is not None):
            if bias.dim() == 1:
                return LinearSite(out=node, input=x, weight=w, bias=b, intermediates=[wt], form="addmm")
        return None
    return None


def _absorb_bias_add(site: LinearSite) -> LinearSite:
    """Turn ``matmul(x, T(W)) + b`` (``b`` 1-D) into one site with a bias."""
    if site.bias is not None or len(site.out.users) != 1:
        return site
    (user,) = site.out.users
    if not _is_target(user, _ADD_FNS, ("add",)) or user.kwargs or len(user.args) != 2:
        return site
    other = user.args[1] if user.args[0] is site.out else user.args[0]
    if other is site.out or not isinstance(other, fx.Node):
        return site
    bias, out = _tensor(other), _tensor(site.out)
    if bias is None or out is None or bias.dim() != 1 or bias.dtype != out.dtype:
        return site
    if _static(bias.shape[0]) != _static(out.shape[-1]) or _static(bias.shape[0]) is None:
        return site
    return LinearSite(
        out=user,
        input=site.input,
        weight=site.weight,
        bias=other,
        intermediates=[*site.intermediates, site.out],
        form=f"{site.form}+add",
    )


def find_linear_sites(graph: fx.Graph) -> list[LinearSite]:
    """All linear sites of ``graph`` in graph order (see the module docstring for the forms)."""
    sites: list[LinearSite] = []
    absorbed: set[fx.Node] = set()
    for node in graph.nodes:
        if node in absorbed:
            continue
        site = _match_site(node)
        if site is None:
            continue
        site = _absorb_bias_add(site)
        absorbed.add(site.out)
        sites.append(site)
    # A matmul absorbed into a later add must not also appear on its own.
    inner = {n for s in sites for n in s.intermediates}
    return [s for s in sites if s.out not in inner]


# ---------------------------------------------------------------------------
# Validating one site
# ---------------------------------------------------------------------------


def _split_ref(node: fx.Node, sizes: Sequence[int]) -> list[PartRef]:
    if len(sizes) == 1:
        return [PartRef(node)]
    refs: list[PartRef] = []
    offset = 0
    for size in sizes:
        refs.append(PartRef(node, offset, size))
        offset += size
    return refs


def analyze_site(site: LinearSite, autocast_dtype: torch.dtype | None = None) -> str | None:
    """Fill ``site``'s parts and check them; return the rejection reason or ``None``.

    Requirements: the input ``[..., K]`` (at least 2-D) and every weight part
    ``[N_i, K]`` and bias part ``[N_i]`` are on one device; ``K`` and every
    ``N_i`` are static. Without autocast they share one supported float dtype
    and the site's output has it. Under autocast (``autocast_dtype``: the
    autocast dtype of the input's device where the site runs) each operand is
    float16/bfloat16/float32 (autocast casts them; float64 is not cast) and
    the output has ``autocast_dtype``: the op's Autocast kernel applies the
    same cast policy as ``F.linear``.
    """
    x = _tensor(site.input)
    if x is None:
        return f"input {site.input.name!r} has no tensor example value"
    if x.dim() < 2:
        return f"input {site.input.name!r} is {x.dim()}-D, expected at least 2-D [..., K]"
    if x.dtype not in SUPPORTED_DTYPES:
        return f"input {site.input.name!r} has dtype {x.dtype}, expected one of float16/bfloat16/float32/float64"
    k = _static(x.shape[-1])
    if k is None:
        return f"input {site.input.name!r} has a symbolic last dimension {x.shape[-1]}"
    out = _tensor(site.out)
    if autocast_dtype is not None and x.device.type in ("cpu", "cuda"):
        if out is None or out.dtype != autocast_dtype:
            return (f"output dtype {None if out is None else out.dtype} is not the autocast dtype "
                    f"{autocast_dtype}")
        expected_dtype = None  # operands may mix dtypes: autocast casts each one
    else:
        if out is not None and out.dtype != x.dtype:
            return f"output dtype {out.dtype} differs from input dtype {x.dtype}"
        expected_dtype = x.dtype

    def dtype_problem(value: torch.Tensor) -> str | None:
        if expected_dtype is None:
            if value.dtype not in _AUTOCAST_CAST_DTYPES:
                return (f"has dtype {value.dtype} under autocast, expected one of "
                        "float16/bfloat16/float32 (autocast does not cast it)")
            return None
        if value.dtype != expected_dtype:
            return f"has dtype {value.dtype}, expected {expected_dtype} (the input's)"
        return None

    if expected_dtype is None and (problem := dtype_problem(x)) is not None:
        return f"input {site.input.name!r} {problem}"

    w_parts, w_reason = cat_parts(site.weight)
    if w_reason:
        return f"weight {site.weight.name!r}: {w_reason}"
    b_parts: list[fx.Node] | None = None
    if site.bias is not None:
        b_parts, b_reason = cat_parts(site.bias)
        if b_reason:
            return f"bias {site.bias.name!r}: {b_reason}"
    site.from_cat = w_parts is not None or b_parts is not None
    site.bypassed = [n for n in (site.weight, site.bias) if n is not None and cat_parts(n)[0] is not None]

    weight_nodes = w_parts if w_parts is not None else [site.weight]
    sizes: list[int] = []
    for i, part in enumerate(weight_nodes):
        value = _tensor(part)
        where = f"weight part #{i} {part.name!r}"
        if value is None:
            return f"{where} has no tensor example value"
        if value.dim() != 2:
            return f"{where} is {value.dim()}-D with shape {tuple(value.shape)}, expected [N, {k}]"
        if (problem := dtype_problem(value)) is not None:
            return f"{where} {problem}"
        if value.device != x.device:
            return f"{where} is on {value.device}, expected {x.device} (the input's)"
        rows, cols = _static(value.shape[0]), _static(value.shape[1])
        if rows is None or cols is None:
            return f"{where} has a symbolic shape {tuple(value.shape)}"
        if cols != k:
            return f"{where} has {cols} columns, expected K = {k} (the input's last dimension)"
        sizes.append(rows)
    n_total = sum(sizes)

    bias_sizes: list[int] | None = None
    if site.bias is not None:
        bias_nodes = b_parts if b_parts is not None else [site.bias]
        bias_sizes = []
        for i, part in enumerate(bias_nodes):
            value = _tensor(part)
            where = f"bias part #{i} {part.name!r}"
            if value is None:
                return f"{where} has no tensor example value"
            if value.dim() != 1:
                return f"{where} is {value.dim()}-D with shape {tuple(value.shape)}, expected [N]"
            if (problem := dtype_problem(value)) is not None:
                return f"{where} {problem}"
            if value.device != x.device:
                return f"{where} is on {value.device}, expected {x.device} (the input's)"
            size = _static(value.shape[0])
            if size is None:
                return f"{where} has a symbolic shape {tuple(value.shape)}"
            bias_sizes.append(size)
        if sum(bias_sizes) != n_total:
            return f"bias has {sum(bias_sizes)} elements, expected {n_total} (the weight's rows)"

    # Parts of weight and bias must describe the same row partition; a side that
    # is one tensor (or a cat with a different partition) is narrowed to match.
    if w_parts is not None or bias_sizes is None or b_parts is None:
        site.weight_parts = [PartRef(n) for n in weight_nodes]
        if site.bias is None:
            site.bias_parts = None
        elif b_parts is not None and bias_sizes == sizes:
            site.bias_parts = [PartRef(n) for n in b_parts]
        else:
            site.bias_parts = _split_ref(site.bias, sizes)
    else:  # weight is one tensor, bias a cat: partition by the bias
        site.weight_parts = _split_ref(site.weight, bias_sizes)
        site.bias_parts = [PartRef(n) for n in b_parts]
    site.out_features = n_total
    return None


# ---------------------------------------------------------------------------
# Planning regions
# ---------------------------------------------------------------------------


def _operands(site: LinearSite) -> list[fx.Node]:
    refs = [*site.weight_parts, *(site.bias_parts or [])]
    return [site.input, *(r.node for r in refs)]


def _moved_nodes(site: LinearSite) -> list[fx.Node]:
    return [site.out, *site.intermediates, *site.bypassed]


def _is_cat(node: Any) -> bool:
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target in _CAT_FNS


def plan_regions(graph: fx.Graph, *, horizontal_fusion: bool = True, min_parts: int = 2,
                 entry_grad_mode: bool | None = None, entry_autocast: AutocastState | None = None) -> Plan:
    """Decide which sites become op calls.

    Vertical candidates are sites whose weight or bias is a ``torch.cat``;
    horizontal candidates are sites sharing an input node with at least one
    other site.  Horizontal groups are split by bias presence.  A site is
    rejected, and a sibling is left unfused, when the rewrite would move a
    read across a barrier (:mod:`splitlinear.fx_state`: a grad-mode or
    autocast change, an in-place/mutating node, another side effect); a
    sibling's operands must also be defined before the first sibling.

    Args:
        graph: a Dynamo (torch-level) FX graph whose nodes carry
            ``example_value`` or ``val`` metadata.
        horizontal_fusion: also fuse sibling linears.
        min_parts: regions with fewer weight parts are skipped (not rejected).
        entry_grad_mode: grad mode on entry to ``graph`` (default: the
            calling thread's, which is Dynamo's for a top-level graph).
        entry_autocast: autocast state on entry (default: the calling thread's).
    """
    state = GraphState(graph, torch.is_grad_enabled() if entry_grad_mode is None else entry_grad_mode,
                       entry_autocast)
    order = state.order

    rejections: list[Rejection] = []
    skipped: list[str] = []
    all_sites = find_linear_sites(graph)
    by_input: dict[fx.Node, list[LinearSite]] = {}
    for site in all_sites:
        by_input.setdefault(site.input, []).append(site)

    valid: list[LinearSite] = []
    for site in all_sites:
        has_cat = _is_cat(site.weight) or _is_cat(site.bias)
        has_siblings = horizontal_fusion and len(by_input[site.input]) > 1
        if not (has_cat or has_siblings):
            continue  # a plain linear: not a candidate
        x = _tensor(site.input)
        autocast = state.autocast_at(site.out, x.device.type) if x is not None else None
        reason = analyze_site(site, autocast)
        if reason is None:
            barrier = state.barrier(_moved_nodes(site), site.out)
            if barrier is not None:
                reason = f"{barrier.reason} lies between the concatenation and the linear"
        if reason is not None:
            rejections.append(Rejection(site.out, reason))
            continue
        site.autocast = None if autocast is None else (x.device.type, autocast)
        valid.append(site)

    regions: list[Region] = []
    leftover_reason: dict[fx.Node, str] = {}
    fused: set[fx.Node] = set()
    if horizontal_fusion:
        for inp in by_input:
            ok = [s for s in valid if s.input is inp]
            for with_bias in (False, True):
                members = sorted((s for s in ok if (s.bias is not None) == with_bias), key=lambda s: order[s.out])
                if len(members) < 2:
                    if members and len(ok) > len(members):
                        leftover_reason[members[0].out] = (
                            f"sibling linears on input {inp.name!r} mix bias and no bias; "
                            "fused only among equals and no equal is left")
                    continue
                anchor = members[0].out
                accepted = [members[0]]
                for site in members[1:]:
                    late = [n for n in _operands(site) if order[n] >= order[anchor]]
                    if late:
                        leftover_reason[site.out] = (
                            f"operand {late[0].name!r} is defined after sibling {anchor.name!r}; "
                            "fusing would need reordering")
                    elif (barrier := state.barrier(_moved_nodes(site), anchor)) is not None:
                        leftover_reason[site.out] = (
                            f"{barrier.reason} lies between it and sibling {anchor.name!r}")
                    else:
                        accepted.append(site)
                if len(accepted) >= 2:
                    regions.append(Region(accepted))
                    fused.update(s.out for s in accepted)
    for site in valid:
        if site.out in fused:
            continue
        if site.from_cat:
            regions.append(Region([site]))
        else:
            rejections.append(Rejection(site.out, leftover_reason.get(site.out, "no sibling left to fuse with")))

    kept: list[Region] = []
    for region in regions:
        if len(region.weight_parts) < min_parts:
            skipped.append(f"{region.describe()}: fewer than min_parts={min_parts} parts")
            continue
        kept.append(region)
    kept.sort(key=lambda r: min(order[s.out] for s in r.sites))
    return Plan(kept, rejections, skipped)


# ---------------------------------------------------------------------------
# Rewriting
# ---------------------------------------------------------------------------

_VIEW_METHODS = frozenset({"view", "view_as"})


def _needs_contiguous(node: fx.Node) -> bool:
    """A horizontal output is a strided view; make it dense where strides are observable."""
    for user in node.users:
        if user.op == "output":
            return True
        if user.op == "call_method" and user.target in _VIEW_METHODS:
            return True
        if user.op == "call_function" and user.target in (torch.Tensor.view, torch.Tensor.view_as):
            return True
    return False


def _fake_mode(values: Iterable[Any]) -> Any:
    """The fake mode the example values belong to (not the tracing context's: Dynamo
    hands backends a fresh one), or ``None`` if they are real tensors."""
    from torch._subclasses.fake_tensor import FakeTensor

    for value in values:
        if isinstance(value, FakeTensor):
            return value.fake_mode
    return None


def _copy_meta(src: fx.Node, dst: fx.Node) -> None:
    for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
        if key in src.meta:
            dst.meta[key] = src.meta[key]


def _resolve_replaced(region: Region, replaced: dict[fx.Node, fx.Node]) -> None:
    """Point ``region`` at the replacements of nodes an earlier rewrite erased (chained regions)."""

    def resolve(node: fx.Node) -> fx.Node:
        while node in replaced:
            node = replaced[node]
        return node

    for site in region.sites:
        site.input = resolve(site.input)
        site.weight_parts = [dataclasses.replace(r, node=resolve(r.node)) for r in site.weight_parts]
        if site.bias_parts is not None:
            site.bias_parts = [dataclasses.replace(r, node=resolve(r.node)) for r in site.bias_parts]


def _identity(value: Any) -> Any:
    return value


def rewrite_region(gm: fx.GraphModule, region: Region, linear_fn: LinearFn,
                   replaced: dict[fx.Node, fx.Node] | None = None) -> None:
    """Replace ``region``'s sites with one ``linear_fn`` call (and narrows for horizontal ones).

    New nodes get ``example_value`` metadata by running ``linear_fn`` under the
    graph's fake mode; a failure there raises before the graph is modified.

    Args:
        gm: the graph module, modified in place (``recompile`` is the caller's).
        region: from :func:`plan_regions` on this graph.
        linear_fn: the callable placed in the graph (``splitlinear.ops.linear``).
        replaced: shared between the rewrites of one graph: maps each replaced
            site output to its replacement, so that a later region reading it
            (chained split linears) is redirected.

    Raises:
        RuntimeError: fake propagation through ``linear_fn`` failed.
    """
    if replaced is None:
        replaced = {}
    _resolve_replaced(region, replaced)
    graph = gm.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    anchor = min((s.out for s in region.sites), key=lambda n: order[n])
    w_refs, b_refs = region.weight_parts, region.bias_parts

    # Fake propagation first: validates the call before touching the graph.
    def ref_value(ref: PartRef) -> Any:
        value = node_value(ref.node)
        return value if ref.start is None else value.narrow(0, ref.start, ref.length)

    x_value = node_value(region.input)
    fake_mode = _fake_mode([x_value] + [node_value(r.node) for r in w_refs])
    example: dict[str, Any] = {}
    autocast = region.sites[0].autocast
    try:
        ctx = fake_mode if fake_mode is not None else contextlib.nullcontext()
        # The op's Autocast kernel decides the dtype: run it in the site's autocast state.
        amp = (torch.autocast(autocast[0], dtype=autocast[1]) if autocast is not None
               else contextlib.nullcontext())
        # Identity saved-tensor hooks: the call records autograd state on fake
        # tensors, and must not reach hooks the user's code installed around
        # the compile (non-reentrant activation checkpointing counts saved
        # tensors; compile-time ones would break its forward/recompute match).
        with ctx, amp, torch.autograd.graph.saved_tensors_hooks(_identity, _identity):
            w_vals = [ref_value(r) for r in w_refs]
            b_vals = None if b_refs is None else [ref_value(r) for r in b_refs]
            out_val = linear_fn(x_value, w_vals, b_vals)
            example["out"] = out_val
            example["w"], example["b"] = w_vals, b_vals
            offset = 0
            narrows = []
            for site in region.sites:
                narrows.append(out_val.narrow(-1, offset, site.out_features))
                offset += site.out_features
            example["narrow"] = narrows
            example["contig"] = [v.contiguous() for v in narrows]
    except Exception as exc:  # noqa: BLE001 - any failure means "do not rewrite"
        raise RuntimeError(f"fake propagation of {region.describe()} through the op failed: {exc}") from exc
    # The replacement must have each site's shape and dtype; anything else
    # means the plan misjudged the site (never rewrite into different numbers).
    for site, value in zip(region.sites, example["narrow"]):
        old = _tensor(site.out)
        if old is not None and (old.dtype != value.dtype or len(old.shape) != len(value.shape)
                                or any(_static(a) != _static(b) for a, b in zip(old.shape, value.shape))):
            raise RuntimeError(
                f"the op would give {site.out.name!r} dtype {value.dtype} and shape {tuple(value.shape)}, "
                f"but the original has {old.dtype} and {tuple(old.shape)}")

    with graph.inserting_before(anchor):
        def emit_ref(ref: PartRef, value: Any) -> fx.Node:
            if ref.start is None:
                return ref.node
            n = graph.call_function(torch.narrow, (ref.node, 0, ref.start, ref.length))
            n.meta["example_value"] = value
            return n

        w_nodes = [emit_ref(r, v) for r, v in zip(w_refs, example["w"])]
        b_nodes = None if b_refs is None else [emit_ref(r, v) for r, v in zip(b_refs, example["b"])]
        call = graph.call_function(linear_fn, (region.input, w_nodes, b_nodes))
        call.meta["example_value"] = example["out"]
        _copy_meta(anchor, call)
        offset = 0
        for i, site in enumerate(region.sites):
            if len(region.sites) == 1:
                replacement = call
            else:
                replacement = graph.call_function(torch.narrow, (call, -1, offset, site.out_features))
                replacement.meta["example_value"] = example["narrow"][i]
                _copy_meta(site.out, replacement)
                if _needs_contiguous(site.out):
                    dense = graph.call_method("contiguous", (replacement,))
                    dense.meta["example_value"] = example["contig"][i]
                    _copy_meta(site.out, dense)
                    replacement = dense
            offset += site.out_features
            site.out.replace_all_uses_with(replacement)
            replaced[site.out] = replacement

    erased: set[fx.Node] = set()
    for site in region.sites:
        for node in [site.out, *reversed(site.intermediates), *site.bypassed]:
            if node not in erased and not node.users and node.op not in ("placeholder", "output"):
                graph.erase_node(node)
                erased.add(node)
