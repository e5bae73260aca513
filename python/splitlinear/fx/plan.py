"""Validation and planning: which matched sites become op calls, and in which regions.

:func:`analyze_site` checks one site's operands (dtypes, devices, static
shapes) and fills its parts; :func:`plan_regions` groups valid sites into
vertical and horizontal regions, rejecting (with the reason) any whose rewrite
would read a tensor at a point where its value may differ from eager's
(:class:`~splitlinear.fx.state.GraphState`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import torch
import torch.fx as fx

from .._dtypes import AUTOCAST_CAST_DTYPES, SUPPORTED_DTYPES, slash_list
from . import dtensor
from .model import LinearSite, PartRef, Plan, Region, Rejection, node_tensor, static_int
from .patterns import cat_parts, find_linear_sites, is_cat
from .state import AutocastState, GraphState

__all__ = ["SUPPORTED_DTYPES", "analyze_site", "is_adapter_site", "plan_regions"]

#: Why an operand's dtype is unusable (``None``: it is fine).
_DtypeCheck = Callable[[torch.Tensor], "str | None"]


# ---------------------------------------------------------------------------
# Validating one site
# ---------------------------------------------------------------------------


def _split_ref(node: fx.Node, sizes: Sequence[int]) -> list[PartRef]:
    """``node`` as consecutive row blocks of ``sizes`` (itself whole when there is one)."""
    if len(sizes) == 1:
        return [PartRef(node)]
    refs: list[PartRef] = []
    offset = 0
    for size in sizes:
        refs.append(PartRef(node, offset, size))
        offset += size
    return refs


def _dtype_check(expected: torch.dtype | None) -> _DtypeCheck:
    """The operand dtype rule: equal to ``expected``, or (``None``: under autocast) one autocast casts."""

    def problem(value: torch.Tensor) -> str | None:
        if expected is None:
            if value.dtype not in AUTOCAST_CAST_DTYPES:
                return (f"has dtype {value.dtype} under autocast, expected one of "
                        f"{slash_list(AUTOCAST_CAST_DTYPES)} (autocast does not cast it)")
            return None
        if value.dtype != expected:
            return f"has dtype {value.dtype}, expected {expected} (the input's)"
        return None

    return problem


def _part_size(part: fx.Node, where: str, x: torch.Tensor, k: int | None, dtype_problem: _DtypeCheck) -> int | str:
    """The rows of a weight part (``k`` given: ``[N, k]``) or the length of a bias part
    (``k`` is ``None``: ``[N]``), or why the part is unusable (a ``str``). A DTensor part
    counts its local shard."""
    value = dtensor.local_tensor(part)
    if value is None:
        return f"{where} has no tensor example value"
    rank, expected = (1, "[N]") if k is None else (2, f"[N, {k}]")
    if value.dim() != rank:
        return f"{where} is {value.dim()}-D with shape {tuple(value.shape)}, expected {expected}"
    if (problem := dtype_problem(value)) is not None:
        return f"{where} {problem}"
    if value.device != x.device:
        return f"{where} is on {value.device}, expected {x.device} (the input's)"
    rows, cols = static_int(value.shape[0]), static_int(value.shape[-1])
    if rows is None or cols is None:
        return f"{where} has a symbolic shape {tuple(value.shape)}"
    if k is not None and cols != k:
        return f"{where} has {cols} columns, expected K = {k} (the input's last dimension)"
    return rows


def _input_value(site: LinearSite) -> tuple[torch.Tensor, int] | str:
    """The input's example value (a DTensor's local shard) and its static ``K``, or why the input is unusable."""
    x = dtensor.local_tensor(site.input)
    if x is None:
        return f"input {site.input.name!r} has no tensor example value"
    if x.dim() < 2:
        return f"input {site.input.name!r} is {x.dim()}-D, expected at least 2-D [..., K]"
    if x.dtype not in SUPPORTED_DTYPES:
        return f"input {site.input.name!r} has dtype {x.dtype}, expected one of {slash_list(SUPPORTED_DTYPES)}"
    k = static_int(x.shape[-1])
    if k is None:
        return f"input {site.input.name!r} has a symbolic last dimension {x.shape[-1]}"
    return x, k


def _dtype_rule(site: LinearSite, x: torch.Tensor, autocast_dtype: torch.dtype | None) -> _DtypeCheck | str:
    """The dtype rule of ``site``'s parts (from its input and output), or why the site's dtypes are unusable."""
    out = dtensor.local_tensor(site.out)
    if autocast_dtype is not None and x.device.type in ("cpu", "cuda"):
        if out is None or out.dtype != autocast_dtype:
            return (f"output dtype {None if out is None else out.dtype} is not the autocast dtype "
                    f"{autocast_dtype}")
        rule = _dtype_check(None)  # operands may mix dtypes: autocast casts each one
        if (problem := rule(x)) is not None:
            return f"input {site.input.name!r} {problem}"
        return rule
    if out is not None and out.dtype != x.dtype:
        return f"output dtype {out.dtype} differs from input dtype {x.dtype}"
    return _dtype_check(x.dtype)


def _cat_operands(site: LinearSite) -> tuple[list[fx.Node] | None, list[fx.Node] | None] | str:
    """The parts of the weight's and the bias's ``torch.cat`` (``None``: not a cat), or why a cat is unusable."""
    w_parts, w_reason = cat_parts(site.weight)
    if w_reason:
        return f"weight {site.weight.name!r}: {w_reason}"
    b_parts: list[fx.Node] | None = None
    if site.bias is not None:
        b_parts, b_reason = cat_parts(site.bias)
        if b_reason:
            return f"bias {site.bias.name!r}: {b_reason}"
    return w_parts, b_parts


def _part_sizes(parts: Sequence[fx.Node], what: str, x: torch.Tensor, k: int | None,
                dtype_problem: _DtypeCheck) -> list[int] | str:
    """The sizes of ``what``'s parts (see :func:`_part_size`), or why the first bad one is unusable."""
    sizes: list[int] = []
    for i, part in enumerate(parts):
        size = _part_size(part, f"{what} part #{i} {part.name!r}", x, k, dtype_problem)
        if isinstance(size, str):
            return size
        sizes.append(size)
    return sizes


def _assign_partition(site: LinearSite, w_parts: list[fx.Node] | None, b_parts: list[fx.Node] | None,
                      sizes: list[int], bias_sizes: list[int] | None) -> None:
    """Set ``site.weight_parts`` and ``site.bias_parts`` to one row partition.

    A side that is one tensor (or a bias cat with another partition) is
    narrowed to match the other side's parts."""
    if w_parts is not None or bias_sizes is None or b_parts is None:
        site.weight_parts = [PartRef(n) for n in (w_parts if w_parts is not None else [site.weight])]
        if site.bias is None:
            site.bias_parts = None
        elif b_parts is not None and bias_sizes == sizes:
            site.bias_parts = [PartRef(n) for n in b_parts]
        else:
            site.bias_parts = _split_ref(site.bias, sizes)
    else:  # weight is one tensor, bias a cat: partition by the bias
        site.weight_parts = _split_ref(site.weight, bias_sizes)
        site.bias_parts = [PartRef(n) for n in b_parts]


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

    On success ``site.weight_parts``, ``site.bias_parts``, ``site.out_features``,
    ``site.from_cat`` and ``site.bypassed`` are set; weight and bias parts
    describe one row partition (a side that is one tensor is narrowed to match
    the other side's ``torch.cat``).
    """
    checked = _input_value(site)
    if isinstance(checked, str):
        return checked
    x, k = checked
    dtype_problem = _dtype_rule(site, x, autocast_dtype)
    if isinstance(dtype_problem, str):
        return dtype_problem
    cats = _cat_operands(site)
    if isinstance(cats, str):
        return cats
    w_parts, b_parts = cats
    site.from_cat = w_parts is not None or b_parts is not None
    site.bypassed = [n for n in (site.weight, site.bias) if n is not None and cat_parts(n)[0] is not None]

    sizes = _part_sizes(w_parts if w_parts is not None else [site.weight], "weight", x, k, dtype_problem)
    if isinstance(sizes, str):
        return sizes
    bias_sizes: list[int] | None = None
    if site.bias is not None:
        bias_sizes = _part_sizes(b_parts if b_parts is not None else [site.bias], "bias", x, None, dtype_problem)
        if isinstance(bias_sizes, str):
            return bias_sizes
        if sum(bias_sizes) != sum(sizes):
            return f"bias has {sum(bias_sizes)} elements, expected {sum(sizes)} (the weight's rows)"
    _assign_partition(site, w_parts, b_parts, sizes, bias_sizes)
    site.out_features = sum(sizes)
    if dtensor.is_dtensor_site(site):
        return dtensor.check_site(site)
    return None


# ---------------------------------------------------------------------------
# Planning regions
# ---------------------------------------------------------------------------


def _operands(site: LinearSite) -> list[fx.Node]:
    """The nodes the op call of ``site`` reads."""
    refs = [*site.weight_parts, *(site.bias_parts or [])]
    return [site.input, *(r.node for r in refs)]


def _moved_nodes(site: LinearSite) -> list[fx.Node]:
    """The nodes whose computation the rewrite moves to the op call."""
    return [site.out, *site.intermediates, *site.bypassed]


def _check_candidate(site: LinearSite, state: GraphState) -> str | None:
    """Check one candidate (its operands, then barriers); on success record its autocast state and grad mode."""
    x = node_tensor(site.input)
    autocast = state.autocast_at(site.out, x.device.type) if x is not None else None
    reason = analyze_site(site, autocast)
    if reason is None and (barrier := state.barrier(_moved_nodes(site), site.out)) is not None:
        reason = f"{barrier.reason} lies between the concatenation and the linear"
    if reason is None:
        site.autocast = None if autocast is None or x is None else (x.device.type, autocast)
        site.grad_mode = state.grad_mode_at(site.out)
    return reason


#: PEFT adapter modules (``lora_A``/``lora_B`` and the embedding forms) in a parameter's
#: Dynamo source (``..._modules['lora_A']._modules['default']._parameters['weight']``) or, without
#: one, in its placeholder's name (``..._modules_lora_a_modules_default_parameters_weight_``).
_ADAPTER_NAME = re.compile(r"(?:^|[^a-z0-9])lora_(?:a|b|embedding_a|embedding_b)(?:[^a-z0-9]|$)")


def _parameter_name(node: fx.Node) -> str:
    """Where ``node``'s value comes from: its Dynamo source name (a placeholder), its target
    (``get_attr``), else its name; through up to three casts or conversions of one tensor."""
    for _ in range(4):
        if node.op == "placeholder":
            source = getattr(node.meta.get("grapharg"), "source", None)
            name = getattr(source, "name", None)
            name = name() if callable(name) else name
            return name if isinstance(name, str) else node.name
        if node.op == "get_attr":
            return str(node.target)
        if node.op not in ("call_function", "call_method") or not node.args or not isinstance(node.args[0], fx.Node):
            break
        node = node.args[0]
    return node.name


def is_adapter_site(site: LinearSite) -> bool:
    """Whether ``site``'s weight belongs to a PEFT LoRA adapter (``lora_A``, ``lora_B``).

    PEFT's ``lora_A`` reads the base layer's input, so it would join the base q/k/v (or
    gate/up) siblings; the adapters are left out of horizontal regions instead, which keeps
    the base parts one region, adjacent when packed (:func:`splitlinear.pack_parameters`)."""
    return bool(_ADAPTER_NAME.search(_parameter_name(site.weight).lower()))


def _valid_candidates(sites: list[LinearSite], by_input: dict[fx.Node, list[LinearSite]], state: GraphState,
                      horizontal_fusion: bool, lone_sites: bool = False) -> tuple[list[LinearSite], list[Rejection]]:
    """The candidates (a ``torch.cat`` operand, or siblings; with ``lone_sites`` every linear) that pass
    the checks, and the rejected ones (a lone linear that fails is not a rejection: nothing asked for it).
    ``by_input`` holds the sites that may fuse with siblings (not adapters: :func:`is_adapter_site`)."""
    valid: list[LinearSite] = []
    rejections: list[Rejection] = []
    for site in sites:
        has_cat = is_cat(site.weight) or is_cat(site.bias)
        siblings = by_input.get(site.input, [])
        has_siblings = horizontal_fusion and site in siblings and len(siblings) > 1
        if not (has_cat or has_siblings or lone_sites):
            continue  # a plain linear: not a candidate
        if (reason := _check_candidate(site, state)) is not None:
            if has_cat or has_siblings:
                rejections.append(Rejection(site.out, reason))
        else:
            valid.append(site)
    return valid, rejections


def _sibling_group(members: list[LinearSite], state: GraphState,
                   leftover_reason: dict[fx.Node, str]) -> list[LinearSite]:
    """The sorted ``members`` fusable into the first one's call (why not, per other one: ``leftover_reason``)."""
    order = state.order
    anchor = members[0].out
    accepted = [members[0]]
    for site in members[1:]:
        late = [n for n in _operands(site) if order[n] >= order[anchor]]
        if late:
            leftover_reason[site.out] = (
                f"operand {late[0].name!r} is defined after sibling {anchor.name!r}; "
                "fusing would need reordering")
        elif (barrier := state.barrier(_moved_nodes(site), anchor)) is not None:
            leftover_reason[site.out] = f"{barrier.reason} lies between it and sibling {anchor.name!r}"
        else:
            accepted.append(site)
    return accepted


#: Why a sibling whose output carries no gradient is not fused with siblings whose outputs do.
_NO_GRADIENT = ("its output carries no gradient (only detached, used under no_grad or by ops without one): "
                "in one call with siblings that get gradients its weight would get a zero gradient, "
                "where eager PyTorch leaves it None")
#: Why a sibling is left alone when its only equals were skipped for :data:`_NO_GRADIENT`.
_ALONE = "its only sibling(s) with the same bias presence carry no gradient and are left unfused"


def _without_gradient(sites: list[LinearSite], state: GraphState) -> set[fx.Node]:
    """The outputs of ``sites`` that run under grad mode yet carry no gradient, when a sibling's
    output does carry one (if none does, the call gets no gradient at all, as eager's linears)."""
    dead = {s.out for s in sites if s.grad_mode and not state.carries_gradient(s.out)}
    return dead if len(dead) < len(sites) else set()


def _horizontal_regions(valid: list[LinearSite], inputs: Sequence[fx.Node], state: GraphState,
                        adapters: set[fx.Node]) -> tuple[list[Region], dict[fx.Node, str], dict[fx.Node, str]]:
    """Regions of two or more valid siblings (split by bias presence; ``adapters``' sites never join),
    why each left-out sibling is, and the siblings left out by policy (:data:`_NO_GRADIENT`): skipped,
    not rejected."""
    regions: list[Region] = []
    leftover_reason: dict[fx.Node, str] = {}
    skips: dict[fx.Node, str] = {}
    for inp in inputs:
        ok = [s for s in valid if s.input is inp and s.out not in adapters]
        dead = _without_gradient(ok, state)
        skips.update(dict.fromkeys(dead, _NO_GRADIENT))
        dead_bias = {s.bias is not None for s in ok if s.out in dead}
        ok = [s for s in ok if s.out not in dead]
        for with_bias in (False, True):
            members = sorted((s for s in ok if (s.bias is not None) == with_bias), key=lambda s: state.order[s.out])
            if len(members) < 2:
                if members and with_bias in dead_bias:
                    skips[members[0].out] = _ALONE  # fusable but for the skip: not a rejection either
                elif members and len(ok) > len(members):
                    leftover_reason[members[0].out] = (
                        f"sibling linears on input {inp.name!r} mix bias and no bias; "
                        "fused only among equals and no equal is left")
                continue
            accepted = _sibling_group(members, state, leftover_reason)
            if len(accepted) >= 2:
                regions.append(Region(accepted))
    return regions, leftover_reason, skips


def _unfused_sites(valid: list[LinearSite], fused: set[fx.Node], leftover_reason: dict[fx.Node, str],
                   skips: dict[fx.Node, str], lone_sites: bool = False,
                   ) -> tuple[list[Region], list[Rejection], list[str]]:
    """Valid sites no horizontal region took: a region each if from a cat (or ``lone_sites``), else a
    skip note when ``skips`` names the site, else a rejection."""
    regions: list[Region] = []
    rejections: list[Rejection] = []
    skipped: list[str] = []
    for site in valid:
        if site.out in fused:
            continue
        if site.from_cat or lone_sites:
            regions.append(Region([site]))
        elif site.out in skips:
            skipped.append(f"{site.describe()}: {skips[site.out]}")
        else:
            rejections.append(Rejection(site.out, leftover_reason.get(site.out, "no sibling left to fuse with")))
    return regions, rejections, skipped


def _apply_min_parts(regions: list[Region], min_parts: int,
                     order: dict[fx.Node, int]) -> tuple[list[Region], list[str]]:
    """The regions with at least ``min_parts`` parts, in graph order, and a skip note for each other one."""
    kept = [r for r in regions if len(r.weight_parts) >= min_parts]
    skipped = [f"{r.describe()}: fewer than min_parts={min_parts} parts"
               for r in regions if len(r.weight_parts) < min_parts]
    kept.sort(key=lambda r: min(order[s.out] for s in r.sites))
    return kept, skipped


def plan_regions(graph: fx.Graph, *, horizontal_fusion: bool = True, min_parts: int = 2,
                 entry_grad_mode: bool | None = None, entry_autocast: AutocastState | None = None,
                 lone_sites: bool = False) -> Plan:
    """Decide which sites become op calls.

    Vertical candidates are sites whose weight or bias is a ``torch.cat``;
    horizontal candidates are sites sharing an input node with at least one
    other site.  Horizontal groups are split by bias presence.  A site is
    rejected, and a sibling is left unfused, when the rewrite would move a
    read across a barrier (:mod:`splitlinear.fx.state`: a grad-mode or
    autocast change, an in-place/mutating node, another side effect); a
    sibling's operands must also be defined before the first sibling. A
    sibling whose output carries no gradient while another's does is left
    unfused (a policy skip): its weight's gradient stays ``None``, as eager's.
    PEFT LoRA adapters (``lora_A``, ``lora_B``: :func:`is_adapter_site`) are
    no siblings: ``lora_A`` reads the base layer's input, and joining the base
    parts would leave packed q/k/v without their zero-copy view.

    Args:
        graph: a Dynamo (torch-level) FX graph whose nodes carry
            ``example_value`` or ``val`` metadata.
        horizontal_fusion: also fuse sibling linears.
        min_parts: regions with fewer weight parts are skipped (not rejected).
        entry_grad_mode: grad mode on entry to ``graph`` (default: the
            calling thread's, which is Dynamo's for a top-level graph).
        entry_autocast: autocast state on entry (default: the calling thread's).
        lone_sites: also plan every other valid linear as a one-site region
            (backend option ``fp8``: a lone linear runs in FP8 as one part).

    Returns:
        The regions in graph order, the rejections and the policy skips; the
        graph is not modified.
    """
    state = GraphState(graph, torch.is_grad_enabled() if entry_grad_mode is None else entry_grad_mode,
                       entry_autocast)
    sites = find_linear_sites(graph)
    dtensor.canonicalize_inputs(sites)  # siblings' equal DTensor inputs become one node
    adapters = {s.out for s in sites if is_adapter_site(s)}
    by_input: dict[fx.Node, list[LinearSite]] = {}
    for site in sites:
        if site.out not in adapters:
            by_input.setdefault(site.input, []).append(site)

    valid, rejections = _valid_candidates(sites, by_input, state, horizontal_fusion, lone_sites)
    regions: list[Region] = []
    leftover_reason: dict[fx.Node, str] = {}
    skips: dict[fx.Node, str] = {}
    if horizontal_fusion:
        regions, leftover_reason, skips = _horizontal_regions(valid, list(by_input), state, adapters)
    fused = {s.out for r in regions for s in r.sites}
    vertical, unfused, no_gradient = _unfused_sites(valid, fused, leftover_reason, skips, lone_sites)
    kept, skipped = _apply_min_parts(regions + vertical, min_parts, state.order)
    return Plan(kept, rejections + unfused, no_gradient + skipped)
