"""Issue 29's "done means", on the PySpark line this session runs: the wheel, installed with its dependencies into a
fresh virtual environment pinned to that line (``pyspark==<this session's version>``, no system site-packages), runs
the README's reading and writing steps unchanged, from "Start the local server" to "Check the lag".

The wheel is built as the README's "Into another environment" builds it (``pip wheel --no-deps``, from a copy of the
project: tests/packaging/builds.py) and installed as it says, with the ``[kudu,hbase]`` extras; pip resolves every
dependency, from its cache where it holds them (the PySpark wheels of ``make test-matrix``'s environments). The reader
is tests/docs/test_readme_examples.py's, with the fresh environment activated instead of this session's, and runs the
README's blocks with the same checks; on 4.0/4.1 those expect what the README's versions table says differs (the
AvailableNow read leaves the consumer uncommitted, so the stream into ``//home/me/out`` reads the first two events
too). ``make test-matrix`` and ``make test-oldest`` run it on every line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyspark
import pytest

from tests.docs.test_readme_examples import (
    FOREIGN_PYTHON_VARS,
    README,
    Reader,
    World,
    blocks_to_run,
    follow,
    free_port,
    readme_places,
)
from tests.packaging.builds import build_wheel, pip

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def fresh_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a new virtual environment holding the wheel with ``[kudu,hbase]`` and this session's
    PySpark version, everything else as pip resolves it."""
    base = tmp_path_factory.mktemp("wheel-readme")
    wheel = build_wheel(base)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    pip(
        "--python",
        str(python),
        "install",
        "--quiet",
        "--no-compile",
        f"{wheel}[kudu,hbase]",
        f"pyspark=={pyspark.__version__}",
    )
    return python


def installed(python: Path, code: str, cwd: Path) -> str:
    """What ``code`` prints in the fresh environment, run from ``cwd`` (not the checkout, whose ``spyt_queue`` a
    ``python -c`` there would import) with no ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN_PYTHON_VARS}
    done = subprocess.run(
        [str(python), "-c", code], check=True, capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )
    return done.stdout.strip()


@pytest.mark.timeout(1800)
def test_the_wheel_runs_the_readme_steps_on_this_pyspark_line(
    fresh_install: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    python = fresh_install
    # The environment is the wheel's, not this checkout's, and holds this session's PySpark line.
    code = "import spyt_queue, pyspark; print(spyt_queue.__file__, pyspark.__version__)"
    where = installed(python, code, tmp_path)
    module, version = where.split()
    assert Path(module).resolve().is_relative_to(python.parent.parent.resolve()), module
    assert version == pyspark.__version__
    config = (python.parent.parent / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in config, config
    blocks = [b for b in blocks_to_run() if b.file == README.name]
    assert [b.heading for b in blocks][-1] == "Check the lag", [b.heading for b in blocks]
    port = free_port()
    reader = Reader(tmp_path / f"reader-{uuid.uuid4().hex[:6]}", readme_places(port, lambda: world), python=python)
    world = World(reader, f"localhost:{port}", request)
    try:
        follow(world, blocks)
    finally:
        reader.close()
