"""No import cycle between the modules of the ``splitlinear`` package.

The graph is read from the source with :mod:`ast` (nothing is imported), over
every module of ``python/splitlinear``. Relative imports are resolved, and
``from pkg import name`` points at the submodule ``pkg.name`` when there is
one, else at ``pkg`` itself (its ``__init__``). Python's implicit import of a
module's parent package is not an edge (every submodule would otherwise close a
cycle with a package ``__init__`` that re-exports it).

Two graphs are checked:

- module level: imports that run when the module is imported (including those
  in class bodies and in ``try``/``if`` at module level). A cycle here breaks
  or depends on import order;
- all imports: also the imports inside functions. A function-level import
  does not fail at import time, but a cycle through one is still two modules
  that each need the other; the package keeps none, so the layering stays a
  tree that can be read top-down.

Imports under ``if TYPE_CHECKING:`` never run and are left out of both, as is
``importlib.import_module`` (the package ``__init__``'s lazy ``ops`` and
``backend`` attributes: a string, not an import statement).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "splitlinear"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / PACKAGE


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target``, at ``line``; ``lazy`` when inside a function."""

    source: str
    target: str
    line: int
    lazy: bool


def module_names(package_dir: Path, package: str) -> dict[str, Path]:
    """Every module of the package by dotted name (a package is named by its ``__init__``)."""
    names: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join([package, *parts])] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> Iterable[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each executed import statement with whether it is inside a function."""

    def visit(node: ast.AST, lazy: bool) -> Iterable[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, lazy
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    yield from visit(ast.Module(body=[stmt], type_ignores=[]), lazy)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from visit(child, True)
            else:
                yield from visit(child, lazy)

    return visit(tree, False)


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative levels resolved)."""
    if node.level == 0:
        return node.module or ""
    anchor = module.split(".") if is_package else module.split(".")[:-1]
    anchor = anchor[:len(anchor) - (node.level - 1)]
    return ".".join(anchor + ([node.module] if node.module else []))


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """``name`` or its longest prefix that is a module of the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_edges(modules: Mapping[str, Path], package: str) -> list[Edge]:
    """The imports between the package's modules, read from their source."""
    edges: list[Edge] = []
    for source, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        for node, lazy in _imports(tree):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_known(alias.name, modules) for alias in node.names]
            else:
                base = _base(source, is_package, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else _known(base, modules))
            for target in targets:
                if target is not None and target != source and target.split(".")[0] == package:
                    edges.append(Edge(source, target, node.lineno, lazy))
    return edges


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None when it has none (iterative DFS)."""
    white, grey, black = 0, 1, 2
    colour: dict[str, int] = {}
    for root in sorted(graph):
        if colour.get(root, white) != white:
            continue
        path = [root]
        stack = [iter(sorted(graph.get(root, ())))]
        colour[root] = grey
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = black
                stack.pop()
            elif colour.get(nxt, white) == grey:
                return path[path.index(nxt):] + [nxt]
            elif colour.get(nxt, white) == white:
                colour[nxt] = grey
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def _graph(edges: Iterable[Edge]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
    return graph


def _describe(cycle: Sequence[str], edges: Sequence[Edge]) -> str:
    """``a:12 -> b:(lazy) 40 -> a`` : each hop with the line of its first import."""
    hops = []
    for src, dst in zip(cycle, cycle[1:]):
        edge = min((e for e in edges if e.source == src and e.target == dst), key=lambda e: e.line)
        hops.append(f"{src} (line {edge.line}{', in a function' if edge.lazy else ''}) -> {dst}")
    return "; ".join(hops)


# --------------------------------------------------------------------------- the cycle finder


def test_find_cycle_reports_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1]
    assert set(cycle) == {"a", "b", "c"}


def test_find_cycle_self_loop_and_acyclic() -> None:
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # a diamond is not a cycle


def test_edges_resolve_relative_and_submodule_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\nfrom .sub import thing\n")
    (pkg / "b.py").write_text("def g():\n    from .sub import leaf\n")
    (pkg / "sub" / "__init__.py").write_text("thing = 1\n")
    (pkg / "sub" / "leaf.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import a\nfrom ..a import f\n")
    edges = import_edges(module_names(pkg, "pkg"), "pkg")
    assert {(e.source, e.target, e.lazy) for e in edges} == {
        ("pkg", "pkg.a", False), ("pkg.a", "pkg.b", False), ("pkg.a", "pkg.sub", False),
        ("pkg.b", "pkg.sub.leaf", True), ("pkg.sub.leaf", "pkg.a", False)}
    assert find_cycle(_graph(e for e in edges if not e.lazy)) is None
    assert find_cycle(_graph(edges)) == ["pkg.a", "pkg.b", "pkg.sub.leaf", "pkg.a"]


# --------------------------------------------------------------------------- the package


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    modules = module_names(PACKAGE_DIR, PACKAGE)
    assert "splitlinear.serving" in modules and "splitlinear.fx.driver" in modules
    return import_edges(modules, PACKAGE)


def test_no_cycle_at_module_level(edges: list[Edge]) -> None:
    module_level = [e for e in edges if not e.lazy]
    cycle = find_cycle(_graph(module_level))
    assert cycle is None, f"import cycle at module level: {_describe(cycle, module_level)}"


def test_no_cycle_including_imports_in_functions(edges: list[Edge]) -> None:
    cycle = find_cycle(_graph(edges))
    assert cycle is None, f"import cycle (through imports inside functions): {_describe(cycle, edges)}"


def test_hf_quantizer_does_not_import_serving(edges: list[Edge]) -> None:
    assert not [e for e in edges if e.source == "splitlinear.hf_quantizer" and e.target == "splitlinear.serving"]
