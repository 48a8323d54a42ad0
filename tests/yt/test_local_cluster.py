"""The source and sink shipped to separate executor processes (``local-cluster``), found without ``register()``.

Runs in a subprocess because a JVM holds one SparkContext and the test session already has its ``local[2]`` one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.yt.helpers import make_pipeline

pytestmark = pytest.mark.spark

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    proxy, queue, consumer, output, checkpoint = sys.argv[1:6]
    spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("ytqueue-local-cluster")
             .config("spark.ui.enabled", "false").config("spark.executor.memory", "768m").getOrCreate())
    # No spyt_queue.register(spark): Spark must discover the source through the pyspark_ytqueue module.
    df = (spark.readStream.format("ytqueue").option("proxy", proxy).option("consumer_path", consumer)
          .option("include_service_columns", "true").option("max_rows_per_partition", "25").load(queue)
          .selectExpr("id", "payload", "__spyt_streaming_src_tablet_index as tablet",
                      "__spyt_streaming_src_row_index as row"))
    query = (df.writeStream.format("ytqueue").option("proxy", proxy).option("path", output)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
    print("RESULT " + json.dumps({"batches": len([p for p in query.recentProgress if p["numInputRows"]]),
                                  "executors": executors, "error": str(query.exception() or "")}))
    spark.stop()
    """
)


def test_stream_runs_on_separate_executor_processes(yt, yt_proxy, yt_root, checkpoint, tmp_path) -> None:
    pipe = make_pipeline(yt, yt_proxy, yt_root, checkpoint, tablets=3)
    ids = pipe.produce(120)
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run(
        [sys.executable, str(script), pipe.proxy, pipe.queue, pipe.consumer, pipe.output, checkpoint],
        capture_output=True,
        text=True,
        timeout=420,
        env=env,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stdout[-3000:] + done.stderr[-5000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    assert result["error"] == ""
    assert result["executors"] >= 3  # the driver plus two executor JVMs, each with its own Python workers
    assert result["batches"] >= 2
    assert pipe.output_ids() == ids
    assert pipe.consumer_offsets() == pipe.ends()
