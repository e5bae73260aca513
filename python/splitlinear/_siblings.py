"""Sibling projections: which linears of a module form a group, and the warning for a packed
group that is not adjacent in memory.

A leaf of the package (no splitlinear import but the logger): :mod:`splitlinear.packing`
(``pack_parameters``) and :mod:`splitlinear.distributed.fsdp` (``pack_fsdp_parameters``)
both find groups here, so neither imports the other at module level.
"""

from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from ._logging import logger, user_stacklevel

#: Sibling projections found by default (children of one module, in this order).
DEFAULT_SIBLINGS: tuple[tuple[str, ...], ...] = (
    ("q_proj", "k_proj", "v_proj"),
    ("gate_proj", "up_proj"),
    ("query", "key", "value"),
    ("wq", "wk", "wv"),
    ("w1", "w3"),
)

#: Child names of projections that architectures already compute as one Linear (q/k/v or gate/up
#: concatenated in the checkpoint): Phi-3 ``qkv_proj``/``gate_up_proj``; GPT-NeoX, Falcon and BLOOM
#: ``query_key_value``; MPT and ModernBERT ``Wqkv``; Baichuan ``W_pack``; GPT-2 ``c_attn``.
FUSED_PROJECTIONS: tuple[str, ...] = ("qkv_proj", "gate_up_proj", "query_key_value", "Wqkv", "W_pack", "c_attn")


@dataclass
class PackReport:
    """What :func:`pack_parameters` did: packed groups (module names), skipped
    groups with the reason, and (with the default groups) the projections that
    are fused in the model already (:data:`FUSED_PROJECTIONS`), which need no
    packing."""

    packed: list[list[str]] = field(default_factory=list)
    skipped: list[tuple[list[str], str]] = field(default_factory=list)
    already_fused: list[str] = field(default_factory=list)


def checked_groups(groups: Iterable[Sequence[str]], caller: str) -> list[list[str]]:
    """``groups`` as lists of module names.

    Raises:
        ValueError: ``groups`` is a string, or an entry is not a non-empty list or tuple of
            strings (one list of names where a list of groups belongs would otherwise be read as
            groups of characters).
    """
    example = "e.g. [['attn.q_proj', 'attn.k_proj', 'attn.v_proj'], ['mlp.gate_proj', 'mlp.up_proj']]"
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Iterable):
        raise ValueError(f"{caller}: groups must be a list of non-empty lists of module names ({example}); "
                         f"got {type(groups).__name__} {groups!r:.80}")
    checked = []
    for group in groups:
        if isinstance(group, (str, bytes)) or not isinstance(group, Sequence):
            raise ValueError(f"{caller}: groups must be a list of non-empty lists of module names ({example}); "
                             f"got the entry {group!r:.80}: wrap one group in a list of its own")
        if not group:
            raise ValueError(f"{caller}: groups holds an empty group; groups must be non-empty lists of names")
        for name in group:
            if not isinstance(name, str):
                raise ValueError(f"{caller}: a group holds {name!r:.80} ({type(name).__name__}); module names "
                                 "are strings")
        checked.append(list(group))
    return checked


def check_module(module: object, caller: str) -> None:
    """Raises TypeError naming ``caller`` unless ``module`` is an ``nn.Module``."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"{caller}: module must be an nn.Module, got {type(module).__name__}")


def group_linears(modules: dict[str, nn.Module], group: Sequence[str], caller: str) -> list[nn.Linear]:
    """The ``nn.Linear`` modules named by ``group`` (names as in ``named_modules()``).

    Raises:
        ValueError: a name is not an ``nn.Linear`` submodule (the message names ``caller``).
    """
    linears = []
    for name in group:
        lin = modules.get(name)
        if not isinstance(lin, nn.Linear):
            raise ValueError(f"{caller}: {name!r} is not an nn.Linear submodule of the module")
        linears.append(lin)
    return linears


def _linear_name(children: dict[str, nn.Module], name: str) -> str | None:
    """``name`` if that child is an ``nn.Linear``, ``name.base_layer`` if it wraps one there (a
    PEFT LoRA layer: the adapters stay outside the group), else None."""
    child = children.get(name)
    if isinstance(child, nn.Linear):
        return name
    if isinstance(getattr(child, "base_layer", None), nn.Linear):
        return f"{name}.base_layer"
    return None


#: Children of an MLP that read its input, when no :data:`DEFAULT_SIBLINGS` pair does: Phi-1/2's
#: ``fc1``, GPT-J's ``fc_in``, GPT-2's ``c_fc``, GPT-NeoX's ``dense_h_to_4h``.
MLP_INPUT_PROJECTIONS: tuple[str, ...] = ("fc1", "fc_in", "c_fc", "dense_h_to_4h")



def _is_attention(index: int) -> bool:
    """Whether pattern ``index`` of :data:`DEFAULT_SIBLINGS` is q/k/v (the others are MLP inputs)."""
    return len(DEFAULT_SIBLINGS[index]) == 3


def _is_norm(module: nn.Module) -> bool:
    """A normalization layer (``nn.LayerNorm``, ``nn.RMSNorm``, or a class named ``...Norm``)."""
    return isinstance(module, (nn.LayerNorm, nn.RMSNorm, nn.GroupNorm)) or type(module).__name__.endswith("Norm")


def _sibling_groups(module: nn.Module) -> list[tuple[str, int, list[str]]]:
    """``(parent name, pattern index, member names)`` for every :data:`DEFAULT_SIBLINGS` match."""
    found: list[tuple[str, int, list[str]]] = []
    for name, parent in module.named_modules():
        children = dict(parent.named_children())
        for index, pattern in enumerate(DEFAULT_SIBLINGS):
            names = [_linear_name(children, c) for c in pattern]
            if all(n is not None for n in names):
                prefix = f"{name}." if name else ""
                found.append((name, index, [prefix + n for n in names if n is not None]))
    return found


def _has_bias(modules: dict[str, nn.Module], names: Sequence[str]) -> set[bool]:
    return {getattr(modules[n], "bias", None) is not None for n in names}


def _parallel_blocks(module: nn.Module, groups: list[tuple[str, int, list[str]]]) -> dict[int, list[str]]:
    """Parallel blocks (Phi-1/2, Cohere, GPT-J): ``{index of the q/k/v group: its MLP input projections}``.

    A block is a module with exactly one normalization child whose attention child holds
    a q/k/v group and whose MLP child holds a gate/up pair (or one of
    :data:`MLP_INPUT_PROJECTIONS`): attention and MLP both read that one normed
    input, so the backend fuses all of them into one region (siblings on one input).
    Sequential blocks (Llama: ``input_layernorm`` and ``post_attention_layernorm``)
    have two norms. Members must agree on bias presence, as the backend's regions do."""
    modules = dict(module.named_modules())
    by_parent = {parent: (i, index) for i, (parent, index, _) in enumerate(groups)}
    merged: dict[int, list[str]] = {}
    for name, block in module.named_modules():
        children = dict(block.named_children())
        if sum(_is_norm(c) for c in children.values()) != 1:
            continue
        prefix = f"{name}." if name else ""
        attention = [by_parent[prefix + c] for c in children
                     if prefix + c in by_parent and _is_attention(by_parent[prefix + c][1])]
        mlp_inputs: list[tuple[int | None, list[str]]] = []
        for child_name, child in children.items():
            entry = by_parent.get(prefix + child_name)
            if entry is not None and not _is_attention(entry[1]):
                mlp_inputs.append((entry[0], groups[entry[0]][2]))
                continue
            grandchildren = dict(child.named_children())
            singles = [n for n in (_linear_name(grandchildren, c) for c in MLP_INPUT_PROJECTIONS) if n is not None]
            if len(singles) == 1 and entry is None:
                mlp_inputs.append((None, [f"{prefix}{child_name}.{singles[0]}"]))
        if len(attention) != 1 or len(mlp_inputs) != 1:
            continue
        qkv = groups[attention[0][0]][2]
        mlp_index, mlp = mlp_inputs[0]
        if len(_has_bias(modules, [*qkv, *mlp])) != 1:
            continue
        merged[attention[0][0]] = mlp
        if mlp_index is not None:
            merged[mlp_index] = []  # taken into the q/k/v group
    return merged


def find_sibling_groups(module: nn.Module) -> list[list[str]]:
    """Qualified names of the ``nn.Linear`` groups the backend fuses into one region: sibling
    children matching :data:`DEFAULT_SIBLINGS`, e.g. ``["layers.0.self_attn.q_proj", ...]``; a
    sibling wrapped by PEFT LoRA is its ``base_layer``. In a parallel block (Phi-1/2, Cohere:
    attention and MLP read one normed input, see :func:`_parallel_blocks`) q, k, v and the MLP's
    input projections (gate/up, ``fc1``) are one group, in that order (the order they run)."""
    groups = _sibling_groups(module)
    merged = _parallel_blocks(module, groups)
    result: list[list[str]] = []
    for i, (_, _, names) in enumerate(groups):
        extra = merged.get(i)
        if extra == []:
            continue  # merged into its block's q/k/v group
        result.append(names + (extra or []))
    return result


def find_fused_projections(module: nn.Module) -> list[str]:
    """Qualified names of the submodules named as in :data:`FUSED_PROJECTIONS` that hold a 2-D
    weight (``nn.Linear``, a PEFT wrapper of one, or GPT-2's ``Conv1D``)."""
    found = []
    for name, child in module.named_modules():
        weight = getattr(getattr(child, "base_layer", child), "weight", None)
        if name.rpartition(".")[2] in FUSED_PROJECTIONS and isinstance(weight, torch.Tensor) and weight.dim() == 2:
            found.append(name)
    return found


#: Environment variable: ``0`` turns off the warning about packed groups that are not adjacent.
PACK_WARNINGS_ENV = "SPLITLINEAR_PACK_WARNINGS"

#: Groups warned about already: (id of the owner, group names); an owner's entry leaves with it.
_warned: set[tuple[int, tuple[str, ...]]] = set()


def warn_not_adjacent(group: Sequence[str], reason: str, owner: object | None = None,
                      more: Sequence[Sequence[str]] = ()) -> None:
    """Warns once per ``owner`` and process that packed ``group`` (and the groups in ``more``, for
    the same ``reason``: one warning names the first three) is not adjacent in memory, and why.

    ``owner`` is the object the group belongs to (its first Parameter, or the model): a second model
    with the same module names is warned about too. ``None``: once per group name. Results stay
    correct: the op copies the parts or runs one GEMM per part. The warning is a ``UserWarning``
    (also logged at INFO on the ``splitlinear`` logger); ``SPLITLINEAR_PACK_WARNINGS=0`` turns it off."""
    groups = [list(group), *(list(g) for g in more)]
    key = (id(owner) if owner is not None else 0, tuple(n for g in groups for n in g))
    if key in _warned or os.environ.get(PACK_WARNINGS_ENV, "1") == "0":
        return
    _warned.add(key)
    if owner is not None:
        # The id may be reused once the owner is gone: its entry goes with it.
        weakref.finalize(owner, _warned.discard, key)
    if len(groups) == 1:
        named = f"packed group {groups[0]} is"
    else:
        extra = f" and {len(groups) - 3} more" if len(groups) > 3 else ""
        named = f"packed groups {', '.join(str(g) for g in groups[:3])}{extra} are"
    message = (f"splitlinear: {named} not adjacent in memory ({reason}); their fused linears copy the "
               f"parts or run one GEMM per part (set {PACK_WARNINGS_ENV}=0 to silence)")
    warnings.warn(message, stacklevel=user_stacklevel())
    # INFO, not WARNING: with no logging set up, a WARNING record prints a second copy (logging's
    # last-resort handler); TORCH_LOGS=splitlinear still shows it.
    logger.info("%s", message)


def warn_unpacked(groups: Sequence[Sequence[str]], owner: object, context: str = "") -> None:
    """Warns once per ``owner`` (the first group's first weight part) that the fused linears of
    ``groups`` (each a region's module names) read weight parts that are not back to back in one
    storage, so each call copies the parts or runs one GEMM per part; ``context`` says when (after
    "in memory"). Names the first three groups; ``SPLITLINEAR_PACK_WARNINGS=0`` turns it off, as for
    packed groups."""
    key = (id(owner), tuple(n for g in groups for n in g))
    if key in _warned or os.environ.get(PACK_WARNINGS_ENV, "1") == "0":
        return
    _warned.add(key)
    weakref.finalize(owner, _warned.discard, key)
    shown = ", ".join(str(list(g)) for g in groups[:3])
    more = f" and {len(groups) - 3} more" if len(groups) > 3 else ""
    message = (f"splitlinear: the weight parts of {len(groups)} fused linear group(s) are not adjacent in "
               f"memory{context}: {shown}{more}; each call copies the parts or runs one GEMM per part. "
               f"splitlinear.pack_parameters(model) puts each group in one buffer (its groups=[[...], ...] "
               f"names other siblings than the defaults; set {PACK_WARNINGS_ENV}=0 to silence)")
    warnings.warn(message, stacklevel=user_stacklevel())
    logger.info("%s", message)


#: Attribute ``pack_parameters`` sets on each Parameter it packs: ``((group, kind), index)``, the
#: group's module names, ``"weight"`` or ``"bias"``, and the part's place in the packed buffer. It
#: stays on the Parameter object when something later gives the Parameter new storage
#: (``model.to(...)``, ``p.data = ...``), which is what :func:`check_packed_adjacency` looks for.
PACKED_TAG = "_splitlinear_packed"


def tag_packed(group: Sequence[str], kind: str, params: Sequence[torch.Tensor]) -> None:
    """Marks ``params`` (in buffer order) as packed group ``group``'s ``kind`` parts."""
    key = (tuple(group), kind)
    for i, p in enumerate(params):
        setattr(p, PACKED_TAG, (key, i))


def in_order_adjacent(parts: Sequence[torch.Tensor]) -> bool:
    """Whether ``parts`` are contiguous, of one dtype and device, back to back in one storage."""
    first = parts[0]
    for prev, p in zip(parts, parts[1:]):
        if (p.dtype != first.dtype or p.device != first.device or not p.is_contiguous()
                or not prev.is_contiguous()
                or p.untyped_storage().data_ptr() != first.untyped_storage().data_ptr()
                or p.data_ptr() != prev.data_ptr() + prev.numel() * prev.element_size()):
            return False
    return True


def check_packed_adjacency(tensors: Iterable[object]) -> None:
    """Warns (:func:`warn_not_adjacent`, once per group) about each group ``pack_parameters`` packed
    whose parts among ``tensors`` (a compiled graph's real example inputs) are no longer back to back
    in one storage: ``model.to(...)``, ``load_state_dict`` into new storage or a ``.data``
    assignment after packing gave them storage of their own. Results stay correct; the fused linear
    copies the parts or runs one GEMM per part until the group is packed again."""
    groups: dict[tuple[tuple[str, ...], str], dict[int, torch.Tensor]] = {}
    for t in tensors:
        # Plain Parameters only: a DTensor's parts are checked where FSDP2/TP shard them.
        tag = getattr(t, PACKED_TAG, None) if type(t) is torch.nn.Parameter else None
        if tag is not None:
            groups.setdefault(tag[0], {})[tag[1]] = t
    apart: dict[str, list[tuple[tuple[str, ...], torch.Tensor]]] = {}
    for (group, kind), by_index in groups.items():
        parts = [by_index[i] for i in sorted(by_index)]
        if len(parts) > 1 and parts[0].device.type != "meta" and not in_order_adjacent(parts):
            apart.setdefault(kind, []).append((group, parts[0]))
    # One warning per kind, naming the first groups: a 32-layer model moved after packing has 64.
    for kind, lost in apart.items():
        warn_not_adjacent(list(lost[0][0]), f"the {kind} parts no longer share one buffer since they were "
                                            "packed (model.to(), a load into new storage or a .data "
                                            "assignment); call pack_parameters again",
                          owner=lost[0][1], more=[g for g, _ in lost[1:]])
