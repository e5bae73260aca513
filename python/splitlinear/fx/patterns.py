"""Site matching: which nodes of a torch-level FX graph compute a linear.

A *linear site* is any of ``linear(x, W, b)``, ``matmul(x, T(W))``,
``mm(x, T(W))``, ``addmm(b, x, T(W))`` and ``matmul(x, T(W)) + b``, where ``T``
is a 2-D transpose (``t``, ``.T``, ``.mT``, ``permute(1, 0)``,
``transpose(0, 1)``). Matching is syntactic: dtypes, shapes and devices are
checked later (:func:`~splitlinear.fx.plan.analyze_site`). The weight or bias
of a site may be an explicit ``torch.cat`` along dim 0 (:func:`cat_parts`): a
*vertical* candidate; sites sharing an input are *horizontal* candidates.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import torch
import torch.fx as fx

from .model import LinearSite, node_arg, node_tensor, static_int

_LINEAR_FNS: frozenset[Any] = frozenset({torch._C._nn.linear, torch.nn.functional.linear})
_CAT_FNS: frozenset[Any] = frozenset({torch.cat, torch.concat, torch.concatenate})
_MATMUL_FNS: frozenset[Any] = frozenset({operator.matmul, torch.matmul, torch.mm})
_ADD_FNS: frozenset[Any] = frozenset({operator.add, torch.add})


def _dims_swap_2d(dims: Any, *, ordered: bool) -> bool:
    """``dims`` names the two axes of a 2-D tensor swapped (``ordered``: as a permutation)."""
    if not isinstance(dims, (tuple, list)) or len(dims) != 2 or not all(isinstance(d, int) for d in dims):
        return False
    if ordered:  # permute(1, 0)
        return (dims[0] % 2, dims[1] % 2) == (1, 0)
    return {dims[0] % 2, dims[1] % 2} == {0, 1}  # transpose(0, 1) / (1, 0) / (-1, -2)


def _is_2d_transpose_of(node: Any) -> fx.Node | None:
    """If ``node`` is a transpose of a 2-D tensor node ``W``, return ``W``."""
    if not isinstance(node, fx.Node) or not node.args or node.kwargs:
        return None
    src, args = node.args[0], tuple(node.args[1:])
    if not isinstance(src, fx.Node):
        return None
    value = node_tensor(src)
    if value is None or value.dim() != 2:
        return None
    if node.op == "call_method":
        name = node.target
        if name == "t" and not args:
            return src
        if name == "permute":
            dims = args[0] if len(args) == 1 else args
            return src if _dims_swap_2d(dims, ordered=True) else None
        if name in ("transpose", "swapaxes", "swapdims"):
            return src if _dims_swap_2d(args, ordered=False) else None
        return None
    if node.op == "call_function":
        if node.target is getattr and args in (("T",), ("mT",)):
            return src
        if node.target is torch.t and not args:
            return src
        if node.target is torch.permute and len(args) == 1:
            return src if _dims_swap_2d(args[0], ordered=True) else None
        if node.target in (torch.transpose, torch.swapaxes, torch.swapdims):
            return src if _dims_swap_2d(args, ordered=False) else None
    return None


def _is_target(node: fx.Node, fns: frozenset[Any], methods: Iterable[str]) -> bool:
    if node.op == "call_function":
        return node.target in fns
    if node.op == "call_method":
        return node.target in tuple(methods)
    return False


def is_cat(node: Any) -> bool:
    """``node`` is a ``torch.cat`` (any dim; :func:`cat_parts` says whether it is usable)."""
    return isinstance(node, fx.Node) and node.op == "call_function" and node.target in _CAT_FNS


def cat_parts(node: Any) -> tuple[list[fx.Node] | None, str | None]:
    """Decompose a ``torch.cat`` along dim 0.

    Returns:
        ``(parts, None)`` for a dim-0 concatenation of graph values,
        ``(None, reason)`` for a concatenation that cannot be used (other dim,
        constant parts), ``(None, None)`` if ``node`` is not a concatenation.
    """
    if not is_cat(node):
        return None, None
    tensors = node_arg(node, 0, "tensors")
    dim = node_arg(node, 1, "dim", node.kwargs.get("axis", 0))
    out = node_tensor(node)
    if not isinstance(tensors, (list, tuple)) or out is None:
        return None, "concatenation of an unknown list"
    if not isinstance(dim, int):
        return None, f"concatenation along a non-constant dim {dim!r}"
    if out.dim() == 0 or dim % out.dim() != 0:
        return None, f"concatenation along dim {dim}, expected dim 0"
    if not all(isinstance(t, fx.Node) for t in tensors):
        return None, "concatenation with a non-tensor part"
    return list(tensors), None


def _match_site(node: fx.Node) -> LinearSite | None:
    """Recognize ``node`` as a linear site (without validating dtypes/shapes)."""
    if node.op == "call_function" and node.target in _LINEAR_FNS:
        x, w, b = node_arg(node, 0, "input"), node_arg(node, 1, "weight"), node_arg(node, 2, "bias")
        if isinstance(x, fx.Node) and isinstance(w, fx.Node) and (b is None or isinstance(b, fx.Node)):
            return LinearSite(out=node, input=x, weight=w, bias=b, intermediates=[], form="linear")
        return None
    if _is_target(node, _MATMUL_FNS, ("matmul", "mm")) and len(node.args) == 2 and not node.kwargs:
        x, wt = node.args
        w = _is_2d_transpose_of(wt)
        if isinstance(x, fx.Node) and isinstance(wt, fx.Node) and w is not None:
            form = "mm" if (node.target is torch.mm or node.target == "mm") else "matmul"
            return LinearSite(out=node, input=x, weight=w, bias=None, intermediates=[wt], form=form)
        return None
    if _is_target(node, frozenset({torch.addmm}), ("addmm",)) and len(node.args) == 3:
        if any(node.kwargs.get(k, 1) != 1 for k in ("beta", "alpha")) or set(node.kwargs) - {"beta", "alpha"}:
            return None
        b, x, wt = node.args
        w = _is_2d_transpose_of(wt)
        bias = node_tensor(b)
        if (isinstance(x, fx.Node) and isinstance(b, fx.Node) and isinstance(wt, fx.Node)
                and w is not None and bias is not None):
            if bias.dim() == 1:
                return LinearSite(out=node, input=x, weight=w, bias=b, intermediates=[wt], form="addmm")
        return None
    return None


def _absorb_bias_add(site: LinearSite) -> LinearSite:
    """Turn ``matmul(x, T(W)) + b`` (``b`` 1-D) into one site with a bias."""
    if site.bias is not None or len(site.out.users) != 1:
        return site
    (user,) = site.out.users
    if not _is_target(user, _ADD_FNS, ("add",)) or user.kwargs or len(user.args) != 2:
        return site
    other = user.args[1] if user.args[0] is site.out else user.args[0]
    if other is site.out or not isinstance(other, fx.Node):
        return site
    bias, out = node_tensor(other), node_tensor(site.out)
    if bias is None or out is None or bias.dim() != 1 or bias.dtype != out.dtype:
        return site
    if static_int(bias.shape[0]) != static_int(out.shape[-1]) or static_int(bias.shape[0]) is None:
        return site
    return LinearSite(
        out=user,
        input=site.input,
        weight=site.weight,
        bias=other,
        intermediates=[*site.intermediates, site.out],
        form=f"{site.form}+add",
    )


def find_linear_sites(graph: fx.Graph) -> list[LinearSite]:
    """All linear sites of ``graph`` in graph order (see the module docstring for the forms).

    Sites are matched, not validated: their parts are filled by
    :func:`~splitlinear.fx.plan.analyze_site`.
    """
    sites: list[LinearSite] = []
    absorbed: set[fx.Node] = set()
    for node in graph.nodes:
        if node in absorbed:
            continue
        site = _match_site(node)
        if site is None:
            continue
        site = _absorb_bias_add(site)
        absorbed.add(site.out)
        sites.append(site)
    # A matmul absorbed into a later add must not also appear on its own.
    inner = {n for s in sites for n in s.intermediates}
    return [s for s in sites if s.out not in inner]
