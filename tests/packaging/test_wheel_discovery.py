"""``format("ytqueue")`` with no ``register()`` call, as a new user meets it: from a directory that is not the
repository, in the editable development install and in a fresh virtual environment holding the built wheel.

Spark discovers Python data sources by importing every top-level ``pyspark_*`` module that
``pkgutil.iter_modules()`` lists in the Python worker named by ``PYSPARK_PYTHON`` (see
``pyspark/sql/worker/lookup_data_sources.py``), then registering its ``DefaultSource``. Each query runs in a
subprocess whose working directory is a temporary directory, so the repository root is not on ``sys.path``, and
whose driver and workers are the interpreter under test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spyt_queue.yt.admin import column, create_queue

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]

# What the user's script does: no spyt_queue import, no register(). It reports which pyspark_* hooks pkgutil
# lists, whether Spark registered each hook's source, where spyt_queue was imported from, and the rows read.
SCRIPT = textwrap.dedent(
    """
    import importlib, json, os, pkgutil, sys

    proxy, queue, mode = sys.argv[1:4]
    if mode == "notebook":  # the README's notebook recipe: name the workers' interpreter before the session starts
        os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("ytqueue-discovery")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    try:
        rows = spark.read.format("ytqueue").option("proxy", proxy).load(queue).select("id", "payload").collect()
        result = {"rows": sorted([r.id, r.payload] for r in rows), "error": ""}
    except Exception as exc:  # reported, so the test shows Spark's own message
        result = {"rows": [], "error": str(exc)[:2000]}
    hooks = sorted(m.name for m in pkgutil.iter_modules() if m.name.startswith("pyspark_"))
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    sources = {}
    for hook in hooks:
        source = getattr(importlib.import_module(hook), "DefaultSource", None)
        if source is not None:
            sources[hook] = [source.name(), bool(manager.dataSourceExists(source.name()))]
    import spyt_queue
    result.update(hooks=hooks, sources=sources, spyt_queue=spyt_queue.__file__, prefix=sys.prefix)
    print("RESULT " + json.dumps(result))
    spark.stop()
    """
)

# Build artefacts, caches and local state that must not go into the wheel build's copy of the project.
_NOT_SOURCES = shutil.ignore_patterns(
    ".venv",
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
)


def _clean_env(python: Path, shell_vars: bool = True) -> dict[str, str]:
    """The environment of a user running ``python`` directly, with nothing of this repository or test session.

    With ``shell_vars`` the shell names ``python`` in ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON``; without, no
    ``PYSPARK_*`` variable is set and ``python``'s directory is off ``PATH``, as for a Jupyter kernel started by a
    server from another environment (then ``python3`` on ``PATH`` is some other interpreter).
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "SPARK_HOME", "VIRTUAL_ENV") and not key.startswith("PYSPARK_")
    }
    if shell_vars:
        env["PYSPARK_PYTHON"] = str(python)
        env["PYSPARK_DRIVER_PYTHON"] = str(python)
    else:
        bin_dirs = {str(python.parent), str(python.resolve().parent)}
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p not in bin_dirs)
    return env


def _run_query(python: Path, workdir: Path, proxy: str, queue: str, mode: str) -> dict:
    """Run ``SCRIPT`` with ``python`` from ``workdir`` and return what it reported.

    ``mode`` is ``shell`` (``PYSPARK_PYTHON`` exported by the shell) or ``notebook`` (no ``PYSPARK_*`` variable;
    the script sets ``os.environ["PYSPARK_PYTHON"]`` itself before creating the session).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "user_job.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [str(python), str(script), proxy, queue, mode],
        cwd=workdir,
        env=_clean_env(python, shell_vars=mode == "shell"),
        capture_output=True,
        text=True,
        timeout=420,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.fixture
def queue_rows(yt, yt_root: str) -> tuple[str, list[list]]:
    """A two-tablet queue holding five rows, and those rows as ``[id, payload]`` pairs."""
    queue = f"{yt_root}/events"
    create_queue(yt, queue, [column("id", "int64", required=True), column("payload", "string")], tablet_count=2)
    rows = [{"id": i, "payload": f"event-{i}", "$tablet_index": i % 2} for i in range(5)]
    yt.insert_rows(queue, rows)
    return queue, [[r["id"], r["payload"]] for r in rows]


def _assert_discovered(result: dict, rows: list[list]) -> None:
    assert result["error"] == ""
    assert result["rows"] == rows
    assert "pyspark_ytqueue" in result["hooks"]
    # Every pyspark_* hook we ship (sinks added later included) is registered with Spark, not just listed.
    assert result["sources"]["pyspark_ytqueue"] == ["ytqueue", True]
    assert all(registered for _, registered in result["sources"].values()), result["sources"]


def test_editable_install_is_discovered_from_a_notebook_elsewhere(yt_proxy, queue_rows, tmp_path) -> None:
    """The development install (``make venv``: ``pip install -e``), used as a notebook kernel in another directory.

    The kernel's interpreter is not on ``PATH`` and no ``PYSPARK_*`` variable is set: the README's recipe (set
    ``PYSPARK_PYTHON`` to ``sys.executable`` before the session starts) is all it takes, no ``register()``.
    """
    queue, rows = queue_rows
    python = Path(sys.executable)
    result = _run_query(python, tmp_path / "notebooks", yt_proxy, queue, "notebook")
    _assert_discovered(result, rows)
    assert Path(result["spyt_queue"]).resolve().is_relative_to(REPO)


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A new virtual environment where pip installed the built wheel and its dependencies (pip's cache reused)."""
    base = tmp_path_factory.mktemp("fresh-install")
    source = base / "source"
    shutil.copytree(REPO, source, ignore=_NOT_SOURCES)
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(base / "dist"), str(source)],
        check=True,
        timeout=600,
    )
    built = time.monotonic()
    (wheel,) = (base / "dist").glob("spyt_queue-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-compile", str(wheel)],
        check=True,
        timeout=900,
        env=_clean_env(python, shell_vars=False),
    )
    installed = time.monotonic()
    sys.stderr.write(
        f"fresh venv: wheel built in {built - started:.0f} s, venv created and wheel installed with its "
        f"dependencies in {installed - built:.0f} s\n"
    )
    yield python
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.timeout(1800)
def test_wheel_in_fresh_venv_is_discovered_without_register(fresh_venv, yt_proxy, queue_rows, tmp_path) -> None:
    """``pip install spyt-queue`` (the built wheel) in a new environment, then a query from an unrelated directory."""
    queue, rows = queue_rows
    result = _run_query(fresh_venv, tmp_path / "elsewhere", yt_proxy, queue, "shell")
    _assert_discovered(result, rows)
    venv = fresh_venv.parent.parent
    assert Path(result["prefix"]).resolve() == venv.resolve()
    assert Path(result["spyt_queue"]).resolve().is_relative_to(venv.resolve())  # the wheel, not the repository
