"""FSDP2 (``fully_shard``) with packed sibling groups: unsharded parts as views of one buffer.

Torch's ``fully_shard`` gives every unsharded parameter an all-gather output of
its own (``FSDPParam.init_all_gather_outputs``: one ``torch.empty`` per
parameter), and the all-gather copy-out (``split_with_sizes_copy``) writes each
parameter's gathered rows there. So q/k/v, packed or not, are in different
storages during the forward, and ``splitlinear.ops.linear`` copies them or runs
one GEMM per part.

:func:`pack_fsdp_parameters` makes the all-gather outputs of each group's
members slices of one allocation, in group order. The copy-out then writes
every member straight into its slice (the same single copy FSDP2 always does:
no extra copy), and the unsharded Parameters are views of that allocation, back
to back. Only the unsharded side changes: the sharded Parameters (what the
optimizer, ``state_dict()`` and ``load_state_dict()`` see), their names, the
all-gather and the reduce-scatter are FSDP2's own.

How: per-instance overrides of three ``FSDPParam`` methods of each member
(torch internals, hence the version check):

* ``init_all_gather_outputs``: the member's output is its slice of the group
  allocation (created by whichever member comes first);
* ``alloc_all_gather_outputs``: re-allocates the whole allocation (a slice's
  own ``numel * itemsize`` is not the storage's size, so FSDP2's
  ``alloc_storage`` would shrink the shared storage);
* ``init_unsharded_param``: the unsharded Parameter is a view of the slice at
  its offset (FSDP2's ``as_strided(..., storage_offset=0)`` would point every
  member at the start of the allocation).

Freeing is FSDP2's own ``free_storage``: resizing the shared storage to 0 frees
the group at once. FSDP2 frees and unshards all parameters of one
``fully_shard`` unit together, which is why a group must lie in one unit. The
storage object survives a free, so the next re-allocation makes every slice,
unsharded Parameter and tensor saved for backward point into the new memory,
adjacent again.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from .._logging import logger
from .._siblings import (DEFAULT_SIBLINGS, PackReport, check_module, checked_groups, find_sibling_groups, group_linears,
                         warn_not_adjacent)

#: ``torch`` releases (major, minor) whose ``FSDPParam`` internals the overrides were written against.
SUPPORTED_TORCH: tuple[tuple[int, int], ...] = ((2, 11),)

#: Attribute set on each overridden ``FSDPParam``: its :class:`_GroupLayout`.
_LAYOUT_ATTR = "_splitlinear_layout"


def _torch_release(version: str) -> tuple[int, int]:
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def _check_torch() -> None:
    release = _torch_release(torch.__version__)
    if release not in SUPPORTED_TORCH:
        supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_TORCH)
        raise RuntimeError(
            f"pack_fsdp_parameters: torch {torch.__version__} is not supported (it overrides FSDPParam "
            f"internals written against torch {supported}); the model still trains correctly without it")


class _GroupLayout:
    """The one allocation holding a group's unsharded parameters, back to back in group order.

    ``numels[i]`` is member ``i``'s unsharded element count; the allocation is
    created on the first all-gather (dtype and device are FSDP2's all-gather
    dtype, i.e. ``param_dtype`` if set, and the unit's device)."""

    def __init__(self, names: Sequence[str], numels: Sequence[int]) -> None:
        self.names = list(names)
        self.numels = list(numels)
        self.offsets = [sum(self.numels[:i]) for i in range(len(self.numels))]
        self.total = sum(self.numels)
        self.buffer: torch.Tensor | None = None

    def slice_for(self, index: int, numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """Member ``index``'s slice (1-D, ``numel`` elements) of the allocation.

        Raises:
            RuntimeError: ``numel``, ``dtype`` or ``device`` differ from what
                the layout was built for (a padded shard, an all-gather
                extension or a dtype changed after packing).
        """
        name = self.names[index]
        if numel != self.numels[index]:
            raise RuntimeError(
                f"pack_fsdp_parameters: {name} all-gathers {numel} elements, expected {self.numels[index]} "
                "(its unsharded size); was the parameter changed after packing?")
        if self.buffer is None:
            with torch.inference_mode(False):
                self.buffer = torch.empty(self.total, dtype=dtype, device=device)
        elif self.buffer.dtype != dtype or self.buffer.device != device:
            raise RuntimeError(
                f"pack_fsdp_parameters: {name} all-gathers {dtype} on {device}, but {self.names[0]} "
                f"gathered {self.buffer.dtype} on {self.buffer.device}; a group needs one dtype and device")
        start = self.offsets[index]
        return self.buffer[start : start + numel]

    def alloc(self) -> None:
        """Gives the (freed) shared storage its full size again; every slice sees the new memory."""
        assert self.buffer is not None
        storage = self.buffer.untyped_storage()
        nbytes = self.total * self.buffer.itemsize
        if storage.size() != nbytes:
            storage.resize_(nbytes)


def _init_all_gather_outputs(self: Any, all_gather_input_numels: list[int],
                             all_gather_input_dtypes: list[torch.dtype], world_size: int,
                             device: torch.device, force_recreate: bool = False) -> None:
    """Override of ``FSDPParam.init_all_gather_outputs``: the output is this member's slice."""
    layout, index = getattr(self, _LAYOUT_ATTR)
    if force_recreate:  # compiled autograd recreates outputs inside its graph
        raise RuntimeError(
            f"pack_fsdp_parameters: {layout.names[index]}: compiled autograd (traceable FSDP2) is not "
            "supported; it re-creates all-gather outputs per step")
    if self.all_gather_outputs:
        return
    if len(all_gather_input_numels) != 1:
        raise RuntimeError(
            f"pack_fsdp_parameters: {layout.names[index]} has {len(all_gather_input_numels)} all-gather "
            "inputs (an all-gather extension); one is supported")
    self.all_gather_outputs = [
        layout.slice_for(index, all_gather_input_numels[0] * world_size, all_gather_input_dtypes[0], device)]


def _alloc_all_gather_outputs(self: Any) -> None:
    """Override of ``FSDPParam.alloc_all_gather_outputs``: re-allocate the whole group."""
    layout, _ = getattr(self, _LAYOUT_ATTR)
    layout.alloc()


def _init_unsharded_param(self: Any) -> None:
    """Override of ``FSDPParam.init_unsharded_param``: a view of the slice at its own offset.

    FSDP2 creates the unsharded Parameter once, then only re-allocates and
    refills its storage; so does this."""
    if hasattr(self, "_unsharded_param"):
        return
    (output,) = self.all_gather_outputs
    unsharded = output.view(self._orig_size)
    self._unsharded_param = nn.Parameter(unsharded, requires_grad=self.sharded_param.requires_grad)


def _fsdp_params_by_owner(module: nn.Module) -> dict[tuple[int, str], tuple[Any, Any]]:
    """``(id(owning module), attribute name) -> (FSDPParam, FSDPParamGroup)`` for every ``fully_shard`` unit."""
    from torch.distributed.fsdp import FSDPModule

    owners: dict[tuple[int, str], tuple[Any, Any]] = {}
    for sub in module.modules():
        if not isinstance(sub, FSDPModule):
            continue
        group = sub._get_fsdp_state()._fsdp_param_group
        if group is None:
            continue
        for fsdp_param in group.fsdp_params:
            info = fsdp_param._module_info
            owners[(id(info.module), info.param_name)] = (fsdp_param, group)
            for shared, shared_name in zip(info.shared_modules, info.shared_param_names):
                owners[(id(shared), shared_name)] = (fsdp_param, group)
    return owners


def _unit_name(module: nn.Module, group: Any) -> str:
    names = {id(m): n for n, m in module.named_modules()}
    return ", ".join(repr(names.get(id(m), type(m).__name__) or "<root>") for m in group.modules)


def _check_unit(where: str, module: nn.Module, unit: Any) -> None:
    """Raises ValueError for ``fully_shard`` settings the layout does not support."""
    from torch.distributed.fsdp import CPUOffloadPolicy
    from torch.distributed.fsdp._fully_shard._fsdp_common import HSDPMeshInfo

    unit_name = _unit_name(module, unit)
    if isinstance(unit.offload_policy, CPUOffloadPolicy):
        raise ValueError(f"pack_fsdp_parameters: {where}: the fully_shard unit {unit_name} offloads to CPU "
                         "(CPUOffloadPolicy), which is not supported")
    if isinstance(unit.mesh_info, HSDPMeshInfo) or unit.mesh_info.mesh.ndim != 1:
        raise ValueError(f"pack_fsdp_parameters: {where}: the fully_shard unit {unit_name} has a "
                         f"{unit.mesh_info.mesh.ndim}-D mesh (HSDP or FSDP + TP); only a 1-D mesh is supported")
    if unit._use_post_forward_mesh:
        raise ValueError(f"pack_fsdp_parameters: {where}: the fully_shard unit {unit_name} reshards after "
                         "forward to a smaller mesh (reshard_after_forward=<int>); use True or False")
    if unit.mesh_info.shard_mesh_size == 1:
        raise ValueError(f"pack_fsdp_parameters: {where}: the fully_shard unit {unit_name} has world size 1, "
                         "where FSDP2 copies parameters through its own path; nothing to gain there")


def _check_member(name: str, fsdp_param: Any, world_size: int) -> None:
    """Raises ValueError if ``fsdp_param`` cannot be a slice of a group allocation."""
    from torch.distributed.tensor import DTensor

    if fsdp_param.is_dtensor or isinstance(fsdp_param._sharded_local_tensor, DTensor):
        raise ValueError(f"pack_fsdp_parameters: {name} is a DTensor before fully_shard (FSDP2 + TP), "
                         "which is not supported")
    if hasattr(fsdp_param._sharded_local_tensor, "fsdp_pre_all_gather"):
        raise ValueError(f"pack_fsdp_parameters: {name} is a tensor subclass with all-gather extensions "
                         "(fsdp_pre_all_gather), which is not supported")
    if fsdp_param.fsdp_placement.dim != 0:
        raise ValueError(f"pack_fsdp_parameters: {name} is sharded on dim {fsdp_param.fsdp_placement.dim}; "
                         "only dim 0 (FSDP2's default) is supported")
    rows = fsdp_param._orig_size[0]
    if fsdp_param.padded_sharded_param_size[0] * world_size != rows:
        raise ValueError(f"pack_fsdp_parameters: {name} has {rows} rows, not divisible by the world size "
                         f"{world_size}: FSDP2 pads its shards, and the padding would separate the parts. "
                         "Leave the group out (groups=...) or choose a world size that divides it")
    if fsdp_param.all_gather_outputs or hasattr(fsdp_param, "_unsharded_param"):
        raise ValueError(f"pack_fsdp_parameters: {name} was already unsharded (a forward ran); "
                         "call pack_fsdp_parameters after fully_shard and before the first forward")
    if hasattr(fsdp_param, _LAYOUT_ATTR):
        raise ValueError(f"pack_fsdp_parameters: {name} is already in a packed group")


def _all_gather_dtype(fsdp_param: Any) -> torch.dtype:
    return fsdp_param.mp_policy.param_dtype or fsdp_param.sharded_param.dtype


def _pack_members(names: Sequence[str], members: Sequence[Any]) -> None:
    layout = _GroupLayout(names, [m._orig_size.numel() for m in members])
    for index, fsdp_param in enumerate(members):
        setattr(fsdp_param, _LAYOUT_ATTR, (layout, index))
        fsdp_param.init_all_gather_outputs = types.MethodType(_init_all_gather_outputs, fsdp_param)
        fsdp_param.alloc_all_gather_outputs = types.MethodType(_alloc_all_gather_outputs, fsdp_param)
        fsdp_param.init_unsharded_param = types.MethodType(_init_unsharded_param, fsdp_param)


_Buffers = list[tuple[list[str], list[Any]]]


def _plan_group(module: nn.Module, modules: dict[str, nn.Module], owners: dict[tuple[int, str], tuple[Any, Any]],
                group: list[str], claimed: set[int]) -> _Buffers:
    """The members (``FSDPParam`` objects) of each buffer of ``group``: weights, then biases if any.

    Raises:
        ValueError: a requirement of :func:`pack_fsdp_parameters` does not hold for the group.
    """
    linears = group_linears(modules, group, "pack_fsdp_parameters")
    has_bias = [lin.bias is not None for lin in linears]
    if any(has_bias) and not all(has_bias):
        raise ValueError(f"pack_fsdp_parameters: group {group}: biases present on some members only")
    buffers: _Buffers = []
    for attr in ("weight", "bias") if all(has_bias) else ("weight",):
        names = [f"{name}.{attr}" for name in group]
        found = [owners.get((id(lin), attr)) for lin in linears]
        for qualified, entry in zip(names, found):
            if entry is None:
                raise ValueError(f"pack_fsdp_parameters: {qualified} is not managed by fully_shard "
                                 "(call pack_fsdp_parameters after fully_shard)")
        units = {id(unit): unit for _, unit in found}
        if len(units) != 1:
            raise ValueError(
                f"pack_fsdp_parameters: group {group} spans {len(units)} fully_shard units ("
                + "; ".join(_unit_name(module, u) for u in units.values())
                + "); apply fully_shard to a module containing the whole group")
        unit = found[0][1]
        _check_unit(f"group {group}", module, unit)
        members = [fsdp_param for fsdp_param, _ in found]
        for qualified, fsdp_param in zip(names, members):
            _check_member(qualified, fsdp_param, unit.mesh_info.shard_mesh_size)
            if id(fsdp_param) in claimed:
                raise ValueError(f"pack_fsdp_parameters: {qualified} appears in two groups")
            claimed.add(id(fsdp_param))
        dtypes = {_all_gather_dtype(m) for m in members}
        if len(dtypes) != 1:
            raise ValueError(f"pack_fsdp_parameters: group {group}: {attr}s all-gather in several dtypes "
                             f"({sorted(map(str, dtypes))}); a group needs one")
        if len({m._orig_size[1:] for m in members}) != 1:
            raise ValueError(f"pack_fsdp_parameters: group {group}: {attr}s differ in trailing shape")
        buffers.append((names, members))
    return buffers


def pack_fsdp_parameters(module: nn.Module, groups: Iterable[Sequence[str]] | None = None) -> PackReport:
    """Makes each sibling group's unsharded parameters views of one buffer under FSDP2.

    Call it after ``fully_shard`` (per layer and on the root, as usual) and
    before the first forward; build the optimizer before or after, as the
    sharded Parameters are not touched. ``pack_parameters`` is not needed (its
    layout lives in the unsharded model only; either order works). The weights
    of a group form one buffer and, if present, the biases another.

    Args:
        module: the model after ``fully_shard``; its ``FSDPParam`` objects are
            modified in place.
        groups: qualified names of ``nn.Linear`` submodules to pack together, in
            output order, e.g. ``[["layers.0.self_attn.q_proj", ...]]``.
            Default: :func:`splitlinear.packing.find_sibling_groups`.

    Returns:
        A :class:`splitlinear.PackReport` of the packed groups (nothing is
        skipped silently: an unsupported group raises).

    Requires (else ``ValueError`` naming the parameter or unit):
        * every member's weight (and bias) managed by ``fully_shard``, all of a
          group in one ``fully_shard`` unit, with one all-gather dtype
          (``MixedPrecisionPolicy.param_dtype`` or the Parameter dtype);
        * a 1-D mesh of world size > 1, dim-0 sharding (the default), and row
          counts divisible by the world size (FSDP2 pads uneven shards, and the
          padding would sit between the parts);
        * no ``CPUOffloadPolicy``, no ``reshard_after_forward=<int>`` (``True``
          and ``False`` are supported), no DTensor (TP) Parameters or tensor
          subclasses with all-gather extensions, no compiled autograd;
        * no forward has run yet.

    Raises:
        RuntimeError: torch is not a release in :data:`SUPPORTED_TORCH`; at
            run time, compiled autograd or a member whose size or dtype changed.
        TypeError: ``module`` is not an ``nn.Module``.
        ValueError: ``groups`` is not a list of non-empty lists of names, a name in it is not an
            ``nn.Linear`` submodule, or a requirement above does not hold.
    """
    _check_torch()
    check_module(module, "pack_fsdp_parameters")
    if groups is not None:
        groups = checked_groups(groups, "pack_fsdp_parameters")
    modules = dict(module.named_modules())
    if groups is None:
        groups = find_sibling_groups(module)
        if not groups:
            logger.warning("pack_fsdp_parameters: found no sibling projections in %s (looked for %s)",
                           type(module).__name__, ", ".join("/".join(g) for g in DEFAULT_SIBLINGS))
    owners = _fsdp_params_by_owner(module)
    claimed: set[int] = set()
    planned = [(list(group), _plan_group(module, modules, owners, list(group), claimed)) for group in groups]
    report = PackReport()
    for group, buffers in planned:  # all checked before anything is changed
        for names, members in buffers:
            _pack_members(names, members)
        report.packed.append(group)
        logger.debug("pack_fsdp_parameters: packed %s", group)
    return report


def pack_recorded_groups(module: nn.Module, groups: Sequence[Sequence[str]]) -> PackReport:
    """:func:`pack_fsdp_parameters` for the groups ``pack_parameters`` packed before ``fully_shard``.

    Called once, on the first forward of the module ``pack_parameters`` was given, when that
    module is a ``fully_shard`` module (:func:`splitlinear.packing.pack_on_first_forward`): FSDP2's
    root pre-forward has run (lazy init, the root unit's own unshard), no other unit has
    unsharded yet. Groups are packed one by one; one that cannot be (a group in the root's own
    unit, which has unsharded already; uneven rows; world size 1; an unsupported torch) is
    skipped with a warning naming it and why (:func:`splitlinear.packing.warn_not_adjacent`),
    and runs as stock FSDP2 does (correct, not zero-copy)."""
    report = PackReport()
    try:
        _check_torch()
    except RuntimeError as exc:
        for group in groups:
            warn_not_adjacent(list(group), str(exc), owner=module)
            report.skipped.append((list(group), str(exc)))
        return report
    modules = dict(module.named_modules())
    owners = _fsdp_params_by_owner(module)
    claimed: set[int] = set()
    for group in map(list, groups):
        try:
            buffers = _plan_group(module, modules, owners, group, claimed)
        except ValueError as exc:
            reason = str(exc).removeprefix("pack_fsdp_parameters: ")
            if "already in a packed group" in reason:
                continue  # pack_fsdp_parameters laid it out already
            if "already unsharded" in reason:
                reason = ("its fully_shard unit (the root's own) unshards before the model's forward runs; "
                          "call splitlinear.pack_fsdp_parameters(model) after fully_shard, or fully_shard "
                          "the layers")
            warn_not_adjacent(group, f"under FSDP2: {reason}", owner=module)
            report.skipped.append((group, reason))
            continue
        for names, members in buffers:
            _pack_members(names, members)
        report.packed.append(group)
    logger.info("pack_parameters: laid out %d of %d packed group(s) for FSDP2 (fully_shard) in %s",
                len(report.packed), len(groups), type(module).__name__)
    return report
