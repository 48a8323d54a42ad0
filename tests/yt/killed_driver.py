"""Chaos helper: a streaming query run by a driver process of its own, killed with SIGKILL once it has made progress.

The query is described by a JSON-able spec (source options, selected columns, sink and its options), so a test can
rebuild the very same query in-process for the restart. Used by the SIGKILL tests of the HBase, Kudu and
transactional YT pipelines (tests/hbase/test_hbase_stream.py, tests/kudu/test_kudu_stream.py,
tests/yt/test_transactional.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

__all__ = ["kill_driver_midway", "start_query"]

_DRIVER = """
import json, sys
from pyspark.sql import SparkSession
sys.path.insert(0, {root!r})
from tests.yt.killed_driver import start_query
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
query = start_query(spark, json.loads(sys.argv[1]), {{"processingTime": "200 milliseconds"}})
print("started", flush=True)
query.awaitTermination()
"""


def start_query(spark: Any, spec: dict[str, Any], trigger: dict[str, Any]) -> Any:
    """Start the streaming query of ``spec``: ``format("ytqueue")`` with ``spec["source"]`` options (loading
    ``spec["path"]`` if given), filtered by ``spec["where"]`` if given, ``selectExpr(*spec["select"])``,
    ``repartition(*spec["repartition"])`` if given, written to ``spec["sink"]`` with ``spec["sink_options"]`` and
    ``spec["checkpoint"]``, under ``trigger`` (``DataStreamWriter.trigger`` kwargs)."""
    reader = spark.readStream.format("ytqueue").options(**spec["source"])
    df = reader.load(spec["path"]) if spec.get("path") else reader.load()
    if spec.get("where"):
        df = df.where(spec["where"])
    df = df.selectExpr(*spec["select"])
    if spec.get("repartition"):
        df = df.repartition(*spec["repartition"])
    writer = df.writeStream.format(spec["sink"]).options(**spec["sink_options"])
    return writer.option("checkpointLocation", spec["checkpoint"]).trigger(**trigger).start()


def kill_driver_midway(
    tmp_path: Path, spec: dict[str, Any], progressed: Callable[[], bool], timeout: float = 180.0
) -> None:
    """Run ``spec``'s query (processing-time trigger, 200 ms) in a new driver process and SIGKILL its process group
    (driver JVM and Python workers) as soon as ``progressed()`` holds; polled every 0.1 s. Fails the test with the
    driver's log tail if the driver dies first or makes no progress within ``timeout`` seconds."""
    script = tmp_path / "killed_driver.py"
    script.write_text(_DRIVER.format(root=str(Path(__file__).resolve().parents[2])))
    log_path = tmp_path / "killed_driver.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(script), json.dumps(spec)],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"the driver died by itself: {log_path.read_text()[-3000:]}"
            if progressed():
                return
            time.sleep(0.1)
        pytest.fail(f"the driver made no progress in {timeout:.0f} s: {log_path.read_text()[-3000:]}")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
