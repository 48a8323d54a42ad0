"""The one line a PySpark 4.0/4.1 driver logs when a capped ``Trigger.AvailableNow`` run (one batch there) leaves
rows behind, as a user sees it: in the driver's own log (stderr), in a separate driver process, for both
``read_mode`` s. On 4.2+ AvailableNow reads everything and nothing is logged.

The reader runs in Spark's Python streaming runner, a worker of the driver's JVM whose stderr the JVM copies to its
own; the test session's shared SparkSession writes to pytest's stderr, hence the separate process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from spyt_queue.spark.compat import HAS_READ_LIMITS
from spyt_queue.yt.admin import create_consumer
from tests.yt.helpers import make_pipeline

pytestmark = pytest.mark.spark

#: The start of the note (:data:`spyt_queue.spark.compat.AVAILABLE_NOW_NOTE`).
NOTE = "tells a Python source neither its trigger nor a read limit"

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    proxy, queue, workdir, *consumers = sys.argv[1:]
    spark = (SparkSession.builder.master("local[1]").appName("available-now-note")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    result = {}
    for mode, consumer in zip(("executors", "driver"), consumers):
        df = (spark.readStream.format("ytqueue").option("proxy", proxy).option("consumer_path", consumer)
              .option("max_rows_per_partition", "2").option("read_mode", mode).load(queue))
        query = (df.writeStream.format("noop").option("checkpointLocation", f"{workdir}/cp-{mode}")
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        result[mode] = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        sys.stderr.write(f"END OF RUN {mode}\\n")
        sys.stderr.flush()
    print("RESULT " + json.dumps(result), flush=True)
    spark.stop()
    """
)


@pytest.mark.timeout(900)
def test_a_capped_available_now_run_that_leaves_rows_says_so_in_the_driver_log(yt, yt_proxy, yt_root, tmp_path):
    pipe = make_pipeline(yt, yt_proxy, yt_root, str(tmp_path / "unused"))
    pipe.produce(10)  # 5 rows per tablet, at most 2 per tablet and batch
    other = f"{yt_root}/consumer-driver"  # each mode its own consumer, both at the start of the queue
    create_consumer(yt, other, pipe.queue)
    script = tmp_path / "driver.py"
    script.write_text(SCRIPT)
    python = sys.executable
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    done = subprocess.run(
        [python, str(script), yt_proxy, pipe.queue, str(tmp_path), pipe.consumer, other],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    result = json.loads(lines[-1][len("RESULT ") :])
    log = done.stderr
    if HAS_READ_LIMITS:
        # executors: three capped batches; driver: the same, Spark runs AvailableNow for simple readers too
        assert result == {"executors": [4, 4, 2], "driver": [4, 4, 2]}, result
        assert NOTE not in log
        return
    assert result == {"executors": [4], "driver": [4]}, result  # one capped batch per run
    executors, driver = log.split("END OF RUN executors")
    for mode, part in (("executors", executors), ("driver", driver)):
        said = [line for line in part.splitlines() if NOTE in line]
        assert len(said) == 1, f"{mode}: {said}\n{part[-3000:]}"
        assert "caps (max_rows_per_partition=2)" in said[0] and "with 6 rows left for the next run" in said[0], said
