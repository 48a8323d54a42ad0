"""Side-by-side, one run: rows/s of the ytqueue source into Spark's ``noop`` sink (AvailableNow) versus a plain
``yt.wrapper`` pull loop over the same queue, and the driver-side cost of one trigger with 256 tablets.

    .venv/bin/python bench/bench_ytqueue_source.py [--rows 1000000] [--tablets 4] [--pull-rows 50000]
        [--proxy host:port]

Both sides pull ``--pull-rows`` rows per request through the same client settings (``yt.wrapper`` defaults, plus
no ``/hosts`` discovery before each request when the proxy lists no heavy proxies, as the source's executors do).
The source's time is the query's wall time from ``start()`` to its end, Spark's fixed start-up cost included; the
"read" figure is the sum of the batches' ``addBatch`` time only. Without ``--proxy`` it starts the embedded local
server. Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import yt.yson as yson
from yt.wrapper import YsonFormat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.backend import skip_empty_proxy_discovery
from spyt_queue.yt.client import make_yt_client

GOAL = 1.5


def _cpu_of(pid: int) -> float:
    """CPU seconds of a process and its reaped children (``/proc/<pid>/stat``: utime, stime, cutime, cstime)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant (Spark's JVM, its Python daemon and workers)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += _cpu_of(pid)
        stack.extend(parents.get(pid, []))
    return total


def fill(client, queue: str, rows: int, tablets: int) -> None:
    """Write ``rows`` small rows (an id and a ~40-byte payload) spread over the tablets."""
    chunk = 50_000
    payload = "x" * 40
    started = time.perf_counter()
    for first in range(0, rows, chunk):
        count = min(chunk, rows - first)
        batch = [{"$tablet_index": (first + i) % tablets, "id": first + i, "payload": payload} for i in range(count)]
        client.insert_rows(queue, batch)
        print(f"  filled {first + count:,}/{rows:,} rows", end="\r", flush=True)
    print(f"  filled {rows:,} rows in {time.perf_counter() - started:.1f}s" + " " * 20)


def pull_loop(client, queue: str, consumer: str, tablets: int, batch: int) -> tuple[int, float]:
    """The client's ceiling: pull every tablet to its end with ``pull_consumer``, parsing rows, one thread."""
    infos = client.get_tablet_infos(queue, list(range(tablets)))["tablets"]
    started = time.perf_counter()
    total = 0
    fmt = YsonFormat(format="binary")
    for tablet, info in enumerate(infos):
        offset, end = int(info["trimmed_row_count"]), int(info["total_row_count"])
        while offset < end:
            data = client.pull_consumer(
                consumer, queue, offset, tablet, max_row_count=min(batch, end - offset), format=fmt, raw=True
            ).read()
            rows = list(yson.loads(data, yson_type="list_fragment", always_create_attributes=False, encoding=None))
            total += len(rows)
            offset = rows[-1][b"$row_index"] + 1
    return total, time.perf_counter() - started


def spark_run(
    spark, proxy: str, queue: str, consumer: str, checkpoint: str, pull_rows: int
) -> tuple[int, float, float]:
    """ytqueue into the noop sink with AvailableNow; returns rows, wall seconds and the batches' addBatch seconds."""
    df = (
        spark.readStream.format("ytqueue")
        .option("proxy", proxy)
        .option("consumer_path", consumer)
        .option("startingOffsets", "earliest")
        .option("pull_batch_rows", str(pull_rows))
        .load(queue)
    )
    started = time.perf_counter()
    query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    add_batch = sum(p["durationMs"].get("addBatch", 0) for p in query.recentProgress) / 1000
    return rows, elapsed, add_batch


def trigger_cost(proxy: str, root: str, tablets: int = 256) -> float:
    """Driver-side seconds of one trigger (bounds of all tablets in one call + planning) with ``tablets``."""
    from spyt_queue.options import Options
    from spyt_queue.settings import ReaderSettings
    from spyt_queue.spark.stream_reader import QueueStreamReader
    from spyt_queue.yt.options import yt_backend_from_options

    client = make_yt_client(proxy)
    queue, consumer = f"{root}/wide", f"{root}/wide_consumer"
    create_queue(client, queue, [column("id", "int64")], tablet_count=tablets)
    create_consumer(client, consumer, queue)
    client.insert_rows(queue, [{"$tablet_index": i, "id": i} for i in range(tablets)])
    options = Options({"proxy": proxy, "consumer_path": consumer, "path": queue, "max_rows_per_partition": "1"})
    backend = yt_backend_from_options(options, True)
    reader = QueueStreamReader(backend, ReaderSettings.parse(options), backend.default_store())
    start = reader.initialOffset()
    reader.latestOffset(start, None)  # warm-up
    runs = 5
    started = time.perf_counter()
    for _ in range(runs):
        reader.latestOffset(start, None)
    return (time.perf_counter() - started) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--tablets", type=int, default=4)
    parser.add_argument("--pull-rows", type=int, default=50_000, help="rows per pull request, both sides")
    parser.add_argument("--proxy", default=None)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="ytqueue-bench-"))
    server = None
    proxy = args.proxy
    if proxy is None:
        from spyt_queue.local import LocalYtServer

        server = LocalYtServer(data_dir=work / "yt").start()
        proxy = server.proxy
    try:
        client = make_yt_client(proxy)
        skip_empty_proxy_discovery(client)
        root = f"//tmp/bench-{int(time.time())}"
        queue, consumer = f"{root}/queue", f"{root}/consumer"
        create_queue(client, queue, [column("id", "int64"), column("payload", "string")], tablet_count=args.tablets)
        create_consumer(client, consumer, queue)
        print(f"filling {queue} with {args.rows:,} rows over {args.tablets} tablets")
        fill(client, queue, args.rows, args.tablets)

        from pyspark.sql import SparkSession

        from spyt_queue import register

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        spark_run(spark, proxy, queue, consumer, str(work / "warmup"), args.pull_rows)  # JVM and worker warm-up

        jvm = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
        server_pid = server.pid if server is not None else None
        server_cpu0, own_cpu0 = _cpu_of(server_pid) if server_pid else 0.0, time.process_time()
        loop_rows, loop_s = pull_loop(client, queue, consumer, args.tablets, args.pull_rows)
        server_cpu1, own_cpu1, jvm_cpu1 = _cpu_of(server_pid) if server_pid else 0.0, time.process_time(), tree_cpu(jvm)
        src_rows, src_s, add_batch_s = spark_run(spark, proxy, queue, consumer, str(work / "chk"), args.pull_rows)
        server_cpu2, own_cpu2, jvm_cpu2 = _cpu_of(server_pid) if server_pid else 0.0, time.process_time(), tree_cpu(jvm)
        loop_cpu = (own_cpu1 - own_cpu0) + (server_cpu1 - server_cpu0)
        src_cpu = (own_cpu2 - own_cpu1) + (server_cpu2 - server_cpu1) + (jvm_cpu2 - jvm_cpu1)
        print()
        for label, rows, seconds in (
            ("plain yt.wrapper pull loop", loop_rows, loop_s),
            ("ytqueue -> noop (query)", src_rows, src_s),
            ("ytqueue -> noop (addBatch)", src_rows, add_batch_s),
        ):
            print(f"{label:<27}: {rows:>10,} rows in {seconds:6.2f}s = {rows / seconds:>12,.0f} rows/s")
        loop_rate = loop_rows / loop_s
        print(f"ratio ytqueue / pull loop  : {(src_rows / src_s) / loop_rate:.2f}  (goal >= {GOAL})")
        print(f"ratio, batches only        : {(src_rows / add_batch_s) / loop_rate:.2f}  (without query start-up)")
        print(
            f"CPU seconds (client + server; the source: driver, JVM, Python workers, server): loop {loop_cpu:.2f}, "
            f"source {src_cpu:.2f}; rows per CPU-second: loop {loop_rows / loop_cpu:,.0f}, "
            f"source {src_rows / src_cpu:,.0f}"
        )
        print(
            f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall-time ratios "
            "favour the single-threaded loop when the cores are oversubscribed)"
        )
        cost = trigger_cost(proxy, root)
        print(f"driver cost of one trigger with 256 tablets: {cost * 1000:.1f} ms")
        spark.stop()
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
