"""Inductor's compile caches keyed on the op library's build.

Inductor's FX graph cache and the AOTAutograd cache key a compiled graph on
its code, torch and the Inductor config, not on the op library, yet what the
library does at trace time (its fake, Autocast and Autograd kernels decide the
shapes, the casts and the backward ops baked into the compiled graph) is
specific to its build: after an upgrade a cached graph would keep the old
behaviour. Inductor's config ``unsafe_marked_cacheable_functions`` maps a
function called in the graph to a cache key: AOTAutogradCache then accepts the
function (it bypasses graphs calling an unlisted Python function, such as
``splitlinear.ops.linear``), and both caches hash the Inductor config
(``FxGraphHashDetails`` in ``torch/_inductor/codecache.py``;
``AOTAutogradCacheDetails`` extends it). The backend maps ``ops.linear`` to
:func:`~splitlinear._library.build_id` there, and the FP8 graph functions
(:mod:`splitlinear.fx.fp8`, option ``fp8``) to the build id and their recipe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _library

#: The Inductor config entry: ``{"module.function": cache key}``.
_CONFIG_KEY = "unsafe_marked_cacheable_functions"


def keyed_on_build(patches: Mapping[str, Any]) -> dict[str, Any]:
    """Inductor config ``patches`` under which a graph calling ``splitlinear.ops.linear`` is cached
    (by both caches) under keys that include the op library's build id.

    Functions the patches (or else the global config) already mark stay marked.

    Raises:
        RuntimeError: the op library is not found (only a graph that calls it needs this).
    """
    from torch._inductor import config

    from . import ops
    from .fx import fp8

    marked = dict(patches.get(_CONFIG_KEY, getattr(config, _CONFIG_KEY)))
    build = _library.build_id()
    marked[f"{ops.linear.__module__}.{ops.linear.__name__}"] = build
    for (recipe, cached), fn in fp8.GRAPH_FNS.items():
        # The FP8 functions' keys also name their recipe: an fp8 and a bf16 compile of one
        # model never share an entry (their graphs differ too; this does not rely on it).
        marked[f"{fn.__module__}.{fn.__name__}"] = f"{build}+fp8={recipe}+cache={int(cached)}"
    return {**patches, _CONFIG_KEY: marked}
