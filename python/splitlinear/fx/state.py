"""Where code may move in a Dynamo FX graph: grad mode, autocast and barriers.

A rewrite merges sibling linears into one call placed at the first sibling,
and reads the parts of a ``torch.cat`` where the linear is, not where the cat
was. That changes *when* tensors are read. It is sound only when, between the
old and the new position,

* the grad mode is the same (Dynamo graphs carry
  ``torch._C._set_grad_enabled(bool)`` where it changes),
* the autocast state is the same (``_enter_autocast`` / ``_exit_autocast``), and
* no node writes memory or has another side effect: an in-place method or
  function (``x.mul_()``, ``torch.relu_(x)``, ``torch._foreach_mul_``,
  ``Tensor.set_``, ``x.data = y``, which Dynamo traces as ``set_``), ``out=``
  or ``inplace=True`` arguments (by keyword or by position, as
  ``nn.LeakyReLU(inplace=True)`` passes it), ``x[i] = v``
  (``operator.setitem``), augmented assignment operators (also written out,
  ``x.__iadd__(y)``), any ATen/custom op whose schema mutates an argument, a
  higher-order op with a subgraph, a function from outside torch kept opaque
  in the graph (``torch.compiler.allow_in_graph``), the enter/exit of a
  context manager (``inference_mode``, autocast), and whatever
  ``torch.fx.Node.is_impure`` reports (random ops, ...).

Such a node is a *barrier*. No alias analysis is attempted: a barrier blocks
every move across it, whatever storage it writes, so a rewrite can never read
a tensor at a point where its value differs from eager's.
"""

from __future__ import annotations

import bisect
import inspect
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from .model import target_name

#: ``operator`` functions that write their first argument.
_INPLACE_OPERATORS: frozenset[Any] = frozenset({
    operator.setitem, operator.delitem, operator.iadd, operator.isub, operator.imul,
    operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
    operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift,
})

#: Calls whose output carries no gradient back to their input.
_DETACHING: frozenset[Any] = frozenset({torch.detach, torch.Tensor.detach, torch.ops.aten.detach.default})


def _detaches(node: fx.Node) -> bool:
    return (node.op == "call_method" and node.target == "detach") or (
        node.op == "call_function" and node.target in _DETACHING)


def _may_carry_gradient(node: fx.Node) -> bool:
    """Whether ``node``'s value can carry a gradient: a floating or complex tensor, or a container of
    values holding one. Without an example value, assumed to."""
    if "example_value" not in node.meta and "val" not in node.meta:
        return True

    def holds(value: Any) -> bool:
        if isinstance(value, torch.Tensor):
            return value.dtype.is_floating_point or value.dtype.is_complex
        if isinstance(value, (list, tuple)):
            return any(holds(v) for v in value)
        return False

    return holds(node.meta.get("example_value", node.meta.get("val")))


#: Device types whose autocast state is tracked.
AUTOCAST_DEVICES: tuple[str, ...] = ("cpu", "cuda")

#: Autocast dtype per device type (``None``: autocast off there), as a sorted tuple.
AutocastState = tuple[tuple[str, torch.dtype | None], ...]


def ambient_autocast() -> AutocastState:
    """The autocast state of the calling thread (Dynamo traces and guards graphs under it)."""
    return tuple(
        (d, torch.get_autocast_dtype(d) if torch.is_autocast_enabled(d) else None) for d in AUTOCAST_DEVICES
    )


def _is_mutable_op(target: Any) -> bool:
    if isinstance(target, torch._ops.OpOverload):
        return target._schema.is_mutable
    if isinstance(target, torch._ops.OpOverloadPacket):
        return any(getattr(target, o)._schema.is_mutable for o in target.overloads())
    if isinstance(target, torch._ops.HigherOrderOperator):
        return True  # subgraphs may do anything
    return False


#: Tensor methods of Python's in-place operators (``x.__iadd__(y)`` written out).
_INPLACE_DUNDERS: frozenset[str] = frozenset(
    f"__{op.__name__.strip('_')}__" for op in _INPLACE_OPERATORS
)

#: Modules whose functions are judged by name and arguments; a function from
#: any other module (user code kept opaque, e.g. ``torch.compiler.allow_in_graph``)
#: may do anything and is a barrier.
_KNOWN_MODULES: tuple[str, ...] = ("torch", "_operator", "operator", "builtins", "math", "splitlinear")


def _inplace_name(name: str) -> bool:
    """``mul_``, ``index_add_``, ``_foreach_mul_``, ``set_``: PyTorch's naming of
    in-place variants (dunders such as ``__iadd__`` are matched separately)."""
    return name.endswith("_") and not name.endswith("__")


_SIGNATURES: dict[Any, inspect.Signature | None] = {}


def _signature(target: Any) -> inspect.Signature | None:
    if target not in _SIGNATURES:
        try:
            _SIGNATURES[target] = inspect.signature(target)
        except (TypeError, ValueError):  # builtins without a Python signature
            _SIGNATURES[target] = None
    return _SIGNATURES[target]


def _bound_flag(node: fx.Node, name: str) -> Any:
    """The value of parameter ``name`` of the call, positional or keyword (``None`` if unknown)."""
    if name in node.kwargs:
        return node.kwargs[name]
    signature = _signature(node.target)
    if signature is None or name not in signature.parameters:
        return None
    try:
        bound = signature.bind(*node.args, **node.kwargs)
    except TypeError:
        return None
    return bound.arguments.get(name)


def mutates(node: fx.Node) -> bool:
    """True if ``node`` may write a tensor in place (see the module docstring)."""
    if node.op == "call_method":
        name = node.target
        return isinstance(name, str) and (_inplace_name(name) or name in _INPLACE_DUNDERS)
    if node.op == "call_module":
        return True  # opaque
    if node.op != "call_function":
        return False
    target = node.target
    if target in _INPLACE_OPERATORS or _is_mutable_op(target):
        return True
    if node.kwargs.get("out") is not None or _bound_flag(node, "inplace") is True:
        return True
    name = getattr(target, "__name__", "")
    if isinstance(name, str) and (_inplace_name(name) or name in _INPLACE_DUNDERS):
        return True
    module = getattr(target, "__module__", None)
    return isinstance(module, str) and not module.split(".")[0] in _KNOWN_MODULES


def _is_mode_switch(node: fx.Node) -> bool:
    """``_enter_*`` / ``_exit_*`` calls of context managers Dynamo keeps in the graph
    (``inference_mode``, autocast, ...): a region never spans one."""
    name = getattr(node.target, "__name__", "") if node.op == "call_function" else ""
    return isinstance(name, str) and (name.startswith("_enter_") or name.startswith("_exit_"))


def is_barrier(node: fx.Node) -> bool:
    """True if no computation may be moved across ``node``."""
    if node.op in ("placeholder", "output", "get_attr"):
        return False
    return mutates(node) or _is_mode_switch(node) or node.is_impure()


def _is_set_grad(node: fx.Node) -> bool:
    return (node.op == "call_function" and node.target is torch._C._set_grad_enabled
            and len(node.args) == 1 and isinstance(node.args[0], bool))


def _autocast_enter(node: fx.Node) -> tuple[str, torch.dtype | None] | None:
    """``(device_type, dtype or None when disabled)`` of an ``_enter_autocast`` node."""
    if node.op != "call_function" or node.target is not torch.amp.autocast_mode._enter_autocast:
        return None
    args = list(node.args) + [None] * 4
    device, dtype, enabled = args[0], args[1], args[2]
    if not isinstance(device, str):
        return None
    if enabled is False:
        return device, None
    if not isinstance(dtype, torch.dtype):
        dtype = torch.get_autocast_dtype(device)
    return device, dtype


def _is_autocast_exit(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.amp.autocast_mode._exit_autocast


@dataclass(frozen=True)
class Barrier:
    """Why code cannot move between two positions: a node, or a state change."""

    node: fx.Node | None
    reason: str


class GraphState:
    """Grad mode, autocast state and barriers at every position of a graph.

    Args:
        graph: the FX graph.
        entry_grad_mode: the grad mode on entry (the one Dynamo traced and
            guards the graph under: the ambient mode while the backend runs,
            or the mode at the higher-order op calling a subgraph).
        entry_autocast: the autocast state on entry (likewise).
    """

    def __init__(self, graph: fx.Graph, entry_grad_mode: bool,
                 entry_autocast: AutocastState | None = None) -> None:
        self.order: dict[fx.Node, int] = {}
        self._grad: list[bool] = []
        self._autocast: list[AutocastState] = []
        self._barriers: list[int] = []  # positions of barrier nodes
        self._nodes: list[fx.Node] = []
        self._reaching: set[fx.Node] | None = None  # built by carries_gradient
        grad = entry_grad_mode
        autocast = entry_autocast if entry_autocast is not None else ambient_autocast()
        stack: list[AutocastState] = []
        for i, node in enumerate(graph.nodes):
            self.order[node] = i
            self._nodes.append(node)
            self._grad.append(grad)
            self._autocast.append(autocast)
            if _is_set_grad(node):
                grad = node.args[0]
                continue
            entered = _autocast_enter(node)
            if entered is not None:
                stack.append(autocast)
                autocast = tuple((d, entered[1] if d == entered[0] else t) for d, t in autocast)
            elif _is_autocast_exit(node) and stack:
                autocast = stack.pop()
            if is_barrier(node):
                self._barriers.append(i)

    def carries_gradient(self, node: fx.Node) -> bool:
        """Whether a gradient from the graph's outputs can reach ``node``'s value: some path from it
        to the output runs through values that may carry one (floating or complex), under grad mode,
        and through no ``detach``. Conservative: a barrier (an in-place write such as
        ``buf[i] = v`` or ``x.add_(v)``, whose node has no users, a higher-order op, an opaque
        call) and a call without an example value are assumed to pass the gradient on."""
        if self._reaching is None:
            reaching: set[fx.Node] = set()
            for user in reversed(self._nodes):  # users come after their inputs
                if user.op == "output" or (self.grad_mode_at(user) and is_barrier(user)):
                    reaching.update(user.all_input_nodes)
                elif (user in reaching and self.grad_mode_at(user) and not _detaches(user)
                      and _may_carry_gradient(user)):
                    reaching.update(user.all_input_nodes)
            self._reaching = reaching
        return node in self._reaching

    def grad_mode_at(self, node: fx.Node) -> bool:
        """The grad mode in effect when ``node`` runs."""
        return self._grad[self.order[node]]

    def autocast_at(self, node: fx.Node, device_type: str) -> torch.dtype | None:
        """The autocast dtype for ``device_type`` in effect when ``node`` runs (``None``: off)."""
        return dict(self._autocast[self.order[node]]).get(device_type)

    def autocast_state_at(self, node: fx.Node) -> AutocastState:
        """The autocast state of every tracked device in effect when ``node`` runs."""
        return self._autocast[self.order[node]]

    def barrier(self, nodes: Iterable[fx.Node], anchor: fx.Node) -> Barrier | None:
        """Why ``nodes`` may not be evaluated at ``anchor`` instead of where they are, or ``None``.

        Nodes of ``nodes`` themselves are not barriers to each other (a
        region's own nodes); anything else strictly between a node and the
        anchor is.
        """
        nodes = list(nodes)
        own = {self.order[n] for n in nodes}
        a = self.order[anchor]
        for node in nodes:
            i = self.order[node]
            if self._grad[i] != self._grad[a]:
                return Barrier(None, "a grad-mode change")
            if self._autocast[i] != self._autocast[a]:
                return Barrier(None, "an autocast change")
            lo, hi = min(i, a), max(i, a)
            k = bisect.bisect_right(self._barriers, lo)
            while k < len(self._barriers) and self._barriers[k] < hi:
                if self._barriers[k] not in own:
                    found = self._nodes[self._barriers[k]]
                    kind = "in-place/mutating" if mutates(found) else "side-effecting"
                    return Barrier(found, f"{kind} node {found.name!r} ({target_name(found)})")
                k += 1
        return None

