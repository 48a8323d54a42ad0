"""Build hook of spyt-queue: puts the top-level ``sinks/`` folder into wheels and sdists as ``spyt_queue.sinks``.

Everything else is declared in ``pyproject.toml``. The mapping lives in ``build_py`` instead of ``package-dir``
because setuptools chooses how to implement ``pip install -e .`` from ``package-dir``: any entry besides ``""``
makes it install an import-hook finder that ``pkgutil.iter_modules()`` cannot list, and Spark then never discovers
the ``pyspark_*`` hooks (see pyproject.toml). In a checkout, ``spyt_queue/sinks/__init__.py`` points the package at
the same folder.
"""

from __future__ import annotations

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

SINKS_PACKAGE = "spyt_queue.sinks"
SINKS_FOLDER = "sinks"


class BuildPy(build_py):
    """``build_py`` that takes ``spyt_queue.sinks`` and its sub-packages from the top-level ``sinks/`` folder."""

    def finalize_options(self) -> None:
        """Map ``spyt_queue.sinks`` to ``sinks/`` and add every package found under it."""
        super().finalize_options()
        self.package_dir = {**self.package_dir, SINKS_PACKAGE: SINKS_FOLDER}
        packages = list(self.packages or [])
        for name in [SINKS_PACKAGE, *(f"{SINKS_PACKAGE}.{name}" for name in find_packages(SINKS_FOLDER))]:
            if name not in packages:
                packages.append(name)
        self.packages = packages  # a new list: the distribution's own stays as pyproject.toml found it


setup(cmdclass={"build_py": BuildPy})
