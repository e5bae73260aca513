"""The importable package depends on torch alone; the real-model example stays outside it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import splitlinear

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = Path(splitlinear.__file__).resolve().parent

#: Top-level modules the package may import: pyproject's dependencies, itself, the standard library.
ALLOWED = {"torch", "splitlinear", "__future__", *sys.stdlib_module_names}
#: Modules of an optional dependency (pyproject's extras), each imported only where it is installed.
OPTIONAL = {"hf_quantizer.py": {"transformers"}, "serving.py": {"transformers"}}


def _imported_top_levels(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_package_imports_only_its_dependencies() -> None:
    """An import of anything else (``transformers``, even inside a function) would fail on an
    install that follows pyproject.toml; such code belongs in ``examples/``."""
    offending = {
        str(path.relative_to(PACKAGE)): sorted(_imported_top_levels(path) - ALLOWED
                                               - OPTIONAL.get(str(path.relative_to(PACKAGE)), set()))
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    assert {k: v for k, v in offending.items() if v} == {}


def test_serving_imports_without_transformers() -> None:
    """``splitlinear.serving`` registers with transformers only when it is installed: in a process
    where ``transformers`` cannot be imported, the module still imports and converts a model."""
    code = ("import sys; sys.modules['transformers'] = None\n"
            "import torch, splitlinear.serving as s\n"
            "m = torch.nn.Sequential(torch.nn.Linear(32, 16))\n"
            "assert s.convert_to_fp8_serving(m).converted == [['0']]\n"
            "assert 'splitlinear.hf_quantizer' not in sys.modules\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE.parent), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-4000:]


def test_real_models_example_runs_from_the_repository_root() -> None:
    """``scripts/main.sh`` runs ``examples/real_models.py``; its argument parsing works there."""
    assert "examples/real_models.py" in (ROOT / "scripts" / "main.sh").read_text(encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE.parent), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "examples/real_models.py", "--help"], capture_output=True,
                            text=True, timeout=300, env=env, cwd=str(ROOT))
    assert result.returncode == 0, result.stderr[-4000:]
    assert "--device" in result.stdout and "--reps" in result.stdout
