"""The data model of the FX rewrite, and how values are read off graph nodes.

A :class:`LinearSite` is one node computing ``input @ weight.T (+ bias)``;
analysis fills its :class:`PartRef` parts. A :class:`Region` is the sites one
op call replaces, a :class:`Rejection` a candidate left alone with the reason,
and a :class:`Plan` what :func:`~splitlinear.fx.plan.plan_regions` decided.

The accessors below read the example values Dynamo (``example_value``) or a
fake-tensor propagation (``val``) recorded on nodes; every module of the
package reads shapes, dtypes and devices through them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
from torch.fx.experimental.symbolic_shapes import is_concrete_int

#: The op placed in the graph: ``linear_fn(x, [W_0, ...], [b_0, ...] | None) -> Tensor``.
LinearFn = Callable[..., torch.Tensor]


# ---------------------------------------------------------------------------
# Reading nodes
# ---------------------------------------------------------------------------


def node_value(node: Any) -> Any:
    """The example value Dynamo (``example_value``) or a fake propagation (``val``) recorded.

    A non-node (a constant argument) is returned as is; a node without either
    entry gives ``None``.
    """
    if not isinstance(node, fx.Node):
        return node
    if "example_value" in node.meta:
        return node.meta["example_value"]
    return node.meta.get("val")


def node_tensor(node: Any) -> torch.Tensor | None:
    """:func:`node_value` if it is a (real or fake) tensor, else ``None``."""
    value = node_value(node)
    return value if isinstance(value, torch.Tensor) else None


def node_arg(node: fx.Node, index: int, name: str, default: Any = None) -> Any:
    """Argument ``index`` of the call, or keyword ``name``, or ``default``."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def static_int(value: Any) -> int | None:
    """``value`` as a Python int if it is a concrete (non-symbolic) size, else ``None``."""
    if isinstance(value, int):
        return value
    if isinstance(value, torch.SymInt) and is_concrete_int(value):
        return int(value)
    return None


def target_name(node: fx.Node) -> str:
    """A readable name of what ``node`` calls, for messages (``Tensor.mul_``, ``torch.cat``)."""
    target = node.target
    if isinstance(target, str):
        return target if node.op != "call_method" else f"Tensor.{target}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or str(target)
    return f"{module}.{name}" if module else name


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
    #: The grad mode in effect where the site runs.
    grad_mode: bool = True

    def describe(self) -> str:
        """``"<form> node '<name>'"``, for logs."""
        return f"{self.form} node {self.out.name!r}"


@dataclasses.dataclass
class Region:
    """Sites replaced by one op call (one site: vertical; several: horizontal)."""

    sites: list[LinearSite]

    @property
    def kind(self) -> str:
        """``"vertical"`` (one site over a ``torch.cat``) or ``"horizontal"`` (siblings)."""
        return "horizontal" if len(self.sites) > 1 else "vertical"

    @property
    def input(self) -> fx.Node:
        """The ``[..., K]`` input node every site reads."""
        return self.sites[0].input

    @property
    def weight_parts(self) -> list[PartRef]:
        """The op's weight parts, site after site."""
        return [p for s in self.sites for p in s.weight_parts]

    @property
    def bias_parts(self) -> list[PartRef] | None:
        """The op's bias parts (``None``: the sites have no bias)."""
        if self.sites[0].bias_parts is None:
            return None
        return [p for s in self.sites for p in (s.bias_parts or [])]

    def describe(self) -> str:
        """``"<kind> region [<names>] with <n> parts"``, for logs."""
        names = ", ".join(repr(s.out.name) for s in self.sites)
        return f"{self.kind} region [{names}] with {len(self.weight_parts)} parts"


@dataclasses.dataclass(frozen=True)
class Rejection:
    """A candidate left to the fallback, with the reason."""

    node: fx.Node
    reason: str

    def message(self) -> str:
        """``"node '<name>' (<target>): <reason>"``, for logs and strict-mode errors."""
        return f"node {self.node.name!r} ({target_name(self.node)}): {self.reason}"


@dataclasses.dataclass
class Plan:
    """Result of :func:`~splitlinear.fx.plan.plan_regions`."""

    regions: list[Region]
    rejections: list[Rejection]
    skipped: list[str]  # policy skips (min_parts), logged but not counted
    serving_groups: int = 0  # groups of FP8 serving linears fused (fx/serving.py)
