"""The streaming driver the chaos harness kills: ``python tests/chaos/driver.py SPEC.json``.

It runs every query of the spec (written by :mod:`tests.chaos.harness`) in one SparkSession (``local[2]``, or a
driver of the standalone cluster named by the spec's ``master``, with its ``spark_conf``), started one after the
other, each once the previous one has reported progress (two queries of one Python data source started at the same
moment can fail while Spark deserializes their tasks; see issue 13), with processing-time triggers, until it is
killed. A query that fails (the YT server or the Kafka broker was killed under it) is restarted from its checkpoint
in this process after a pause, at most ``max_query_restarts`` times, each logged on stderr as ``query-restart``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

#: Seconds a query gets to report its first progress before the next one is started anyway.
INIT_WAIT_S = 120.0


def start_query(spark: Any, query: dict[str, Any], trigger: dict[str, Any]) -> Any:
    """Start one query of the spec: ``format("ytqueue")`` reader options, ``selectExpr``, writer options."""
    reader = spark.readStream.format("ytqueue")
    for key, value in query["reader"].items():
        reader = reader.option(key, str(value))
    df = reader.load(query["load"]) if query.get("load") else reader.load()
    writer = df.selectExpr(*query["select"]).writeStream.format("ytqueue").queryName(query["name"])
    for key, value in query["writer"].items():
        writer = writer.option(key, str(value))
    return writer.option("checkpointLocation", query["checkpoint"]).trigger(**trigger).start()


def wait_initialised(query: Any) -> None:
    """Wait (bounded) until ``query`` reported progress or ended."""
    deadline = time.monotonic() + INIT_WAIT_S
    while query.isActive and query.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.2)


def main(argv: list[str]) -> int:
    """Run the spec in ``argv[1]`` until killed; the exit status when too many query restarts were needed."""
    spec = json.loads(open(argv[1]).read())
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in spec.get("spark_conf", {}).items():  # a standalone cluster's driver settings
        builder = builder.config(key, str(value))
    spark = (
        builder.master(spec.get("master") or "local[2]")
        .appName("spyt-queue-chaos")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.authenticate.socketTimeout", "120s")  # Python workers start slowly on a loaded machine
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import spyt_queue

    spyt_queue.register(spark)  # several queries of ytqueue in one driver (see README "Several queries")
    trigger = {"processingTime": f"{int(spec['trigger_ms'])} milliseconds"}
    running = {}
    for query in spec["queries"]:
        running[query["name"]] = start_query(spark, query, trigger)
        wait_initialised(running[query["name"]])
    print("running", flush=True)
    by_name = {query["name"]: query for query in spec["queries"]}
    restarts = 0
    while True:
        time.sleep(0.5)
        for name, handle in list(running.items()):
            if handle.isActive:
                continue
            error = str(handle.exception()).splitlines()[0][:300] if handle.exception() else "stopped"
            restarts += 1
            print(f"query-restart {name}: {error}", file=sys.stderr, flush=True)
            if restarts > int(spec["max_query_restarts"]):
                print("too many query restarts", file=sys.stderr, flush=True)
                return 4
            time.sleep(float(spec["restart_pause_s"]))
            running[name] = start_query(spark, by_name[name], trigger)
            wait_initialised(running[name])


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # do not wait for Spark's shutdown hooks: the harness only reads the status
