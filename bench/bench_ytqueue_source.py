"""Side-by-side, one run: rows/s of the ytqueue source into Spark's ``noop`` sink (AvailableNow) versus a plain
``yt.wrapper`` pull loop over the same queue, and the driver-side cost of one trigger with 256 tablets.

Each is run with YSON pulls and with ``schemaful_dsv`` pulls (``read_format``): the one-thread YSON loop (rows
parsed by ``yt.yson``), the one-thread DSV loop (``pyarrow.csv`` on the text), the source's executor path in one
thread (``read_range`` of every tablet, Arrow batches as Spark gets them), and the Spark query. Client CPU per row is
split into the pull (request and body transfer) and the decode into rows or Arrow batches.

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

import pyarrow as pa
import pyarrow.csv as pacsv
import yt.yson as yson
from yt.wrapper import SchemafulDsvFormat, YsonFormat

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


def yson_loop(client, queue: str, consumer: str, tablets: int, batch: int) -> tuple[int, float, float]:
    """The client's ceiling, the loop a ``yt.wrapper`` user writes: pull every tablet to its end with
    ``pull_consumer``, parsing rows, one thread. Returns rows, wall seconds, CPU seconds spent parsing."""
    return _loop(client, queue, consumer, tablets, batch, YsonFormat(format="binary"), _parse_yson)


def dsv_loop(client, queue: str, consumer: str, tablets: int, batch: int) -> tuple[int, float, float]:
    """The same loop pulling ``schemaful_dsv`` (``$row_index``, ``id``, ``payload``), parsed by ``pyarrow.csv``."""
    fmt = SchemafulDsvFormat(
        columns=["$row_index", "id", "payload"],
        attributes={"missing_value_mode": "print_sentinel", "missing_value_sentinel": "\\N"},
    )
    return _loop(client, queue, consumer, tablets, batch, fmt, _parse_dsv)


def _parse_yson(data: bytes) -> tuple[int, int]:
    rows = list(yson.loads(data, yson_type="list_fragment", always_create_attributes=False, encoding=None))
    return len(rows), rows[-1][b"$row_index"]


_DSV_READ = pacsv.ReadOptions(column_names=["row", "id", "payload"], use_threads=False, block_size=1 << 24)
_DSV_PARSE = pacsv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False)
_DSV_CONVERT = pacsv.ConvertOptions(
    column_types={"row": pa.int64(), "id": pa.int64(), "payload": pa.string()},
    null_values=["\\N"],
    strings_can_be_null=True,
)


def _parse_dsv(data: bytes) -> tuple[int, int]:
    table = pacsv.read_csv(
        pa.py_buffer(data), read_options=_DSV_READ, parse_options=_DSV_PARSE, convert_options=_DSV_CONVERT
    )
    return table.num_rows, table.column(0)[-1].as_py()


def _loop(client, queue, consumer, tablets, batch, fmt, parse) -> tuple[int, float, float]:
    infos = client.get_tablet_infos(queue, list(range(tablets)))["tablets"]
    started = time.perf_counter()
    total, parse_cpu = 0, 0.0
    for tablet, info in enumerate(infos):
        offset, end = int(info["trimmed_row_count"]), int(info["total_row_count"])
        while offset < end:
            data = client.pull_consumer(
                consumer, queue, offset, tablet, max_row_count=min(batch, end - offset), format=fmt, raw=True
            ).read()
            cpu0 = time.process_time()
            count, last = parse(data)
            parse_cpu += time.process_time() - cpu0
            total += count
            offset = last + 1
    return total, time.perf_counter() - started, parse_cpu


def source_path(proxy: str, queue: str, consumer: str, tablets: int, batch: int, read_format: str):
    """The source's executor path in this process, one thread: ``read_range`` of every tablet into Arrow batches.
    Returns rows, wall seconds, CPU seconds of the pulls (request, transfer) and of the rest (decode, checks)."""
    from spyt_queue.spark.partitions import DataLossPolicy
    from spyt_queue.yt.backend import YtQueueBackend
    from spyt_queue.yt.client import YtConnection

    backend = YtQueueBackend(YtConnection(proxy), queue, consumer, pull_batch_rows=batch, read_format=read_format)
    backend.schema()
    bounds = backend.bounds()
    pull_cpu = [0.0]
    pull_bytes = backend._pull_bytes

    def timed_pull(*args):
        cpu0 = time.process_time()
        try:
            return pull_bytes(*args)
        finally:
            pull_cpu[0] += time.process_time() - cpu0

    backend._pull_bytes = timed_pull  # type: ignore[method-assign]
    started, cpu0 = time.perf_counter(), time.process_time()
    rows = 0
    for key in sorted(bounds, key=int):
        for record_batch in backend.read_range(key, bounds[key].lower, bounds[key].upper, DataLossPolicy(True)):
            rows += record_batch.num_rows
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    assert backend.pull_counts[read_format] > 0, backend.pull_counts
    return rows, wall, pull_cpu[0], cpu - pull_cpu[0]


def spark_run(
    spark, proxy: str, queue: str, consumer: str, checkpoint: str, pull_rows: int, read_format: str = "auto"
) -> tuple[int, float, float]:
    """ytqueue into the noop sink with AvailableNow; returns rows, wall seconds and the batches' addBatch seconds."""
    df = (
        spark.readStream.format("ytqueue")
        .option("proxy", proxy)
        .option("consumer_path", consumer)
        .option("startingOffsets", "earliest")
        .option("pull_batch_rows", str(pull_rows))
        .option("read_format", read_format)
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

        def cpu_now() -> tuple[float, float, float]:
            """(this process, the server, Spark's process tree) CPU seconds."""
            return time.process_time(), _cpu_of(server_pid) if server_pid else 0.0, tree_cpu(jvm)

        lines: list[tuple[str, int, float, float | None, float, float]] = []  # label, rows, s, decode, client, server
        rates: dict[str, float] = {}
        for label, loop in (("YSON pull loop, 1 thread", yson_loop), ("DSV pull loop, 1 thread", dsv_loop)):
            before = cpu_now()
            rows, seconds, parse_cpu = loop(client, queue, consumer, args.tablets, args.pull_rows)
            after = cpu_now()
            lines.append((label, rows, seconds, parse_cpu, after[0] - before[0], after[1] - before[1]))
            rates[label] = rows / seconds
        for read_format in ("yson", "dsv"):
            before = cpu_now()
            rows, seconds, _pull_cpu, decode_cpu = source_path(
                proxy, queue, consumer, args.tablets, args.pull_rows, read_format
            )
            after = cpu_now()
            label = f"source read_range, {read_format}"
            lines.append((label, rows, seconds, decode_cpu, after[0] - before[0], after[1] - before[1]))
        queries = []
        for read_format in ("yson", "auto"):
            query_consumer = f"{root}/consumer_{read_format}"
            create_consumer(client, query_consumer, queue)
            before = cpu_now()
            src_rows, src_s, add_batch_s = spark_run(
                spark, proxy, queue, query_consumer, str(work / f"chk_{read_format}"), args.pull_rows, read_format
            )
            after = cpu_now()
            all_cpu = sum(after) - sum(before)
            queries.append((read_format, src_rows, src_s, add_batch_s, all_cpu))
        print()
        print(
            f"{'':<28}{'rows':>11}{'seconds':>9}{'rows/s':>12}{'decode ns/row':>15}{'client ns/row':>15}"
            f"{'server ns/row':>15}"
        )
        for label, rows, seconds, decode, client_cpu, server_cpu in lines:
            print(
                f"{label:<28}{rows:>11,}{seconds:>9.2f}{rows / seconds:>12,.0f}{decode / rows * 1e9:>15,.0f}"
                f"{client_cpu / rows * 1e9:>15,.0f}{server_cpu / rows * 1e9:>15,.0f}"
            )
        print("(decode: parsing the body into rows or Arrow batches; client: all CPU of this process, pulls included)")
        yson_rate = rates["YSON pull loop, 1 thread"]
        dsv_rate = rates["DSV pull loop, 1 thread"]
        for read_format, src_rows, src_s, add_batch_s, all_cpu in queries:
            name = "read_format=" + read_format
            print(
                f"ytqueue -> noop, {name:<17}: {src_rows:>10,} rows; query {src_rows / src_s:>10,.0f} rows/s "
                f"({src_s:.2f}s), batches only {src_rows / add_batch_s:>10,.0f} rows/s; CPU of every process "
                f"{all_cpu / src_rows * 1e9:,.0f} ns/row"
            )
            print(
                f"  ratio to the YSON loop {(src_rows / src_s) / yson_rate:.2f} (goal >= {GOAL}; batches only "
                f"{(src_rows / add_batch_s) / yson_rate:.2f}), to the DSV loop {(src_rows / src_s) / dsv_rate:.2f}"
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
