"""``format("ytqueue")``, ``spyt_kudu`` and ``spyt_hbase`` with no ``register()`` call, as a new user meets them:
from a directory that is not the repository, in the development install and in fresh virtual environments holding
a wheel, an sdist or an editable install built from a copy of the project that kept no symlinks.

Spark discovers Python data sources by importing every top-level ``pyspark_*`` module that
``pkgutil.iter_modules()`` lists in the Python worker named by ``PYSPARK_PYTHON`` (see
``pyspark/sql/worker/lookup_data_sources.py``), then registering its ``DefaultSource``; the first hook that raises
stops the discovery of all of them. Each query runs in a subprocess whose working directory is a temporary
directory, so the repository root is not on ``sys.path``, and whose driver and workers are the interpreter under
test. The fresh environments get spyt-queue with ``--no-deps`` and borrow every other distribution from this test
session's environment (a ``.pth`` entry naming a folder of links to its site-packages), so nothing is downloaded
but the build backend (``[build-system] requires``, from pip's cache when present).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own TOML reader
    import tomli as tomllib

from spyt_queue.yt.admin import column, create_queue
from tests.packaging.builds import build_wheel, copy_without_symlinks, pip

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
HOOKS = {"pyspark_ytqueue": "ytqueue", "pyspark_spyt_kudu": "spyt_kudu", "pyspark_spyt_hbase": "spyt_hbase"}

# What the user's script does: no spyt_queue import, no register(). It reports which pyspark_* hooks pkgutil
# lists, whether Spark registered each hook's source (and which class, from which file), where spyt_queue was
# imported from, the rows read, and the error of a batch write into each format named after the mode.
SCRIPT = textwrap.dedent(
    """
    import importlib, json, os, pkgutil, sys

    proxy, queue, mode, *write_formats = sys.argv[1:]
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
    write_errors = {}
    for name in write_formats:
        try:
            spark.range(1).write.format(name).mode("append").save()
            write_errors[name] = ""
        except Exception as exc:
            write_errors[name] = str(exc)[:4000]
    hooks = sorted(m.name for m in pkgutil.iter_modules() if m.name.startswith("pyspark_"))
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    sources = {}
    for hook in hooks:
        source = getattr(importlib.import_module(hook), "DefaultSource", None)
        if source is not None:
            module = sys.modules[source.__module__]
            sources[hook] = [source.name(), bool(manager.dataSourceExists(source.name())), source.__name__,
                             module.__file__]
    import spyt_queue
    result.update(hooks=hooks, sources=sources, spyt_queue=spyt_queue.__file__, prefix=sys.prefix,
                  write_errors=write_errors)
    print("RESULT " + json.dumps(result))
    spark.stop()
    """
)

# The optional dependencies of the extras, left out of the environment that simulates a missing Kudu extra.
_KUDU_EXTRA = ("jpype", "_jpype", "jpype1")


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


def _run_query(
    python: Path, workdir: Path, proxy: str, queue: str, mode: str, write_formats: Iterable[str] = ()
) -> dict:
    """Run ``SCRIPT`` with ``python`` from ``workdir`` and return what it reported.

    ``mode`` is ``shell`` (``PYSPARK_PYTHON`` exported by the shell) or ``notebook`` (no ``PYSPARK_*`` variable;
    the script sets ``os.environ["PYSPARK_PYTHON"]`` itself before creating the session).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "user_job.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [str(python), str(script), proxy, queue, mode, *write_formats],
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
    """The queue was read through ``format("ytqueue")`` and every hook registered its real source with Spark."""
    assert result["error"] == ""
    assert result["rows"] == rows
    assert sorted(HOOKS) == result["hooks"], result["hooks"]
    for hook, name in HOOKS.items():
        source_name, registered, class_name, _ = result["sources"][hook]
        assert (source_name, registered) == (name, True), result["sources"]
        assert not class_name.startswith("Unavailable"), result["sources"][hook]


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


def _borrowed_site_packages(folder: Path, leave_out: Iterable[str] = ()) -> Path:
    """A folder of links to this environment's installed distributions, except spyt-queue and ``leave_out``.

    ``leave_out`` are lower-case names of top-level modules and of distributions (their ``.dist-info``) to omit.
    The folder is put on a fresh environment's ``sys.path`` by a ``.pth`` line, which does not run the ``.pth``
    files inside it (this environment's editable install of the repository among them).
    """
    left_out = {"spyt_queue", "__pycache__", *leave_out}
    folder.mkdir(parents=True)
    for root in dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]):
        for entry in Path(root).iterdir():
            stem = entry.name.split("-")[0].split(".")[0].lower()
            if entry.suffix == ".pth" or stem in left_out or stem.startswith("__editable__"):
                continue
            if not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    return folder


def _fresh_venv(folder: Path, borrowed: Path) -> Path:
    """A new virtual environment (no pip of its own) that sees ``borrowed``; returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=300)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "zz_borrowed_site_packages.pth").write_text(f"{borrowed}\n")
    return python


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Installs of spyt-queue built from copies of the project made without symlinks, one fresh venv per kind.

    Returns a function taking the kind (``wheel``, ``sdist``, ``editable``, ``wheel-degraded``) and returning the
    interpreter of its environment, built on first use. ``wheel-degraded`` is the wheel in an environment without
    the Kudu extra (JPype) and whose installed HBase sink package was deleted.
    """
    base = tmp_path_factory.mktemp("installs")
    made: dict[str, Path] = {}

    def distribution(suffix: str) -> Path:
        if "dists" not in made:
            dist = build_wheel(base).parent
            source = base / "source"
            # The sdist as a build frontend makes it: the backend's build_sdist hook, in an environment holding
            # the project's declared build requirements.
            requires = tomllib.loads((source / "pyproject.toml").read_text())["build-system"]["requires"]
            tools = base / "build-tools"
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tools)], check=True, timeout=300)
            pip("--python", str(tools / "bin" / "python"), "install", "--quiet", *requires)
            sdist_source = copy_without_symlinks(base / "sdist-source")
            subprocess.run(
                [
                    str(tools / "bin" / "python"),
                    "-c",
                    f"import setuptools.build_meta as b; b.build_sdist({str(dist)!r})",
                ],
                cwd=sdist_source,
                check=True,
                capture_output=True,
                timeout=600,
            )
            made["dists"] = dist
        (found,) = made["dists"].glob(f"spyt_queue-*{suffix}")
        return found

    def build(kind: str) -> Path:
        if kind in made:
            return made[kind]
        leave_out = _KUDU_EXTRA if kind == "wheel-degraded" else ()
        python = _fresh_venv(base / f"venv-{kind}", _borrowed_site_packages(base / f"deps-{kind}", leave_out))
        if kind == "editable":
            target = ["-e", str(copy_without_symlinks(base / "editable-source"))]
        else:
            target = [str(distribution(".tar.gz" if kind == "sdist" else ".whl"))]
        pip("--python", str(python), "install", "--quiet", "--no-deps", "--no-compile", *target)
        if kind == "wheel-degraded":
            (hbase,) = base.glob(f"venv-{kind}/lib/python*/site-packages/spyt_queue/sinks/hbase")
            shutil.rmtree(hbase)
        made[kind] = python
        return python

    return build


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("kind", ["wheel", "sdist", "editable"])
def test_install_in_fresh_venv_is_discovered_without_register(kind, builds, yt_proxy, queue_rows, tmp_path) -> None:
    """A wheel, an sdist and ``pip install -e`` built from a copy that kept no symlinks, in a new environment, then
    a query from an unrelated directory: every source is discovered, the sinks' code included."""
    python = builds(kind)
    queue, rows = queue_rows
    result = _run_query(python, tmp_path / "elsewhere", yt_proxy, queue, "shell")
    _assert_discovered(result, rows)
    venv = python.parent.parent
    assert Path(result["prefix"]).resolve() == venv.resolve()
    home = venv.parent / "editable-source" if kind == "editable" else venv
    assert Path(result["spyt_queue"]).resolve().is_relative_to(home.resolve())  # the install, not the repository
    for hook in ("pyspark_spyt_kudu", "pyspark_spyt_hbase"):
        assert Path(result["sources"][hook][3]).resolve().is_relative_to(home.resolve()), result["sources"][hook]


@pytest.mark.timeout(1800)
def test_a_sink_that_cannot_load_leaves_the_other_sources_discovered(builds, yt_proxy, queue_rows, tmp_path) -> None:
    """The wheel without the Kudu extra and with the HBase sink's package gone: ``ytqueue`` still reads, and each
    sink's format is registered as a stand-in whose use names the fix, in one line."""
    python = builds("wheel-degraded")
    queue, rows = queue_rows
    result = _run_query(python, tmp_path / "elsewhere", yt_proxy, queue, "shell", ["spyt_kudu", "spyt_hbase"])
    assert (result["error"], result["rows"]) == ("", rows)
    assert result["sources"]["pyspark_ytqueue"][:3] == ["ytqueue", True, "YtQueueDataSource"]
    for hook in ("pyspark_spyt_kudu", "pyspark_spyt_hbase"):
        assert result["sources"][hook][:3] == [HOOKS[hook], True, f"Unavailable_{HOOKS[hook]}"], result["sources"]
    kudu, hbase = result["write_errors"]["spyt_kudu"], result["write_errors"]["spyt_hbase"]
    assert "SourceUnavailableError" in kudu and "pip install 'spyt-queue[kudu]'" in kudu, kudu
    assert "no module 'jpype'" in kudu, kudu
    assert "SourceUnavailableError" in hbase and "importing spyt_queue.sinks.hbase.source failed" in hbase, hbase
    assert "pip install --force-reinstall 'spyt-queue[hbase]'" in hbase, hbase
    for error in (kudu, hbase):
        assert "Traceback (most recent call last)" not in error, error
