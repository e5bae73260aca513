"""DTensor inputs (tensor parallelism) to the op: a clear error naming the op, never a wrong result.

The op has no DTensor sharding rule yet. FSDP2 is not concerned: it all-gathers
its sharded Parameters into plain tensors before the forward runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist


@pytest.fixture
def one_rank_mesh(tmp_path: Path) -> Iterator[object]:
    """A one-rank gloo process group and a CPU device mesh over it."""
    from torch.distributed.device_mesh import init_device_mesh

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("which", ["input", "weights", "all"])
def test_dtensor_operands_raise_naming_the_op(op: object, one_rank_mesh: object, which: str) -> None:
    from torch.distributed.tensor import Replicate, distribute_tensor

    x = torch.randn(4, 8)
    ws = [torch.randn(n, 8) for n in (3, 5)]
    if which in ("input", "all"):
        x = distribute_tensor(x, one_rank_mesh, [Replicate()])
    if which in ("weights", "all"):
        ws = [distribute_tensor(w, one_rank_mesh, [Replicate()]) for w in ws]
    with pytest.raises((NotImplementedError, RuntimeError, ValueError), match="splitlinear[.:]+linear"):
        op.linear(x, ws)
