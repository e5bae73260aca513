"""Parameter packing: make each group of sibling projections adjacent.

``pack_parameters`` re-homes the weights (and, separately, the biases) of each
group into one flat buffer, so the Parameters become back-to-back views of it
and ``splitlinear.ops.linear`` takes the zero-copy path. Parameter objects,
names, state-dict keys and values, ``requires_grad`` and optimizer references
stay as they were: only each Parameter's storage changes (``p.data = view``).

Behaviour to know:
  * A default group whose members differ in dtype, device, column count or bias
    presence is packed as the backend fuses it: the members alike, together
    (Whisper's q/v with biases, not its k without; a cross-attention's k/v, not
    its q of another K); a group named in ``groups=`` that differs so is
    skipped whole. A group that shares a Parameter with a group packed before
    it, whose weight or bias is parametrized or not a Parameter
    of its module (``weight_norm``, ``register_parametrization``: computed on
    every call, nothing to move), that is on the meta device (pack after
    ``to_empty()`` or loading), or that shares storage with a tensor outside
    the group (a view of another module's weight), is skipped (reported in
    ``PackReport.skipped`` with the reason, logged).
  * With the default groups, a model without Llama/Qwen2/Mistral-style
    sibling names packs nothing and warns so; pass ``groups=``. A model whose
    projections are already one Linear each (Phi-3's ``qkv_proj`` and
    ``gate_up_proj``, GPT-NeoX's ``query_key_value``: see
    :data:`FUSED_PROJECTIONS`) has nothing to pack and runs one GEMM per
    projection already: no warning, an info log, and the report lists them in
    ``PackReport.already_fused``.
  * Tensor parallelism (``parallelize_module``): DTensor Parameters keep their
    objects, placements and global shapes; each rank packs its local shards
    adjacent (``[q_r | k_r | v_r]`` on rank r), which is what the compiled
    local GEMM reads (:mod:`splitlinear.fx.dtensor`). A group whose members
    are on different meshes or placements, or that mixes DTensors and plain
    tensors, is skipped; so are DTensors under ``fully_shard`` (FSDP2 owns
    their storage: pack before ``fully_shard``).
  * FSDP2: ``pack_parameters`` before ``fully_shard`` records the packed groups on
    the module and lays them out for FSDP2 on its first forward as a
    ``fully_shard`` module (:func:`pack_on_first_forward`); a group that cannot be
    is named in a warning (:func:`warn_not_adjacent`, ``SPLITLINEAR_PACK_WARNINGS=0``
    silences it).
  * The default groups are the backend's regions (linears reading one input): in a
    parallel block (Phi-1/2, Cohere) q/k/v and the MLP's input projections are one
    group (:func:`find_sibling_groups`).
  * Works under ``torch.no_grad()`` and ``torch.inference_mode()``: the new
    buffers are normal tensors, so the model can still be trained.
  * Tied weights (one Parameter registered in several modules) stay tied: the
    Parameter object is kept, only its storage moves.
  * Saving and loading: ``state_dict()`` presents each packed weight and bias as
    a tensor of its own (an alias of the Parameter's memory whose storage is
    exactly its elements, made through DLPack: no copy), so every checkpoint
    writer sees what it would see for the unpacked model —
    ``safetensors.torch.save_model``/``load_model``, ``save_file(state_dict)``,
    ``torch.save(state_dict)`` (one entry per name, not the shared buffer under
    each) and transformers ``save_pretrained`` — with the same names and values.
  * ``load_state_dict`` afterwards copies into the packed storage in place, so
    the parts stay adjacent. ``load_state_dict(..., assign=True)``, ``.to()``,
    ``.cuda()``, ``.half()`` and the like give each Parameter a storage of its
    own again: results stay correct (the op checks adjacency on every call and
    falls back to a copy), but call ``pack_parameters`` again afterwards to get
    the zero-copy path back.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

from ._dtensor import is_dtensor as _is_dtensor
from ._dtensor import local_shard as _local
from ._logging import logger
from ._siblings import (  # noqa: F401  (public here: splitlinear.packing.find_sibling_groups, ...)
    DEFAULT_SIBLINGS,
    FUSED_PROJECTIONS,
    MLP_INPUT_PROJECTIONS,
    PACK_WARNINGS_ENV,
    PACKED_TAG,
    PackReport,
    check_module,
    checked_groups,
    find_fused_projections,
    find_sibling_groups,
    group_linears,
    tag_packed,
    warn_not_adjacent,
)

#: Attribute of a module given to :func:`pack_parameters`: the groups it packed, laid out again
#: for FSDP2 on the first forward if the module is sharded by then (:func:`pack_on_first_forward`).
PACKED_GROUPS_ATTR = "_splitlinear_packed_groups"
#: Attribute marking a module whose :func:`pack_on_first_forward` hook is installed.
_FSDP_HOOK_MARK = "_splitlinear_fsdp_hook"
#: ``torch.distributed.fsdp.FSDPModule`` once :func:`pack_parameters` looked it up (None: no distributed).
_fsdp_module_type: type | None = None


def _fsdp_module() -> type | None:
    global _fsdp_module_type
    if _fsdp_module_type is None and torch.distributed.is_available():
        from torch.distributed.fsdp import FSDPModule

        _fsdp_module_type = FSDPModule
    return _fsdp_module_type


@torch._dynamo.disable
def _lay_out_for_fsdp(module: nn.Module) -> None:
    from .distributed.fsdp import pack_recorded_groups

    groups = getattr(module, PACKED_GROUPS_ATTR)
    setattr(module, PACKED_GROUPS_ATTR, None)
    pack_recorded_groups(module, groups)


def pack_on_first_forward(module: nn.Module, args: Any) -> None:
    """Forward pre-hook :func:`pack_parameters` installs on the module it packs.

    FSDP2 gives every parameter an unsharded buffer of its own, so the layout made by
    ``pack_parameters`` does not survive a later ``fully_shard``. When the module runs its
    first forward as a ``fully_shard`` module, this lays out the recorded groups for FSDP2
    (:func:`splitlinear.distributed.fsdp.pack_recorded_groups`, as ``pack_fsdp_parameters``
    would), eagerly even under ``torch.compile``; FSDP2's own pre-forward hook has run first
    (lazy init; only the root unit has unsharded). Otherwise it does nothing (Dynamo traces it
    to nothing: no graph break)."""
    fsdp_module = _fsdp_module_type
    if fsdp_module is not None and isinstance(module, fsdp_module) and getattr(module, PACKED_GROUPS_ATTR, None):
        _lay_out_for_fsdp(module)


def _record_groups(module: nn.Module, groups: list[list[str]]) -> None:
    """Records ``groups`` on ``module`` and installs :func:`pack_on_first_forward` (once)."""
    if not groups or _fsdp_module() is None:
        return
    recorded = getattr(module, PACKED_GROUPS_ATTR, None) or []
    setattr(module, PACKED_GROUPS_ATTR, recorded + [g for g in groups if g not in recorded])
    if not getattr(module, _FSDP_HOOK_MARK, False):
        module.register_forward_pre_hook(pack_on_first_forward)
        setattr(module, _FSDP_HOOK_MARK, True)


#: Attribute marking a module whose state-dict post hook is installed.
_HOOK_MARK = "_splitlinear_state_dict_hook"


def _whole(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a tensor whose storage is exactly its own elements, without a copy.

    A packed Parameter is a view of a shared buffer; checkpoint writers that
    insist on tensors covering their whole storage (``safetensors.torch.save_model``
    / ``load_model``) refuse such views, and ``torch.save`` would write the whole
    buffer under every name. A DLPack round trip gives an alias with a storage
    object of its own over the same memory (it keeps ``t`` alive): values and
    writes are shared with the Parameter, as for any state-dict entry. The alias
    has a version counter of its own, so the FP8 weight cache is told to watch it
    (:func:`_watch_alias`). A DTensor becomes a DTensor of the same placements
    over such an alias of its shard."""
    if _is_dtensor(t):
        local = _whole(t._local_tensor)
        if local is t._local_tensor:
            return t
        return type(t).from_local(local, t.device_mesh, t.placements, run_check=False,
                                  shape=t.shape, stride=t.stride())
    if t.device.type not in ("cpu", "cuda") or t.requires_grad or not t.is_contiguous():
        return t
    storage = t.untyped_storage()
    if t.data_ptr() == storage.data_ptr() and t.nbytes == storage.nbytes():
        return t
    try:
        alias = torch.from_dlpack(t)
    except (RuntimeError, TypeError, BufferError):  # a dtype DLPack cannot carry
        return t
    _watch_alias(alias)
    return alias


def _watch_alias(alias: torch.Tensor) -> None:
    """Lets the FP8 weight cache see writes through ``alias`` (``fp8_weight_cache_watch``).

    Writes through it bump its own version counter, not the Parameter's, so without
    this a cached FP8 copy of the Parameter would go stale. Without the op library
    there is no cache, and nothing to tell."""
    from . import _library

    if not _library.is_available():
        return
    _library.load_library()
    torch.ops.splitlinear.fp8_weight_cache_watch(alias)


def _present_parts_whole(module: nn.Module, state_dict: dict[str, Any], prefix: str,
                         local_metadata: dict[str, Any]) -> None:
    """State-dict post hook of a packed module (``nn.Linear``, FP8 serving linear): its own
    Parameters' and buffers' entries become whole-storage aliases (:func:`_whole`). Entries
    kept as Parameters (``state_dict(keep_vars=True)``) are left alone."""
    for name in [*module._parameters, *module._buffers]:
        key = prefix + name
        value = state_dict.get(key)
        if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
            state_dict[key] = _whole(value)


def install_whole_state_dict_hook(module: nn.Module) -> None:
    """Presents ``module``'s own tensors in ``state_dict()`` as whole-storage aliases (once)."""
    if not getattr(module, _HOOK_MARK, False):
        module.register_state_dict_post_hook(_present_parts_whole)
        setattr(module, _HOOK_MARK, True)


#: Attribute of a packed group's first ``nn.Linear``: the group's module names, for
#: :func:`_check_still_packed`.
_GROUP_ATTR = "_splitlinear_group"


#: Why a packed group's Parameters were replaced (the warning's reason).
_REPLACED = ("new Parameters took the packed ones' place (load_state_dict(assign=True), or a deepcopy of "
             "the model); call pack_parameters again")

#: Per thread, the ``load_state_dict`` calls now running on packed models, innermost last (``.open``):
#: each collects the groups found replaced, so that the model names them in one warning when its
#: load ends.
_loads = threading.local()


def _open_loads() -> list[tuple[int, list[list[str]]]]:
    if not hasattr(_loads, "open"):
        _loads.open = []
    return _loads.open

#: Attribute marking a packed model whose load-window hooks are installed.
_LOAD_MARK = "_splitlinear_load_window"


def _open_load(module: nn.Module, *_: Any) -> None:
    """Load-state-dict pre hook of a packed model: opens its window (before its children load)."""
    _open_loads().append((id(module), []))


def _close_load(module: nn.Module, incompatible_keys: Any) -> None:
    """Load-state-dict post hook of a packed model: closes its window and names the groups its
    linears found replaced in one warning. Windows left open by a load that raised close too."""
    windows = _open_loads()
    while windows:
        owner, replaced = windows.pop()
        if owner == id(module):
            if replaced:
                warn_not_adjacent(replaced[0], _REPLACED, owner=module, more=replaced[1:])
            return


def _watch_loads(module: nn.Module) -> None:
    """Installs :func:`_open_load` / :func:`_close_load` on packed model ``module`` (once)."""
    if not getattr(module, _LOAD_MARK, False):
        module.register_load_state_dict_pre_hook(_open_load)
        module.register_load_state_dict_post_hook(_close_load)
        setattr(module, _LOAD_MARK, True)


def _check_still_packed(module: nn.Module, incompatible_keys: Any) -> None:
    """Load-state-dict post hook of a packed group's first linear: finds the group replaced when its
    weight is a plain Parameter without the packing mark, i.e. new Parameters took the packed ones'
    place: ``load_state_dict(..., assign=True)`` (a plain load copies into them and keeps the
    layout), or a copy of the model (``copy.deepcopy``) being loaded. Within a load of the packed
    model, the group joins the model's one warning (:func:`_close_load`); a load of the linear or
    another part of the model names it alone (:func:`warn_not_adjacent`). Results stay correct, but
    its fused linear copies the parts or runs one GEMM per part. FSDP2 and TP Parameters (DTensors)
    are laid out by :mod:`splitlinear.distributed`, not here."""
    group = getattr(module, _GROUP_ATTR, None)
    weight = getattr(module, "weight", None)
    if group and type(weight) is nn.Parameter and getattr(weight, PACKED_TAG, None) is None:
        if windows := _open_loads():
            windows[-1][1].append(list(group))
        else:
            warn_not_adjacent(group, _REPLACED, owner=module)


def _watch_assign(group: list[str], first: nn.Linear) -> None:
    """Installs :func:`_check_still_packed` on ``first`` (once) for ``group``."""
    if getattr(first, _GROUP_ATTR, None) is None:
        first.register_load_state_dict_post_hook(_check_still_packed)
    setattr(first, _GROUP_ATTR, list(group))


def _rehome_dtensor(p: nn.Parameter, local: torch.Tensor) -> None:
    """Make DTensor Parameter ``p`` hold ``local`` as its shard, keeping the Python object.

    ``p._local_tensor.data = local`` would do it in eager, but Dynamo then cannot
    fake-ify the Parameter (torch 2.11: "Attempted to set the storage of a tensor
    on device cpu to a storage on different device meta"), so a new DTensor
    Parameter over ``local`` is swapped in (``torch.utils.swap_tensors``) and the
    old object's attributes are carried over."""
    new = nn.Parameter(type(p).from_local(local, p.device_mesh, p.placements, run_check=False,
                                          shape=p.shape, stride=p.stride()), requires_grad=p.requires_grad)
    extra = {k: v for k, v in p.__dict__.items() if k not in new.__dict__}
    torch.utils.swap_tensors(p, new)
    p.__dict__.update(extra)


def pack_tensors(params: Sequence[nn.Parameter]) -> None:
    """Copies ``params`` into one new flat buffer and points each at its slice.

    The buffer is a normal tensor even under ``torch.inference_mode()``
    (an inference tensor could never be trained afterwards). DTensors keep
    their wrapper (placements, global shape); their local shards move."""
    locals_ = [_local(p) for p in params]
    first = locals_[0]
    trailing = first.shape[1:]
    total = sum(t.shape[0] for t in locals_)
    with torch.inference_mode(False):
        buffer = torch.empty((total, *trailing), dtype=first.dtype, device=first.device)
    offset = 0
    with torch.inference_mode(False), torch.no_grad():
        for p, t in zip(params, locals_):
            n = t.shape[0]
            view = buffer[offset : offset + n]
            view.copy_(t)
            if t is p:
                p.data = view
            else:
                _rehome_dtensor(p, view)
            offset += n


def _check_members(names: Sequence[str], linears: Sequence[nn.Linear]) -> str | None:
    """Why a member's weight or bias cannot be moved, or None: it must be a
    Parameter registered on the module itself, not computed on every call."""
    for name, lin in zip(names, linears):
        for attr in ("weight", "bias"):
            if attr == "bias" and lin.bias is None:
                continue
            if parametrize.is_parametrized(lin, attr):
                return f"{name}.{attr} is parametrized (computed from other tensors on every call)"
            value = getattr(lin, attr)
            if not isinstance(value, nn.Parameter) or lin._parameters.get(attr) is not value:
                return (f"{name}.{attr} is not a Parameter of the module (computed by a hook, "
                        "e.g. torch.nn.utils.weight_norm)")
    return None


def _storage_key(t: torch.Tensor) -> tuple[torch.device, int] | None:
    t = _local(t)  # a DTensor has no storage of its own
    storage = t.untyped_storage()
    if storage.nbytes() == 0:
        return None
    return t.device, storage.data_ptr()


def _shared_outside(params: Sequence[torch.Tensor], owners: dict[tuple[torch.device, int], list[tuple[str, int]]]
                    ) -> str | None:
    """A tensor outside ``params`` that shares storage with one of them (its name), or None."""
    ids = {id(p) for p in params}
    for p in params:
        key = _storage_key(p)
        for name, other in owners.get(key, []) if key is not None else []:
            if other not in ids:
                return name
    return None


def _check_dtensors(linears: Sequence[nn.Linear], under_fsdp: bool) -> str | None:
    """Why a group with DTensor members cannot be packed (shard by shard), or None."""
    params = [p for lin in linears for p in (lin.weight, lin.bias) if p is not None]
    kinds = {_is_dtensor(p) for p in params}
    if kinds == {False}:
        return None
    if kinds == {True, False}:
        return "mixes DTensor and plain-tensor Parameters"
    if under_fsdp:
        return "DTensor Parameters managed by FSDP2 (fully_shard owns their storage; pack before fully_shard)"
    if any(weakref.getweakrefs(p) for p in params):
        # torch.utils.swap_tensors (see _rehome_dtensor) refuses weakly referenced tensors.
        return "a DTensor Parameter is weakly referenced (e.g. by compiled code): pack before torch.compile"
    w0 = linears[0].weight
    for lin in linears[1:]:
        w = lin.weight
        if w.device_mesh != w0.device_mesh or tuple(w.placements) != tuple(w0.placements):
            return (f"weights on different meshes or placements ({list(w0.placements)} vs "
                    f"{list(w.placements)})")
    biases = [lin.bias for lin in linears if lin.bias is not None]
    for b in biases[1:]:
        if b.device_mesh != biases[0].device_mesh or tuple(b.placements) != tuple(biases[0].placements):
            return f"biases on different meshes or placements ({list(biases[0].placements)} vs {list(b.placements)})"
    return None


def _under_fsdp(module: nn.Module) -> set[int]:
    """Ids of the submodules inside a ``fully_shard`` (FSDP2) module."""
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return set()
    inside: set[int] = set()
    for sub in module.modules():
        if isinstance(sub, FSDPModule):
            inside.update(id(m) for m in sub.modules())
    return inside


def _check_group(linears: Sequence[nn.Linear]) -> str | None:
    """Why the group cannot be packed, or None (local shards for DTensors: :func:`_check_dtensors`)."""
    w0 = linears[0].weight
    if w0.device.type == "meta":  # every meta tensor reports storage 0: it would read as shared
        return "on the meta device (no memory yet): pack after to_empty() or loading the weights"
    for lin in linears[1:]:
        w = lin.weight
        if w.dtype != w0.dtype or w.device != w0.device:
            return f"weights on different dtypes/devices ({w0.dtype}/{w0.device} vs {w.dtype}/{w.device})"
        if w.shape[1:] != w0.shape[1:] or _local(w).shape[1:] != _local(w0).shape[1:]:
            return f"weights with different column counts ({w0.shape[1]} vs {w.shape[1]})"
    has_bias = [lin.bias is not None for lin in linears]
    if any(has_bias) and not all(has_bias):
        return "biases present on some members only"
    if all(has_bias):
        b0 = linears[0].bias
        for lin in linears[1:]:
            if lin.bias.dtype != b0.dtype or lin.bias.device != b0.device:
                return "biases on different dtypes/devices"
    return None


def _alike(lin: nn.Linear) -> tuple[object, ...]:
    """What two members of one backend region share: the backend fuses sibling linears on one input
    (so one K) only among those alike in bias presence, and one op call takes one dtype and device."""
    w = lin.weight
    return (w.dtype, w.device, tuple(w.shape[1:]), tuple(_local(w).shape[1:]), lin.bias is not None)


def _split_default_group(group: list[str], linears: list[nn.Linear]
                         ) -> tuple[list[tuple[list[str], list[nn.Linear]]], list[tuple[list[str], str]]]:
    """A default group split as the backend fuses it: members alike in K, dtype, device and bias
    presence (:func:`_alike`), in group order (Whisper's q/v with biases and k without; a
    cross-attention's k/v reading the encoder and q another K). Returns the subgroups of two or more
    and the lone members with the reason they stay as they are."""
    by_key: dict[tuple[object, ...], list[int]] = {}
    for i, lin in enumerate(linears):
        by_key.setdefault(_alike(lin), []).append(i)
    if len(by_key) == 1:
        return [(group, linears)], []
    subgroups, lone = [], []
    for members in by_key.values():
        names = [group[i] for i in members]
        if len(members) >= 2:
            subgroups.append((names, [linears[i] for i in members]))
        else:
            others = [n for n in group if n not in names]
            lone.append((names, f"unlike its siblings {others} in K, dtype, device or bias presence: the backend "
                                "fuses it with none of them, so it stays on its own"))
    return subgroups, lone


def pack_parameters(module: nn.Module, groups: Iterable[Sequence[str]] | None = None) -> PackReport:
    """Makes the weights (and biases) of each group adjacent in one storage.

    Args:
        module: the model; modified in place.
        groups: qualified names of ``nn.Linear`` submodules to pack together, in
            output order, e.g. ``[["attn.q_proj", "attn.k_proj", "attn.v_proj"]]``.
            Default: :func:`find_sibling_groups` (q/k/v and gate/up siblings), each split as the
            backend fuses it: members alike in K, dtype, device and bias presence are packed
            together, a lone unlike member is left as it is (in ``skipped``, with the reason).

    Returns:
        A :class:`PackReport` of packed and skipped groups (and, with the default groups, the
        projections fused in the model already).

    Warns:
        UserWarning: with the default groups, when the model has neither sibling projections nor
            fused ones (its projections may have other names: pass ``groups=``). A natively fused
            model (only fused projections) is not warned about: there is nothing to pack.

    Raises:
        TypeError: ``module`` is not an ``nn.Module``.
        ValueError: ``groups`` is not a list of non-empty lists of names (a single flat list of
            names included), or a name in it is not an ``nn.Linear`` submodule.
    """
    check_module(module, "pack_parameters")
    if groups is not None:
        groups = checked_groups(groups, "pack_parameters")
    report = PackReport()
    names = dict(module.named_modules())
    seen: set[int] = set()
    defaults = groups is None
    if groups is None:
        groups = find_sibling_groups(module)
        report.already_fused = find_fused_projections(module)
        if not groups and report.already_fused:
            kinds = sorted({n.rpartition(".")[2] for n in report.already_fused})
            logger.info("pack_parameters: nothing to pack in %s: its projections are already fused (%d modules "
                        "named %s compute q/k/v or gate/up in one GEMM each)", type(module).__name__,
                        len(report.already_fused), ", ".join(kinds))
            return report
        if not groups:
            message = (f"pack_parameters: found no sibling projections in {type(module).__name__} "
                       f"(looked for {', '.join('/'.join(g) for g in DEFAULT_SIBLINGS)}); nothing packed. "
                       "Name the groups: pack_parameters(model, groups=[['attn.q', 'attn.k', 'attn.v'], ...])")
            warnings.warn(message, stacklevel=2)
            logger.info("%s", message)  # INFO: a WARNING record would print the warning twice
            return report
    # Which tensors (by storage) the module holds, to refuse views of others' storage.
    fsdp_managed = _under_fsdp(module)
    owners: dict[tuple[torch.device, int], list[tuple[str, int]]] = {}
    for tensor_name, tensor in [*module.named_parameters(), *module.named_buffers()]:
        key = _storage_key(tensor)
        if key is not None:
            owners.setdefault(key, []).append((tensor_name, id(tensor)))
    work: list[tuple[list[str], list[nn.Linear]]] = []
    for group in groups:
        group = list(group)
        linears = group_linears(names, group, "pack_parameters")
        reason = _check_members(group, linears)
        if reason is not None:
            logger.warning("pack_parameters: skipping %s: %s", group, reason)
            report.skipped.append((group, reason))
        elif defaults:
            subgroups, lone = _split_default_group(group, linears)
            for lone_group, why in lone:
                logger.info("pack_parameters: leaving %s alone: %s", lone_group, why)
            report.skipped.extend(lone)
            work.extend(subgroups)
        else:
            work.append((group, linears))
    for group, linears in work:
        params = [lin.weight for lin in linears] + [lin.bias for lin in linears if lin.bias is not None]
        reason = _check_dtensors(linears, any(id(lin) in fsdp_managed for lin in linears))
        if reason is None:
            reason = _check_group(linears)
        if reason is None and (other := _shared_outside(params, owners)) is not None:
            reason = (f"shares storage with {other!r} outside the group (a view of another tensor): "
                      "moving it would untie them")
        if reason is None and len({id(p) for p in params}) != len(params):
            reason = "a Parameter appears twice in the group"
        if reason is None and any(id(p) in seen for p in params):
            reason = "shares a Parameter with a group packed before"
        if reason is not None:
            logger.warning("pack_parameters: skipping %s: %s", group, reason)
            report.skipped.append((group, reason))
            continue
        pack_tensors([lin.weight for lin in linears])
        tag_packed(group, "weight", [lin.weight for lin in linears])
        if linears[0].bias is not None:
            pack_tensors([lin.bias for lin in linears])
            tag_packed(group, "bias", [lin.bias for lin in linears])
        for lin in linears:
            install_whole_state_dict_hook(lin)
        _watch_assign(group, linears[0])
        seen.update(id(p) for p in params)
        report.packed.append(group)
        logger.debug("pack_parameters: packed %s", group)
    if report.packed:
        _watch_loads(module)
    _record_groups(module, report.packed)
    return report
