"""Helpers shared by the tests: compilation, counters, tolerances."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

import splitlinear

#: (rtol, atol) comparing a result in this dtype against a float64 reference.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-10, 1e-10),
    torch.bfloat16: (3e-2, 3e-2),
    torch.float16: (5e-3, 5e-3),
}


def compile_sl(model: Callable[..., Any], *, fallback: str = "eager", fullgraph: bool = True,
               **options: Any) -> Callable[..., Any]:
    """``torch.compile`` with the splitlinear backend (by name, through the entry point)."""
    return torch.compile(model, backend="splitlinear", fullgraph=fullgraph,
                         options={"fallback": fallback, **options})


def graphs() -> int:
    """Graphs compiled by the splitlinear backend so far (first compiles plus recompiles)."""
    return splitlinear.stats()["graphs_compiled"]


def graph_breaks() -> int:
    return sum(torch._dynamo.utils.counters["graph_break"].values())


def assert_close_to(actual: torch.Tensor, reference: torch.Tensor, dtype: torch.dtype,
                    scale: float = 1.0) -> None:
    """Compare ``actual`` (computed in ``dtype``) with a float64 ``reference``."""
    rtol, atol = TOLERANCES[dtype]
    torch.testing.assert_close(actual.double(), reference.double(), rtol=rtol, atol=atol * scale)


def grads(params: Mapping[str, torch.nn.Parameter]) -> dict[str, torch.Tensor | None]:
    return {name: None if p.grad is None else p.grad.detach().clone() for name, p in params.items()}


def randn(*shape: int, dtype: torch.dtype = torch.float32, device: str = "cpu",
          scale: float = 1.0) -> torch.Tensor:
    """Standard-normal data (never zeros) times ``scale``."""
    return (torch.randn(*shape, dtype=torch.float64) * scale).to(dtype=dtype, device=device)


def op_runs() -> int:
    """Calls of the op library so far, whichever way it combined the parts."""
    stats = splitlinear.stats()
    return stats["views"] + stats["cats"] + stats["per_part_gemms"]


def non_view_runs() -> int:
    """Calls whose parts were not adjacent: a materialized concat or one GEMM per part."""
    stats = splitlinear.stats()
    return stats["cats"] + stats["per_part_gemms"]
