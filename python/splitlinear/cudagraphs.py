"""CUDA graphs for ``fallback="eager"``: the rewritten graph replayed through cudagraph trees.

With ``fallback="inductor"`` a ``mode`` that enables CUDA graphs (``"reduce-overhead"``,
``"max-autotune"``) is Inductor's business: :mod:`splitlinear.backend` hands Inductor the
configuration ``backend="inductor"`` would get. With ``fallback="eager"`` nothing is generated, so
this module does what Dynamo's stock ``"cudagraphs"`` backend does (AOTAutograd, then Inductor's
cudagraph trees around the forward, backward and inference graphs, each run as is), with one
difference that matters here: **parameters are static inputs**. The stock backend counts as static
only the inputs AOTAutograd lifted, which is none when Dynamo inlines ``nn.Module`` s (the default);
cudagraph trees then copy every parameter into a graph-owned buffer before each replay. That would
copy the weights on every call, and the copies are separate buffers, so the split-linear op would
never see adjacent parts. Here the static indices are AOTAutograd's ``static_input_indices`` (the
parameters and buffers), the rule Inductor uses.

Contract when a parameter's storage changes after a graph was recorded (``p.data = ...``,
``load_state_dict(assign=True)``, an optimizer that replaces tensors): cudagraph trees compare the
static inputs' data pointers before each replay and re-record on a change
(``torch._dynamo.config.inline_inbuilt_nn_modules``, the default), so the op runs again and decides
adjacency for the new storage. ``load_state_dict`` without ``assign`` copies in place: same
addresses, new values, nothing to re-record. ``.to(dtype/device)`` fails Dynamo's guards and
recompiles.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as fx

__all__ = ["compile_eager_with_cudagraphs", "recorded_graph_count"]


def compile_eager_with_cudagraphs(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """Compile ``gm`` (a rewritten Dynamo graph) to run eagerly inside CUDA graphs.

    Args:
        gm: the Dynamo graph after the split-linear rewrite (torch-level ops).
        example_inputs: its example inputs (parameters first, as Dynamo passes them).

    Returns:
        The AOTAutograd-compiled callable; its forward, backward and inference graphs replay
        through cudagraph trees, or run as plain graphs where cudagraph trees cannot take them
        (CPU tensors, input mutation, incompatible ops: logged as a ``cudagraph_skips`` counter,
        as Inductor does).
    """
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.cudagraphs import (
        check_for_skip,
        find_input_mutations,
        get_device_index,
        get_stack_traces,
    )
    from torch._dynamo.backends.debugging import boxed_nop
    from torch._inductor.compile_fx import get_static_input_idxs
    from torch._inductor.cudagraph_trees import cudagraphify_impl, get_manager
    from torch._inductor.cudagraph_utils import (
        BoxedDeviceIndex,
        get_placeholder_info,
        log_cudagraph_skip_and_bump_counter,
    )
    from torch._inductor.utils import BoxedBool, count_tangents, num_fw_fixed_arguments

    enabled = BoxedBool(True)
    device_index = BoxedDeviceIndex(None)

    def graphed(aot_model: fx.GraphModule, aot_inputs: list[Any], static: Sequence[int],
                *, is_backward: bool, is_inference: bool) -> Callable[..., Any]:
        out = cudagraphify_impl(
            boxed_nop(aot_model, aot_inputs),
            aot_inputs,
            static,
            device_index=device_index.value,
            is_backward=is_backward,
            is_inference=is_inference,
            stack_traces=get_stack_traces(aot_model),
            placeholders=get_placeholder_info(aot_model.graph),
            mutated_input_idxs=find_input_mutations(aot_model.graph),
        )
        out._boxed_call = True  # type: ignore[attr-defined]
        return out

    def forward(aot_model: fx.GraphModule, aot_inputs: list[Any], is_inference: bool = False) -> Callable[..., Any]:
        fixed = num_fw_fixed_arguments(len(example_inputs), len(aot_inputs))
        if skip := check_for_skip(aot_model, fixed):
            BoxedBool.disable(enabled)
            log_cudagraph_skip_and_bump_counter(f"skipping cudagraphs due to {skip}")
            return boxed_nop(aot_model, aot_inputs)
        device_index.set(get_device_index(aot_model))
        # Parameters static (see the module docstring): AOT's static_input_indices.
        static = get_static_input_idxs(fixed)
        return graphed(aot_model, aot_inputs, static, is_backward=False, is_inference=is_inference)

    def backward(aot_model: fx.GraphModule, aot_inputs: list[Any]) -> Callable[..., Any]:
        if not enabled:
            return boxed_nop(aot_model, aot_inputs)
        fixed = count_tangents(aot_model)  # saved tensors are static, tangents are not
        if skip := check_for_skip(aot_model, fixed):
            log_cudagraph_skip_and_bump_counter(f"skipping cudagraphs due to {skip}")
            manager = get_manager(device_index.value or 0, create_if_none_exists=False)
            plain = boxed_nop(aot_model, aot_inputs)

            def run(inputs: list[Any]) -> Any:
                # The forward ran inside the tree; tell it the backward runs outside.
                if manager is not None:
                    manager.set_to_running_backward()
                return plain(inputs)

            run._boxed_call = True  # type: ignore[attr-defined]
            return run
        return graphed(aot_model, aot_inputs, range(fixed), is_backward=True, is_inference=False)

    compiler = aot_autograd(
        fw_compiler=forward,
        bw_compiler=backward,
        inference_compiler=functools.partial(forward, is_inference=True),
        keep_inference_input_mutations=torch._dynamo.config.cudagraph_backend_keep_input_mutation,
    )
    return compiler(gm, list(example_inputs))


def recorded_graph_count(device_index: int = 0) -> int:
    """How many CUDA graphs cudagraph trees hold for ``device_index`` (0 before any).

    For tests and benchmarks: a re-record after a parameter's storage changed adds one.
    """
    from torch._inductor.cudagraph_trees import get_manager

    manager = get_manager(device_index, create_if_none_exists=False)
    if manager is None or manager.roots is None:
        return 0
    count = 0
    pending = [node for nodes in manager.roots.values() for node in nodes]
    while pending:
        node = pending.pop()
        count += 1
        pending.extend(child for nodes in node.children.values() for child in nodes)
    return count
