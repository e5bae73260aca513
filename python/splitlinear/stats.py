"""Counters of the backend, merged with the op library's run-time counters.

Backend counters (this module, counted at compile time):

- ``graphs_compiled``: Dynamo graphs handed to the backend;
- ``regions_matched``: regions replaced by one ``splitlinear.ops.linear`` call;
- ``linears_fused``: original linear/matmul nodes those regions replaced;
- ``candidates_rejected``: candidate regions left to the fallback (each logged
  at DEBUG with its reason);
- ``serving_groups_fused``: groups of sibling FP8 serving linears
  (:mod:`splitlinear.serving`) given one activation quantization and one scaled GEMM;
- ``kernels_precompiled``: kernels the op library JIT-compiled while the
  backend compiled a graph (its ``precompile`` step). With ``compiles`` (all
  kernel compiles) it shows whether any kernel was compiled later, inside a
  first forward or backward;
- ``graphs_run_eagerly``: graphs left with nothing but op calls, run eagerly
  under ``fallback="inductor"`` (:mod:`splitlinear.fx.residue`);
- ``narrow_grads_concatenated``: gradients of an op output's narrows, summed as blocks of zeros,
  rewritten into one concatenation (:mod:`splitlinear.grad_concat`).

Run-time counters (``splitlinear.ops.runtime_counters()``, counted by the op
library at every call): ``views`` (parts were adjacent: no copy), ``cats``
(a concat was materialized), ``per_part_gemms``, ``compiles``; the same three
paths for the input gradient (``dgrad_views``, ``dgrad_cats``,
``dgrad_per_part_gemms``) and for the FP8 GEMMs of ``scaled_linear`` and
``fp8_linear`` (``scaled_views``, ``scaled_cats``, ``scaled_per_part_gemms``).
"""

from __future__ import annotations

import threading
from types import ModuleType

_BACKEND_KEYS = ("graphs_compiled", "regions_matched", "linears_fused", "candidates_rejected",
                 "serving_groups_fused", "kernels_precompiled", "graphs_run_eagerly",
                 "narrow_grads_concatenated")

_lock = threading.Lock()
_counters: dict[str, int] = dict.fromkeys(_BACKEND_KEYS, 0)


def bump(key: str, amount: int = 1) -> None:
    """Add ``amount`` to backend counter ``key``.

    Raises:
        KeyError: ``key`` is not a backend counter.
    """
    with _lock:
        if key not in _counters:
            raise KeyError(f"splitlinear.stats: unknown counter {key!r}; known: {list(_BACKEND_KEYS)}")
        _counters[key] += amount


def backend_counters() -> dict[str, int]:
    """A snapshot of the backend (compile-time) counters."""
    with _lock:
        return dict(_counters)


def _ops_module() -> ModuleType | None:
    """``splitlinear.ops`` if the op library can be loaded, else ``None``."""
    try:
        from . import ops
    except (ImportError, OSError, RuntimeError) as exc:
        from ._logging import logger  # here: torch._logging imports torch, and `import splitlinear` must not

        logger.debug("splitlinear.stats: op library unavailable (%s); run-time counters omitted", exc)
        return None
    return ops


def stats() -> dict[str, int]:
    """All counters: the backend's merged with ``splitlinear.ops.runtime_counters()``.

    Returns:
        A new dict ``{name: count}``.  The run-time keys (``views``, ``cats``,
        ``per_part_gemms``, ``compiles``, the kernel cache's,
        ``dgrad_views``, ``dgrad_cats``, ``dgrad_per_part_gemms``, and the FP8
        GEMMs' ``scaled_views``, ``scaled_cats``, ``scaled_per_part_gemms``; see
        :func:`splitlinear.ops.runtime_counters`) are present when the op
        library can be loaded; they are omitted (not zero) when it cannot.
    """
    merged = backend_counters()
    ops = _ops_module()
    if ops is not None:
        merged.update(ops.runtime_counters())
    return merged


def reset_stats() -> None:
    """Zero the backend counters and (when loadable) the op library's run-time counters."""
    with _lock:
        for key in _counters:
            _counters[key] = 0
    ops = _ops_module()
    if ops is not None:
        ops.reset_runtime_counters()
