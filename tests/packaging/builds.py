"""Building spyt-queue as a user does, for the packaging tests: from a copy of the project that kept no symlinks
(an archive, an artefact upload), with this test session's pip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Build artefacts, caches and local state that must not go into the copy of the project.
NOT_SOURCES = shutil.ignore_patterns(
    ".venv",
    ".venv-*",
    ".git",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    "target",
    "spark-warehouse",
    "metastore_db",
    "tmp",
    ".ci-test-oldest.log",  # CI's other test run (beside this one) writes these while the project is copied
    ".pytest-summary*.xml",
)


def copy_without_symlinks(destination: Path) -> Path:
    """Copy the project as a tool that keeps no symlinks would (an archive, an artefact upload): symlinks dropped."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        links = {name for name in names if os.path.islink(os.path.join(folder, name))}
        return links | set(NOT_SOURCES(folder, names))

    shutil.copytree(REPO, destination, ignore=ignore)
    return destination


def pip(*args: str) -> None:
    """Run this environment's pip (``--python`` names the environment it installs into)."""
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True, timeout=900)


def build_wheel(base: Path) -> Path:
    """The wheel the README's "Into another environment" builds (``pip wheel --no-deps``), from a copy of the project
    in ``base``; returns the ``.whl`` (in ``base/dist``)."""
    source = copy_without_symlinks(base / "source")
    dist = base / "dist"
    pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(source))
    (wheel,) = dist.glob("spyt_queue-*.whl")
    return wheel
