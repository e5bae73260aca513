"""The installed package: the torch range it checks, its console script, its metadata."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from splitlinear import _torch_version


@pytest.mark.parametrize("version", ["2.11.0", "2.11.0+cu130", "2.11.1+cpu"])
def test_supported_torch_passes(version: str) -> None:
    _torch_version.check(version)


@pytest.mark.parametrize("version", ["2.10.1+cu128", "2.12.0", "3.0.0", "2.9.0a0+git1234"])
def test_other_torch_names_both_versions(version: str) -> None:
    """Outside the range: an ImportError naming the torch found and the range needed, not ``undefined symbol``."""
    with pytest.raises(ImportError, match=rf"torch>=2\.11,<2\.12.*torch {version.replace('+', '[+]')} is installed"):
        _torch_version.check(version)


def test_unreadable_version_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="cannot read torch version 'nightly'"):
        _torch_version.parse("nightly")


def test_import_checks_the_installed_torch() -> None:
    """``import splitlinear`` runs the check: a process whose torch metadata says 2.12 cannot import it."""
    code = ("import importlib.metadata as m\n"
            "real = m.version\n"
            "m.version = lambda name: '2.12.0' if name == 'torch' else real(name)\n"
            "try:\n"
            "    import splitlinear\n"
            "except ImportError as e:\n"
            "    print('ImportError:', e)\n"
            "else:\n"
            "    raise SystemExit('imported under torch 2.12')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "torch>=2.11,<2.12" in result.stdout and "torch 2.12.0 is installed" in result.stdout


def test_requires_dist_is_the_checked_range() -> None:
    """The wheel's pin and the import-time check are the same range."""
    try:
        requires = importlib.metadata.requires("splitlinear") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("splitlinear is not installed (run from a source tree)")
    def specifiers(requirement: str) -> set[str]:
        """``"torch<2.12,>=2.11"`` -> ``{"<2.12", ">=2.11"}`` (metadata may reorder them)."""
        return set(requirement.replace(" ", "").removeprefix("torch").split(","))

    torch_req = [r for r in requires if r.replace(" ", "").startswith("torch")]
    assert [specifiers(r) for r in torch_req] == [specifiers(_torch_version.requirement())]


def _console_script() -> Path | None:
    for directory in (Path(sys.executable).parent, Path(sys.prefix) / "bin"):
        if (directory / "splitlinear-opt").is_file():
            return directory / "splitlinear-opt"
    return None


def test_splitlinear_opt_console_script() -> None:
    """``pip install`` gives the opt-style driver; its help lists the concat elision pass."""
    script = _console_script()
    if script is None:
        if os.environ.get("SPLITLINEAR_REQUIRE_OP"):
            pytest.fail(f"no splitlinear-opt next to {sys.executable}: the package's console script is missing")
        pytest.skip("splitlinear is not installed (run from a source tree)")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--slin-elide-concat" in result.stdout


_ADJACENT_PARTS = """
func.func @adjacent(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  slin.linear ins(%x : memref<4x16xf32>)
      weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>)
      outs(%y : memref<4x12xf32>)
  return
}
"""


def test_splitlinear_opt_runs_a_pass() -> None:
    """The console script runs ``slin-elide-concat`` from stdin: two back-to-back subviews of one
    allocation become one view, with no copy and no run-time check."""
    script = _console_script()
    if script is None:
        if os.environ.get("SPLITLINEAR_REQUIRE_OP"):
            pytest.fail(f"no splitlinear-opt next to {sys.executable}: the package's console script is missing")
        pytest.skip("splitlinear is not installed (run from a source tree)")
    result = subprocess.run([str(script), "-slin-elide-concat"], input=_ADJACENT_PARTS,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "slin.view_concat" in result.stdout
    assert "slin.concat" not in result.stdout and "slin.is_adjacent" not in result.stdout


def test_version_is_the_projects() -> None:
    """``splitlinear.__version__`` is the version in ``python/pyproject.toml``, installed or not."""
    import re

    import splitlinear

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert splitlinear.__version__ == re.search(r'(?m)^version = "([^"]+)"', pyproject).group(1)
