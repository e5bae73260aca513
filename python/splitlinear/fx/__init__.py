"""Find split-linear regions in a Dynamo FX graph and replace them with one op call.

Two kinds of region are recognized on the torch-level graph Dynamo hands to a
backend (``torch.cat``, ``torch._C._nn.linear``, ``operator.matmul``, ...):

* **vertical**: a linear whose weight and/or bias is a ``torch.cat`` along
  dim 0 of separate tensors (TransformerEngine ``parameters_split`` style)::

      F.linear(x, torch.cat([wq, wk, wv]), torch.cat([bq, bk, bv]))

* **horizontal**: two or more linears reading the same input (q/k/v, gate/up
  projections), all with a bias or all without::

      q_proj(x), k_proj(x), v_proj(x)

A region becomes one call ``linear_fn(x, [W_0, ..., W_{n-1}], [b_0, ...,
b_{n-1}] | None)`` (in the backend ``splitlinear.ops.linear``). The parts are
passed as they are; whether they are adjacent in memory is decided by the op
on every call, since Dynamo does not guard on storage. Regions may chain (one
region's output feeding another's input or parts).

A region is left alone (a *rejection*, logged with its reason) when the parts
mix dtypes or devices, are not float16/bfloat16/float32/float64, have a K
different from the input's, have symbolic sizes, when the site's output dtype
differs from its input's (autocast), or when replacing it would move code
across a grad-mode/autocast change or before an operand's definition.

Modules, after Torch-TensorRT's dynamo ``partitioning/`` (analysis apart from
rewriting):

* :mod:`.model`: the data model (:class:`PartRef`, :class:`LinearSite`,
  :class:`Region`, :class:`Rejection`, :class:`Plan`) and node accessors;
* :mod:`.patterns`: site matching (:func:`find_linear_sites`, :func:`cat_parts`);
* :mod:`.state`: grad mode, autocast state and barriers (:class:`GraphState`);
* :mod:`.plan`: validation and planning (:func:`analyze_site`, :func:`plan_regions`);
* :mod:`.rewrite`: graph rewriting (:func:`rewrite_region`);
* :mod:`.fp8`: backend option ``fp8``: which regions run through ``fp8_linear``
  (:func:`~.fp8.assign_fp8`) and the graph functions they call;
* :mod:`.driver`: plan and rewrite one graph and its inline subgraphs
  (:func:`~.driver.rewrite_graph`, which the backend calls).
"""

from __future__ import annotations

from .model import LinearFn, LinearSite, PartRef, Plan, Region, Rejection, node_value
from .patterns import cat_parts, find_linear_sites
from .plan import SUPPORTED_DTYPES, analyze_site, plan_regions
from .rewrite import rewrite_region
from .state import AutocastState, Barrier, GraphState, ambient_autocast

__all__ = [
    "SUPPORTED_DTYPES",
    "AutocastState",
    "Barrier",
    "GraphState",
    "LinearFn",
    "LinearSite",
    "PartRef",
    "Plan",
    "Region",
    "Rejection",
    "ambient_autocast",
    "analyze_site",
    "cat_parts",
    "find_linear_sites",
    "node_value",
    "plan_regions",
    "rewrite_region",
]
