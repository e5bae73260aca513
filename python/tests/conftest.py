"""Shared fixtures for the splitlinear Python tests.

Tests that run ``torch.ops.splitlinear.*`` request the ``op`` fixture: it skips
when the op library is absent, unless ``SPLITLINEAR_REQUIRE_OP`` is set (CI),
where a missing library fails the test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

# pytest-xdist: one Inductor cache per worker (two processes compiling into one
# cache directory race on its files).
if (worker := os.environ.get("PYTEST_XDIST_WORKER")) and (cache := os.environ.get("TORCHINDUCTOR_CACHE_DIR")):
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, worker)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _load_ops() -> tuple[object | None, BaseException | None]:
    try:
        import splitlinear.ops as ops
    except (ImportError, OSError, RuntimeError) as exc:
        return None, exc
    return ops, None


@pytest.fixture
def op() -> object:
    """``splitlinear.ops`` (the real op library); skip or fail when it is absent."""
    ops, exc = _load_ops()
    if ops is None:
        if os.environ.get("SPLITLINEAR_REQUIRE_OP"):
            pytest.fail(f"SPLITLINEAR_REQUIRE_OP is set but the op library cannot be loaded: {exc}")
        pytest.skip(f"op library not available: {exc}")
    return ops


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(autouse=True)
def _fresh_state() -> Iterator[None]:
    """Every test starts with no compiled code and zeroed counters."""
    import splitlinear

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    splitlinear.reset_stats()
    yield
    torch._dynamo.reset()
