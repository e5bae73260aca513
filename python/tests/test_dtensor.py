"""DTensor inputs to the eager op on one rank: a sharding rule or a clear error naming the op.

Two-rank cases (every rule, gradients, the compiled TP path) are in
``test_tensor_parallel.py``.
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


@pytest.mark.parametrize("which", ["input", "weights"])
def test_mixed_dtensor_and_tensor_operands_raise_naming_the_op(op: object, one_rank_mesh: object,
                                                               which: str) -> None:
    from torch.distributed.tensor import Replicate, distribute_tensor

    x = torch.randn(4, 8)
    ws = [torch.randn(n, 8) for n in (3, 5)]
    if which == "input":
        x = distribute_tensor(x, one_rank_mesh, [Replicate()])
    else:
        ws = [distribute_tensor(w, one_rank_mesh, [Replicate()]) for w in ws]
    with pytest.raises((NotImplementedError, RuntimeError, ValueError), match="splitlinear[.:]+linear"):
        op.linear(x, ws)


def test_replicated_dtensors_match_f_linear(op: object, one_rank_mesh: object) -> None:
    from torch.distributed.tensor import Replicate, distribute_tensor

    x = torch.randn(4, 8, dtype=torch.float64)
    ws = [torch.randn(n, 8, dtype=torch.float64) for n in (3, 5)]
    bs = [torch.randn(n, dtype=torch.float64) for n in (3, 5)]
    dist_ = [distribute_tensor(t, one_rank_mesh, [Replicate()]) for t in (x, *ws, *bs)]
    y = op.linear(dist_[0], dist_[1:3], dist_[3:])
    assert tuple(y.placements) == (Replicate(),)
    torch.testing.assert_close(y.to_local(), torch.nn.functional.linear(x, torch.cat(ws), torch.cat(bs)))


def test_colwise_sharded_parts_raise_naming_op_and_placements(op: object, one_rank_mesh: object) -> None:
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    x = distribute_tensor(torch.randn(4, 8), one_rank_mesh, [Replicate()])
    ws = [distribute_tensor(torch.randn(n, 8), one_rank_mesh, [Shard(0)]) for n in (3, 5)]
    with pytest.raises(RuntimeError, match=r"splitlinear.linear: 2 weight parts sharded Shard\(0\).*Shard\(dim=0\)"):
        op.linear(x, ws)


def test_compiled_siblings_with_different_placements_are_left_unfused(op: object, one_rank_mesh: object) -> None:
    """A q sharded Shard(0) next to a replicated k: the input gradient would need two placements."""
    import torch.nn as nn
    from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    import splitlinear

    class Siblings(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k = nn.Linear(8, 4, bias=False), nn.Linear(8, 6, bias=False)
            for lin, placement in ((self.q, Shard(0)), (self.k, Replicate())):
                lin.weight = nn.Parameter(distribute_tensor(lin.weight.detach(), one_rank_mesh, [placement]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            xd = DTensor.from_local(x, one_rank_mesh, [Replicate()], run_check=False)
            return torch.cat([self.q(xd).to_local(), self.k(xd).to_local()], -1)

    model = Siblings()
    x = torch.randn(3, 8)
    with pytest.raises(RuntimeError, match="different placements"):
        torch.compile(model, backend="splitlinear", fullgraph=True,
                      options={"strict": True, "fallback": "eager"})(x)
    torch._dynamo.reset()
    out = torch.compile(model, backend="splitlinear", fullgraph=True, options={"fallback": "eager"})(x)
    assert splitlinear.stats()["regions_matched"] == 0
    torch.testing.assert_close(out, torch.cat([x @ model.q.weight.full_tensor().T,
                                               x @ model.k.weight.full_tensor().T], -1))


def test_compiled_dtensor_siblings_refuse_the_fp8_option(op: object, one_rank_mesh: object) -> None:
    """fp8 is not built for the DTensor rewrite: compiling raises naming the option, never runs bf16."""
    import torch.nn as nn
    from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    class Siblings(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k = nn.Linear(32, 16, bias=False), nn.Linear(32, 16, bias=False)
            for lin in (self.q, self.k):
                lin.weight = nn.Parameter(distribute_tensor(lin.weight.detach(), one_rank_mesh, [Shard(0)]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            xd = DTensor.from_local(x, one_rank_mesh, [Replicate()], run_check=False)
            return torch.cat([self.q(xd).to_local(), self.k(xd).to_local()], -1)

    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"backend option fp8='tensorwise' is not supported with DTensor"):
        torch.compile(Siblings(), backend="splitlinear", fullgraph=True,
                      options={"fp8": "tensorwise", "fallback": "eager"})(torch.randn(16, 32))


def test_pack_skips_weakly_referenced_dtensor_parameters(one_rank_mesh: object) -> None:
    """Packing swaps a new DTensor into each Parameter object (torch.utils.swap_tensors), which
    weakly referenced tensors refuse: the group is skipped with the reason, before any member moves."""
    import weakref

    import torch.nn as nn
    from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

    import splitlinear

    model = nn.Module()
    model.q_proj, model.k_proj, model.v_proj = nn.Linear(8, 4), nn.Linear(8, 2), nn.Linear(8, 2)
    parallelize_module(model, one_rank_mesh, {n: ColwiseParallel() for n in ("q_proj", "k_proj", "v_proj")})
    before = {k: v.full_tensor().clone() for k, v in model.state_dict().items()}
    ref = weakref.ref(model.k_proj.weight)
    report = splitlinear.pack_parameters(model)
    assert report.packed == [] and "weakly referenced" in report.skipped[0][1]
    assert ref() is model.k_proj.weight
    assert all(torch.equal(before[k], v.full_tensor()) for k, v in model.state_dict().items())
    del ref
    report = splitlinear.pack_parameters(model)
    assert report.packed == [["q_proj", "k_proj", "v_proj"]]
    shards = [getattr(model, n).weight.to_local() for n in ("q_proj", "k_proj", "v_proj")]
    assert all(b.data_ptr() == a.data_ptr() + a.nbytes for a, b in zip(shards, shards[1:]))
    assert all(torch.equal(before[k], v.full_tensor()) for k, v in model.state_dict().items())
