"""What a rewritten graph leaves for the fallback compiler.

When every node of a rewritten Dynamo graph is a splitlinear op call, a view of an op's output
(``torch.narrow``, ``torch.split`` and ``getitem``) or the ``.contiguous()`` the rewrite puts
after a view whose strides are observable, Inductor has nothing to fuse or schedule in
it: compiling it only wraps the op in AOTAutograd's runtime (a Python ``autograd.Function`` around
the op's own C++ autograd node, its backward graph, and the generated Python wrapper), which costs
host time on every call. The backend runs such a graph eagerly instead (:func:`only_op_calls`).
A training step (forward and backward) of one split linear, x ``[16, 8192]``, parts ``[8192]`` ×3,
run eagerly took 0.346 ms on the H200 against 0.805 ms through Inductor, the op alone 0.335 ms
(``bench/tools/cudagraphs_decode.py --skip-models --groups base``); on a 2-core CPU (parts
``[64, 32, 32]``, K 64, x ``[16, 64]``) 61.5 µs against 133.3 µs, the op alone 55.4 µs.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

if TYPE_CHECKING:
    from ..options import SplitLinearOptions

__all__ = ["only_op_calls", "runs_eagerly"]

#: Targets that only view an op's output (what the rewrite inserts after a call).
_VIEWS: frozenset[Any] = frozenset({torch.narrow, torch.split, operator.getitem})

#: Tensor methods the rewrite inserts after a view (``fx.rewrite``: dense graph outputs).
_METHODS: frozenset[str] = frozenset({"contiguous"})


def _graph_fns() -> frozenset[Any]:
    """The Python functions the rewrite places in graphs (``splitlinear.ops.linear`` and the
    FP8 graph functions); importing them loads the op library, which a rewrite has done."""
    from .. import ops
    from .fp8 import GRAPH_FNS

    return frozenset({ops.linear, *GRAPH_FNS.values()})


def _is_op(target: Any, graph_fns: frozenset[Any]) -> bool:
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return target.namespace == "splitlinear"
    return target in graph_fns


def only_op_calls(gm: fx.GraphModule) -> bool:
    """Whether ``gm``'s graph calls at least one splitlinear op and holds nothing else but
    placeholders, views of op outputs (:data:`_VIEWS`), ``.contiguous()`` calls (:data:`_METHODS`)
    and the output.

    Any other node (an ATen or torch op, a method call, a submodule or a higher-order op such as
    activation checkpointing, a grad-mode or autocast switch) makes it ``False``: then the graph
    goes to the fallback compiler as asked.
    """
    graph_fns = _graph_fns()
    calls = 0
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op == "call_method" and node.target in _METHODS and not node.kwargs:
            continue
        if node.op != "call_function":
            return False
        if _is_op(node.target, graph_fns):
            calls += 1
        elif node.target not in _VIEWS:
            return False
    return calls > 0


def _compiled_autograd_on() -> bool:
    """Whether compiled autograd is on (its config flag, or inside its ``_enable``). It cannot
    trace the op's own backward node, which an eagerly run graph leaves in the autograd graph."""
    from torch._dynamo import compiled_autograd

    return bool(torch._dynamo.config.compiled_autograd or compiled_autograd.compiled_autograd_enabled)


def runs_eagerly(gm: fx.GraphModule, options: SplitLinearOptions) -> bool:
    """Whether the backend runs the rewritten ``gm`` eagerly although ``options.fallback`` is
    ``"inductor"``: it holds only op calls (:func:`only_op_calls`), the mode uses no CUDA graphs
    (cudagraph trees record what Inductor compiles), and compiled autograd is off when the graph
    is compiled (it traces AOTAutograd's backward, not the op's C++ node; turned on later, its
    backward raises the op's error naming this)."""
    return (options.fallback == "inductor" and not options.cudagraphs and not _compiled_autograd_on()
            and only_op_calls(gm))
