"""The README's demo: events stream from a 4-tablet queue through Spark into an output table, the query is
stopped mid-stream and restarted, and a summary shows rows in, rows out and consumer lag."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from spyt_queue.yt.admin import column, create_consumer, create_queue, create_sorted_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from yt.wrapper import YtClient

QUEUE, CONSUMER, OUTPUT = "//demo/events", "//demo/consumer", "//demo/enriched"
#: The demo's last line: where a newcomer goes from here.
WHAT_NEXT = (
    'what next: do the same by hand with README.md "Reading a queue": ytqueue local, ytqueue create-queue, '
    'ytqueue create-consumer, ytqueue produce, a spark.readStream.format("ytqueue") query, ytqueue status; '
    "ytqueue --help lists every command"
)


def _produce(client: YtClient, total: int, resume: threading.Event, console: Console) -> None:
    """Write ``total`` events in rounds of 500, a little apart, while the query runs: the first half at once, the
    second once ``resume`` is set (after query 1 stopped), so query 1 stops with events still to come."""
    sent, half = 0, total // 2
    while sent < total:
        if sent == half:
            console.log(f"producer: {sent} events written to {QUEUE}; the rest once query 1 has stopped")
            resume.wait()
        limit = half if sent < half else total
        rows = [
            {"user": f"user-{(sent + i) % 97}", "amount": float((sent + i) % 1000) / 10, "event_id": sent + i}
            for i in range(min(500, limit - sent))
        ]
        client.insert_rows(QUEUE, rows)
        sent += len(rows)
        time.sleep(0.2)
    console.log(f"producer: {sent} events written to {QUEUE}")


def _query(spark: SparkSession, proxy: str, checkpoint: str, available_now: bool) -> StreamingQuery:
    """The demo pipeline: events enriched into a sorted table keyed by the source row (idempotent)."""
    events = (
        spark.readStream.format("ytqueue")
        .option("proxy", proxy)
        .option("consumer_path", CONSUMER)
        .option("include_service_columns", "true")
        .option("max_rows_per_partition", "2000")
        .load(QUEUE)
    )
    enriched = events.selectExpr(
        "__spyt_streaming_src_tablet_index as src_tablet",
        "__spyt_streaming_src_row_index as src_row",
        "event_id",
        "user",
        "amount",
        "amount >= 50.0 as big",
    )
    writer = (
        enriched.writeStream.format("ytqueue")
        .option("proxy", proxy)
        .option("path", OUTPUT)
        .option("checkpointLocation", checkpoint)
    )
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="1 second")
    return writer.start()


def _stop_between_batches(spark: SparkSession, query: StreamingQuery, timeout_s: float = 60.0) -> None:
    """Stop ``query`` the way a user stops a pipeline on purpose: when no micro-batch is running, so no write is
    aborted, and with Spark's log off while it stops (an interrupted trigger logs ERROR lines that mean nothing
    here)."""
    deadline = time.monotonic() + timeout_s
    while query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.02)
    spark.sparkContext.setLogLevel("OFF")
    try:
        query.stop()
    finally:
        spark.sparkContext.setLogLevel("ERROR")


def run_demo(proxy: str | None, events: int, console: Console) -> int:
    """Run the demo end to end; returns the process exit code (0 when no event was lost or duplicated)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="ytqueue-demo-"))
    server = None
    if proxy is None:
        from spyt_queue.local import LocalYtServer

        server = LocalYtServer(data_dir=work / "yt").start()
        proxy = server.proxy
        console.log(f"embedded YTsaurus-compatible server at {proxy} (data in {work / 'yt'})")
    try:
        return _run(proxy, events, work, console)
    finally:
        if server is not None:
            server.stop()


def _run(proxy: str, events: int, work: Path, console: Console) -> int:
    from pyspark.sql import SparkSession

    from spyt_queue import register
    from spyt_queue.lag import backend_lag
    from spyt_queue.yt.backend import YtConnection, YtQueueBackend
    from spyt_queue.yt.client import make_yt_client

    client = make_yt_client(proxy)
    if client.exists(QUEUE):
        client.remove("//demo", recursive=True)
    schema = [column("event_id", "int64", required=True), column("user", "string"), column("amount", "double")]
    create_queue(client, QUEUE, schema, tablet_count=4)
    create_consumer(client, CONSUMER, QUEUE)
    create_sorted_table(
        client,
        OUTPUT,
        [
            column("src_tablet", "int64", sort_order="ascending"),
            column("src_row", "int64", sort_order="ascending"),
            column("event_id", "int64"),
            column("user", "string"),
            column("amount", "double"),
            column("big", "boolean"),
        ],
    )
    console.log(f"created queue {QUEUE} (4 tablets), consumer {CONSUMER}, output {OUTPUT} keyed by source row")

    console.log("starting Spark (a JVM: seconds on a quiet machine, up to a minute on a busy one): local[2]...")
    started = time.monotonic()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("ytqueue-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # progress bars would interleave with the demo's log
        .getOrCreate()
    )
    console.log(f"Spark started in {time.monotonic() - started:.0f} s")
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    checkpoint = str(work / "checkpoint")

    resume = threading.Event()
    producer = threading.Thread(target=_produce, args=(client, events, resume, console), daemon=True)
    producer.start()
    query = _query(spark, proxy, checkpoint, available_now=False)
    console.log("query 1 running while events are produced...")
    # Stopped by rows written, not by time: once its first rows are in, while half the events are still to come.
    deadline = time.time() + 300
    while time.time() < deadline and not list(client.select_rows(f"src_tablet from [{OUTPUT}] limit 1")):
        time.sleep(0.5)
    _stop_between_batches(spark, query)
    rows_after_first = len(list(client.select_rows(f"src_tablet from [{OUTPUT}]")))
    console.log(f"query 1 stopped mid-stream after writing {rows_after_first} of the {events} events")
    resume.set()
    producer.join()

    console.log("query 2: restart from the checkpoint with Trigger.AvailableNow to drain the queue")
    query = _query(spark, proxy, checkpoint, available_now=True)
    query.awaitTermination()
    if query.exception():
        console.print(f"[red]query failed: {query.exception()}")
        return 1

    out = list(client.select_rows(f"event_id from [{OUTPUT}]"))
    ids = [r["event_id"] for r in out]
    lag = backend_lag(YtQueueBackend(YtConnection(proxy), QUEUE, CONSUMER))
    table = Table(title="consumer after the restart")
    for name in ("tablet", "committed", "end", "lag"):
        table.add_column(name, justify="right")
    for part in lag:
        table.add_row(part.partition, str(part.committed), str(part.upper), str(part.lag))
    console.print(table)
    total_in = sum(p.upper for p in lag)
    ok = len(ids) == total_in == events and len(set(ids)) == len(ids) and sum(p.lag for p in lag) == 0
    console.print(
        f"rows in: [bold]{total_in}[/bold]  rows out: [bold]{len(ids)}[/bold]  distinct: {len(set(ids))}  "
        f"consumer lag: [bold]{sum(p.lag for p in lag)}[/bold]  -> "
        + ("[green]nothing lost, nothing duplicated" if ok else "[red]MISMATCH")
    )
    spark.stop()
    if ok:
        console.print(WHAT_NEXT)
    return 0 if ok else 1
