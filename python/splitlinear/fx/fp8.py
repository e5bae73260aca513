"""FP8 regions: which planned regions run through ``fp8_linear`` (backend option ``fp8``).

With ``fp8`` set the planner also offers lone linears (one part each), and
:func:`assign_fp8` splits every planned region into the sites that run in FP8
(one ``fp8_linear`` call per region, so siblings share one activation cast
and one GEMM) and those that stay in their precision. A site runs in FP8
when the filter (option ``fp8_filter``, by the FQN of the module calling
the linear) lets it and the op can take it: K and every part's rows
multiples of 16 (128 for the block-scaled recipes), operands
float32/float16/bfloat16. Those the op refuses (PEFT adapters aside) are named
in one warning per compiled frame. The others keep what the backend does without
``fp8``: a region of at least ``min_parts`` parts through
``splitlinear.ops.linear``, else the fallback.

The graph calls :func:`fp8_linear_tensorwise` (or the rowwise ones, and
their ``_cached`` forms for option ``fp8_weight_cache``), module functions
with the recipe fixed, so the rewritten graph names its recipe.

The weight cache (``fp8_linear(cache_weights=True)``) is checked inside the
op at run time, so a compiled graph neither bakes a cached value in nor
guards on it. Its FP8 tensors are shared with the cache; Inductor may reuse
a dead buffer for a later one of the same dtype and size, which only an
Inductor-generated FP8 buffer could be, so a graph with FP8 values of its own
(:func:`module_has_fp8_values`) runs without the cache under Inductor.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Sequence

import torch
import torch.fx as fx
from torch import Tensor

from .._dtypes import FP8_BLOCK, FP8_BLOCKWISE_RECIPES, FP8_HIGH_PRECISION_DTYPES, Fp8Recipe
from .._logging import user_stacklevel
from ..options import FP8_FILTER_OPTION, SplitLinearOptions, fp8_filter_allows
from .model import LinearFn, LinearSite, Region, node_tensor
from .plan import is_adapter_site

__all__ = ["Fp8Assignment", "assign_fp8", "fp8_linear_fn", "site_fqn"]

#: The FP8 GEMM's granule: K and every part's rows must be multiples of it.
FP8_GRANULE = 16


def _fp8_linear(recipe: str, input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None,
                cache: bool = False) -> Tensor:
    return torch.ops.splitlinear.fp8_linear.default(input, list(weight), None if bias is None else list(bias),
                                                    recipe, cache)


def fp8_linear_tensorwise(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None) -> Tensor:
    """``splitlinear.ops.fp8_linear(input, weight, bias, recipe="tensorwise")`` (what the graph calls)."""
    return _fp8_linear("tensorwise", input, weight, bias)


def fp8_linear_rowwise(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None) -> Tensor:
    """``splitlinear.ops.fp8_linear(input, weight, bias, recipe="rowwise")`` (what the graph calls)."""
    return _fp8_linear("rowwise", input, weight, bias)


def fp8_linear_rowwise_with_gw_hp(input: Tensor, weight: Sequence[Tensor],
                                  bias: Sequence[Tensor] | None) -> Tensor:
    """``splitlinear.ops.fp8_linear(input, weight, bias, recipe="rowwise_with_gw_hp")`` (what the graph calls)."""
    return _fp8_linear("rowwise_with_gw_hp", input, weight, bias)


def fp8_linear_blockwise(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None) -> Tensor:
    """``splitlinear.ops.fp8_linear(input, weight, bias, recipe="blockwise")`` (what the graph calls)."""
    return _fp8_linear("blockwise", input, weight, bias)


def fp8_linear_blockwise_fp32_scales(input: Tensor, weight: Sequence[Tensor],
                                     bias: Sequence[Tensor] | None) -> Tensor:
    """``splitlinear.ops.fp8_linear(input, weight, bias, recipe="blockwise_fp32_scales")`` (what the graph calls)."""
    return _fp8_linear("blockwise_fp32_scales", input, weight, bias)


def fp8_linear_tensorwise_cached(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None) -> Tensor:
    """:func:`fp8_linear_tensorwise` with ``cache_weights=True``."""
    return _fp8_linear("tensorwise", input, weight, bias, True)


def fp8_linear_rowwise_cached(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None) -> Tensor:
    """:func:`fp8_linear_rowwise` with ``cache_weights=True``."""
    return _fp8_linear("rowwise", input, weight, bias, True)


def fp8_linear_rowwise_with_gw_hp_cached(input: Tensor, weight: Sequence[Tensor],
                                         bias: Sequence[Tensor] | None) -> Tensor:
    """:func:`fp8_linear_rowwise_with_gw_hp` with ``cache_weights=True``."""
    return _fp8_linear("rowwise_with_gw_hp", input, weight, bias, True)


#: The graph functions, by (recipe, cache_weights).
GRAPH_FNS: dict[tuple[str, bool], LinearFn] = {
    ("tensorwise", False): fp8_linear_tensorwise,
    ("rowwise", False): fp8_linear_rowwise,
    ("rowwise_with_gw_hp", False): fp8_linear_rowwise_with_gw_hp,
    ("blockwise", False): fp8_linear_blockwise,
    ("blockwise_fp32_scales", False): fp8_linear_blockwise_fp32_scales,
    ("tensorwise", True): fp8_linear_tensorwise_cached,
    ("rowwise", True): fp8_linear_rowwise_cached,
    ("rowwise_with_gw_hp", True): fp8_linear_rowwise_with_gw_hp_cached,
}


def fp8_linear_fn(recipe: Fp8Recipe, cache_weights: bool = False) -> LinearFn:
    """The graph function of ``recipe`` (loads the op library).

    Raises:
        RuntimeError: the op library cannot be loaded.
    """
    from .. import ops  # noqa: F401  (registers torch.ops.splitlinear.fp8_linear and its fake kernel)

    return GRAPH_FNS[(recipe, cache_weights)]


def module_has_fp8_values(gm: fx.GraphModule) -> bool:
    """Whether a node of ``gm``'s graph or of a subgraph's has an FP8 tensor value (before the
    rewrite: FP8 of the model's own; then the weight cache is not used under Inductor)."""
    fp8 = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)
    return any((t := node_tensor(n)) is not None and t.dtype in fp8
               for m in gm.modules() if isinstance(m, fx.GraphModule) for n in m.graph.nodes)


_ROOT = re.compile(r"^L\[['\"][^'\"]*['\"]\]\.?")
_KEY = re.compile(r"\._modules\[['\"]([^'\"]*)['\"]\]|\[['\"]([^'\"]*)['\"]\]|\[(\d+)\]")


def site_fqn(site: LinearSite) -> str:
    """The FQN (relative to the compiled module) of the module that calls ``site``'s linear.

    Read from Dynamo's ``nn_module_stack`` (``"L['self'].layers.0.q_proj"`` ->
    ``"layers.0.q_proj"``); ``""`` when the graph has none (a function, not a module).
    """
    stack = site.out.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = str(list(stack.values())[-1][0])
    path = _ROOT.sub("", path)
    return _KEY.sub(lambda m: "." + next(g for g in m.groups() if g is not None), path).lstrip(".")


def _filter_allows(options: SplitLinearOptions, fqn: str) -> bool:
    return fp8_filter_allows(options.fp8_filter, fqn, FP8_FILTER_OPTION)


@dataclasses.dataclass(frozen=True)
class Fp8Problem:
    """Why ``fp8_linear`` cannot take a site."""

    reason: str  #: for the log, e.g. "K = 100 is not a multiple of 16"
    granule: bool = False  #: K or a part's rows is not a multiple of the recipe's granule


def _fp8_problem(site: LinearSite, recipe: str) -> Fp8Problem | None:
    """Why ``fp8_linear`` cannot take ``site`` under ``recipe`` (``None``: it can).

    Raises:
        ValueError: naming option ``fp8`` and the device, on a CUDA GPU below sm_89, or one other
            than sm_90 under a block-scaled recipe (cuBLASLt's 128-element block scales are sm_90's).
    """
    x = node_tensor(site.input)
    if x is None:
        return Fp8Problem("no example value")
    granule = FP8_BLOCK if recipe in FP8_BLOCKWISE_RECIPES else FP8_GRANULE
    k = x.shape[-1]
    if k % granule:
        return Fp8Problem(f"K = {k} is not a multiple of {granule}", granule=True)
    dtypes = [x.dtype] if site.autocast is None else [site.autocast[1]]
    for ref in site.weight_parts:
        w = node_tensor(ref.node)
        rows = ref.length if ref.start is not None else (None if w is None else w.shape[0])
        if w is None or rows is None:
            return Fp8Problem("a weight part has no example value")
        if rows % granule:
            return Fp8Problem(f"a weight part has {rows} rows, not a multiple of {granule}", granule=True)
        dtypes.append(w.dtype)
    bad = [d for d in dtypes if d not in FP8_HIGH_PRECISION_DTYPES]
    if bad:
        return Fp8Problem(f"dtype {bad[0]} (FP8 is quantized from float32/float16/bfloat16)")
    if x.device.type == "cuda" and torch.cuda.is_available():
        cap = torch.cuda.get_device_capability(x.device)
        if cap < (8, 9):
            raise ValueError(f"splitlinear: option 'fp8' needs a GPU of compute capability 8.9 or newer "
                             f"(FP8 tensor cores); {x.device} ({torch.cuda.get_device_name(x.device)}) has "
                             f"{cap[0]}.{cap[1]}")
        if recipe in FP8_BLOCKWISE_RECIPES and cap[0] != 9:
            raise ValueError(f"splitlinear: option fp8={recipe!r} needs an sm_90 GPU (cuBLASLt's 128-element "
                             f"block scales run on Hopper only; Blackwell's block-scaled FP8 is MXFP8); "
                             f"{x.device} ({torch.cuda.get_device_name(x.device)}) has {cap[0]}.{cap[1]}")
    elif x.device.type not in ("cpu", "cuda"):
        return Fp8Problem(f"device {x.device} (FP8 runs on the CPU and CUDA)")
    return None


@dataclasses.dataclass
class Fp8Assignment:
    """What :func:`assign_fp8` decided."""

    fp8: list[Region]  #: regions that become one ``fp8_linear`` call each
    plain: list[Region]  #: regions that become ``splitlinear.ops.linear`` calls
    skipped: list[str]  #: why each other site stays as it is (logged)


def assign_fp8(regions: Sequence[Region], options: SplitLinearOptions, order: dict[fx.Node, int]) -> Fp8Assignment:
    """Split the planned ``regions`` (planned with lone sites and ``min_parts=1``) into FP8 and plain ones.

    Sites the filter or the op refuses leave their region; those left over form a plain region
    when they have at least ``options.min_parts`` parts and either are siblings or read a
    ``torch.cat`` (what the backend replaces without ``fp8``).

    Raises:
        ValueError: naming option ``fp8``, when a site runs on a CUDA GPU without FP8 support.
    """
    fp8: list[Region] = []
    plain: list[Region] = []
    skipped: list[str] = []
    refused: list[str] = []
    recipe = str(options.fp8)
    for region in regions:
        yes: list[LinearSite] = []
        no: list[LinearSite] = []
        for site in region.sites:
            fqn = site_fqn(site)
            if not _filter_allows(options, fqn):
                skipped.append(f"{site.describe()} ({fqn or 'no module'}): fp8_filter skips it")
                no.append(site)
            elif (problem := _fp8_problem(site, recipe)) is not None:
                skipped.append(f"{site.describe()} ({fqn or 'no module'}): not FP8: {problem.reason}")
                # PEFT adapters (rank 8-64, below a block) stay in their precision unnamed: every
                # LoRA model would otherwise warn about each of them.
                if not is_adapter_site(site):
                    refused.append(f"{fqn or site.describe()} ({problem.reason})")
                no.append(site)
            else:
                yes.append(site)
        if yes:
            fp8.append(Region(yes))
        if no and (len(no) > 1 or no[0].from_cat):
            rest = Region(no)
            if len(rest.weight_parts) >= options.min_parts:
                plain.append(rest)
    plain.sort(key=lambda r: min(order[s.out] for s in r.sites))
    if refused:
        # Silently slower is a bug: name what stays in its precision, once per compiled frame.
        granule = (f"{FP8_BLOCK} (no 128x128 block may cross a part)" if recipe in FP8_BLOCKWISE_RECIPES
                   else str(FP8_GRANULE))
        _warn_once_per_frame(f"splitlinear: fp8={recipe!r} needs float32/float16/bfloat16 operands, K and every "
                             f"weight part's rows multiples of {granule}; these linears stay in their precision: "
                             f"{'; '.join(refused)}. Exclude them with option fp8_filter to silence this.")
    return Fp8Assignment(fp8, plain, skipped)


#: (Dynamo frame id, message) of the warnings given: a recompile of the frame (another shape, a
#: dynamic dim) names the same linears again otherwise. Cleared by ``torch._dynamo.reset()``,
#: which numbers frames from 0 again (see :func:`forget_warnings`).
_warned: set[tuple[int, str]] = set()


def _warn_once_per_frame(message: str) -> None:
    """``warnings.warn(message)`` unless the frame Dynamo compiles now was warned so already;
    outside a Dynamo compile (a graph rewritten directly), always."""
    compile_id = torch._guards.CompileContext.current_compile_id()
    if compile_id is not None:
        key = (compile_id.frame_id, message)
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, stacklevel=user_stacklevel())


def forget_warnings() -> None:
    """Forgets the warnings given (``torch._dynamo.reset()`` renumbers the frames)."""
    _warned.clear()
