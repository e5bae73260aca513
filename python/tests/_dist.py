"""Run a test body on several CPU processes (gloo), started from pytest itself."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _entry(rank: int, world_size: int, store: str, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    try:
        fn(*args)
    finally:
        dist.destroy_process_group()
    # The body passed. Leave without the interpreter's teardown: about one run in six of the
    # FSDP2 layout test aborted there ("terminate called without an active exception", no
    # Python frame on any thread: a native thread still joinable at exit), which mp.spawn
    # reports as a failure although every assertion held. A failing body raises above instead.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def cpu_mesh() -> Any:
    """A 1-D CPU device mesh over the process group: FSDP2 without a mesh shards onto the
    accelerator when the machine has one, while these tests compare against CPU tensors."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", (dist.get_world_size(),))


def spawn(fn: Callable[..., None], tmp_path: Path, *args: Any, world_size: int = 2) -> None:
    """Runs ``fn(*args)`` on ``world_size`` processes in one gloo process group.

    ``fn`` must be a module-level function (it is pickled by name). An assertion
    or exception on any rank fails the caller with that rank's traceback."""
    store = tmp_path / "store"
    mp.spawn(_entry, args=(world_size, str(store), fn, args), nprocs=world_size, join=True)
