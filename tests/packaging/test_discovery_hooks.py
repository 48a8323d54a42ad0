"""The ``pyspark_*`` discovery hooks cannot take each other down: Spark's own discovery loop
(``pyspark.sql.worker.lookup_data_sources``), run in a fresh interpreter where an extra or a sink's package is
missing, still registers every format, the broken ones as stand-ins whose use names the fix.

A Spark session with a missing extra is in ``test_wheel_discovery.py``; these run the same loop without a JVM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Hides the modules named on the command line (and their sub-modules) as if they were not installed, runs PySpark's
# discovery loop, then reports what it registered and what using each registered source raises.
SCRIPT = textwrap.dedent(
    """
    import io, json, sys

    hidden = sys.argv[1:]

    class Hide:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if any(name == h or name.startswith(h + ".") for h in hidden):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Hide)
    from pyspark.serializers import read_int, UTF8Deserializer
    from pyspark.sql.worker.lookup_data_sources import _main
    from pyspark.worker_util import pickleSer

    out = io.BytesIO()
    _main(io.BytesIO(), out)
    out.seek(0)
    found = {}
    for _ in range(read_int(out)):
        name = UTF8Deserializer().loads(out)
        source = pickleSer._read_with_length(out)
        try:
            source(options={})
            error = ""
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        found[name] = [source.__name__, error]
    hooks = {}
    for hook in ("pyspark_ytqueue", "pyspark_spyt_kudu", "pyspark_spyt_hbase"):
        hooks[hook] = [hook in sys.modules, hasattr(sys.modules.get(hook), "DefaultSource")]
    print("RESULT " + json.dumps({"found": found, "hooks": hooks}))
    """
)


def _discover(*hidden: str) -> dict:
    """Run Spark's discovery loop in a new interpreter of this environment with ``hidden`` modules missing."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *hidden], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


def test_all_sources_discovered_with_every_extra_installed() -> None:
    """The development environment: the real sources, usable (their constructors take any options)."""
    found = _discover()["found"]
    assert {name: cls for name, (cls, _) in found.items()} == {
        "ytqueue": "YtQueueDataSource",
        "spyt_kudu": "KuduDataSource",
        "spyt_hbase": "HBaseDataSource",
    }
    assert all(error == "" for _, error in found.values()), found


def test_missing_extras_register_stand_ins_that_name_the_extra() -> None:
    """Without JPype (``kudu``) and happybase (``hbase``) the sinks are stand-ins; ``ytqueue`` is the real one."""
    found = _discover("jpype", "happybase")["found"]
    assert found["ytqueue"] == ["YtQueueDataSource", ""]
    kudu_class, kudu = found["spyt_kudu"]
    hbase_class, hbase = found["spyt_hbase"]
    assert (kudu_class, hbase_class) == ("Unavailable_spyt_kudu", "Unavailable_spyt_hbase")
    assert kudu.startswith('SourceUnavailableError: format("spyt_kudu") cannot be used: the "kudu" extra'), kudu
    assert "no module 'jpype'" in kudu and "pip install 'spyt-queue[kudu]'" in kudu, kudu
    assert "no module 'happybase'" in hbase and "pip install 'spyt-queue[hbase]'" in hbase, hbase


def test_sinks_package_missing_leaves_ytqueue_discovered() -> None:
    """``spyt_queue.sinks`` unimportable (what a copy without the old symlink gave): stand-ins naming the failed
    import, and ``ytqueue`` still registered."""
    found = _discover("spyt_queue.sinks")["found"]
    assert found["ytqueue"] == ["YtQueueDataSource", ""]
    for name, module in (("spyt_kudu", "kudu"), ("spyt_hbase", "hbase")):
        class_name, error = found[name]
        assert class_name == f"Unavailable_{name}"
        assert f"importing spyt_queue.sinks.{module}.source failed" in error, error
        assert "No module named 'spyt_queue.sinks" in error, error
        assert f"pip install --force-reinstall 'spyt-queue[{module}]'" in error, error


def test_hooks_import_cleanly_when_spyt_queue_itself_is_broken() -> None:
    """Not even the discovery helper imports: the hooks define no ``DefaultSource`` (Spark skips them) instead of
    raising, so sources of other packages are still discovered."""
    result = _discover("spyt_queue")
    assert result["found"] == {}
    imported_without_source = [True, False]
    assert result["hooks"] == dict.fromkeys(
        ("pyspark_ytqueue", "pyspark_spyt_kudu", "pyspark_spyt_hbase"), imported_without_source
    )
