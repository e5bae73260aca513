"""Builds splitlinear as a platform wheel: ``py3-none-<platform>``.

The package has no CPython extension (the native libraries in ``splitlinear/lib``
load through ``torch.ops.load_library`` and ctypes), so one wheel serves every
Python version, but it holds x86-64 Linux binaries: the wheel is not pure, and
its files go to platlib (auditwheel refuses shared libraries in purelib).
``scripts/build-wheel.sh`` stages the libraries and repairs the wheel.
"""

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    """A distribution with native code: installed to platlib, wheel not pure."""

    def has_ext_modules(self) -> bool:
        return True


class PlatformWheel(bdist_wheel):
    """``bdist_wheel`` tagged ``py3-none-<platform>`` instead of ``cpXY-cpXY-<platform>``."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": PlatformWheel})
