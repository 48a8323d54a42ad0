"""End-to-end latency under a steady producer, side by side in one run, ``trigger(processingTime="0 seconds")``:

* ``yt``: ``format("ytqueue")`` reading a queue of the embedded YT server through a consumer,
* ``kafka``: the ytqueue Kafka adapter (``format("ytqueue")`` with ``kafka.bootstrap.servers``),
* ``jvm``: Spark's JVM Kafka source (``format("kafka")``, ``spark-sql-kafka-0-10``),
* ``yt-unpacked``, ``kafka-unpacked``: the first two with ``min_rows_per_task=0`` (one task per tablet/partition
  instead of packing a small batch's ranges into shared tasks), for packing on vs off in the same run,
* ``yt-driver``, ``kafka-driver``: the first two with ``read_mode=driver`` (the batch read by the driver's Python
  runner, no Python task on executors), for the low-latency mode beside the default one and the JVM source.

    .venv/bin/python bench/bench_latency.py [--rates 1000,10000] [--seconds 30] [--warmup 8]
        [--partitions 4] [--paths yt,yt-driver,yt-unpacked,kafka,kafka-driver,kafka-unpacked,jvm]
        [--profile-batches 20]

A producer thread writes rows carrying their insert wall-clock time (ms, taken just before ``insert_rows`` /
``produce``) at a steady rate; the query's sink is a ``foreachBatch`` that collects the batch and records
``arrival - insert`` per row once the rows are on the driver. After a warm-up, rows inserted during ``--seconds``
are measured; the script waits (bounded) until every one of them arrived, then stops the query. Prints p50 / p99 /
max latency, rows seen, the rate achieved, micro-batches and Spark's mean ``durationMs`` per batch (where a
trigger's time goes, same names for every source), then a driver profile of our reader: the calls Spark's driver
makes per micro-batch (``latestOffset``, ``partitions``, ``read``, ``commit``) timed in this process with their YT
HTTP round trips. Starts the embedded YT server, a Kafka broker and one SparkSession (``local[2]``), stops all
three; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.kafka_broker import KafkaBroker, spark_kafka_jars

PATHS = {
    "yt": "ytqueue, YT queue",
    "kafka": "ytqueue, Kafka adapter",
    "jvm": "Spark JVM Kafka",
    "yt-unpacked": "ytqueue, YT, 1 task/tablet",
    "kafka-unpacked": "ytqueue, Kafka, 1 task/part",
    "yt-driver": "ytqueue, YT, driver read",
    "kafka-driver": "ytqueue, Kafka, driver read",
}
#: The reader options of the paths named ``<backend>-<suffix>``.
PATH_OPTIONS = {"unpacked": {"min_rows_per_task": "0"}, "driver": {"read_mode": "driver"}}
DURATIONS = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets", "triggerExecution")


def now_ms() -> int:
    """Wall-clock milliseconds (one clock for the producer and the sink: same process)."""
    return time.time_ns() // 1_000_000


def percentile(values: list[int], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values`` by nearest rank."""
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))])


@dataclass
class Window:
    """What one (path, rate) measurement saw."""

    start_ms: int = 1 << 62  # set when the measurement begins
    end_ms: int = 1 << 62
    produced: int = 0  # rows inserted with a time inside the window
    latencies: list[int] = field(default_factory=list)
    batches: int = 0
    arrived_total: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, times: list[int], arrival: int) -> None:
        with self.lock:
            self.batches += 1
            self.arrived_total += len(times)
            self.latencies.extend(arrival - t for t in times if self.start_ms <= t < self.end_ms)


class Producer(threading.Thread):
    """Inserts ``rate`` rows per second in small steady chunks (every ``tick`` seconds) until stopped."""

    def __init__(self, write: Callable[[int, int, int], None], rate: int, window: Window, tick: float = 0.005):
        super().__init__(daemon=True)
        self.write, self.rate, self.window, self.tick = write, rate, window, tick
        self.stopping = threading.Event()
        self.sent = 0
        self.stamps: list[tuple[int, int]] = []  # (insert time, rows) of every write
        self.began = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        self.began = time.monotonic()
        try:
            while not self.stopping.is_set():
                due = int(self.rate * (time.monotonic() - self.began)) - self.sent
                if due > 0:
                    stamp = now_ms()
                    self.write(self.sent, due, stamp)
                    self.sent += due
                    self.stamps.append((stamp, due))
                time.sleep(self.tick)
        except BaseException as error:  # reported by the main thread
            self.error = error

    def achieved(self) -> float:
        return self.sent / max(1e-9, time.monotonic() - self.began)


class YtPath:
    """A 4-tablet queue (``id``, ``ts``) with a consumer on the embedded server."""

    def __init__(
        self, proxy: str, root: str, partitions: int, name: str, options: dict[str, str] | None = None
    ) -> None:
        from spyt_queue.yt.admin import column, create_consumer, create_queue
        from spyt_queue.yt.client import make_yt_client

        self.proxy, self.partitions, self.options = proxy, partitions, options or {}
        self.client = make_yt_client(proxy)
        self.queue, self.consumer = f"{root}/{name}", f"{root}/{name}-consumer"
        create_queue(self.client, self.queue, [column("id", "int64"), column("ts", "int64")], tablet_count=partitions)
        create_consumer(self.client, self.consumer, self.queue)

    def write(self, first: int, count: int, stamp: int) -> None:
        rows = [{"$tablet_index": (first + i) % self.partitions, "id": first + i, "ts": stamp} for i in range(count)]
        self.client.insert_rows(self.queue, rows)

    def stream(self, spark: Any) -> Any:
        return (
            spark.readStream.format("ytqueue")
            .option("proxy", self.proxy)
            .option("consumer_path", self.consumer)
            .options(**self.options)
            .load(self.queue)
            .selectExpr("ts")
        )


class KafkaPath:
    """A topic with ``partitions`` partitions read by our adapter (``jvm=False``) or Spark's JVM source."""

    def __init__(
        self, bootstrap: str, partitions: int, name: str, jvm: bool, options: dict[str, str] | None = None
    ) -> None:
        from confluent_kafka import Producer as KafkaProducer
        from confluent_kafka.admin import AdminClient, NewTopic

        self.bootstrap, self.partitions, self.jvm, self.options = bootstrap, partitions, jvm, options or {}
        self.topic = name
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
        self.producer = KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 1})

    def write(self, first: int, count: int, stamp: int) -> None:
        value = str(stamp).encode()
        for i in range(count):
            self.producer.produce(self.topic, value=value, partition=(first + i) % self.partitions)
        self.producer.poll(0)

    def stream(self, spark: Any) -> Any:
        reader = (
            spark.readStream.format("kafka" if self.jvm else "ytqueue")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("subscribe", self.topic)
            .option("startingOffsets", "earliest")
        )
        if not self.jvm:
            reader = reader.option("kafka.group.id", f"latency-{self.topic}").options(**self.options)
        return reader.load().selectExpr("CAST(CAST(value AS STRING) AS BIGINT) AS ts")

    def close(self) -> None:
        self.producer.flush(30)


def measure(spark: Any, source: Any, rate: int, args: argparse.Namespace, label: str, work: Path) -> dict[str, Any]:
    """Run one query under a producer at ``rate`` rows/s; latency figures and Spark's per-batch durations."""
    window = Window()

    def sink(frame: Any, batch_id: int) -> None:
        times = [row[0] for row in frame.collect()]
        window.record(times, now_ms())

    query = (
        source.stream(spark)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(work / f"cp-{uuid.uuid4().hex[:8]}"))
        .trigger(processingTime="0 seconds")
        .start()
    )
    producer = Producer(source.write, rate, window)
    producer.start()
    try:
        started = time.monotonic()
        while window.batches == 0 and time.monotonic() - started < args.drain:  # query start: not measured
            if producer.error is not None or query.exception() is not None:
                break
            time.sleep(0.2)
        print(f"  [{label} @ {rate}/s] first batch after {time.monotonic() - started:.1f}s; warming up", flush=True)
        time.sleep(args.warmup)
        backlog, caught_up = producer.sent, time.monotonic() + args.drain  # the query start's backlog: not measured
        while window.arrived_total < backlog and time.monotonic() < caught_up and query.exception() is None:
            time.sleep(0.2)
        window.start_ms = now_ms()
        first_batch = (query.lastProgress or {}).get("batchId", -1)
        ends = time.monotonic() + args.seconds
        while time.monotonic() < ends:
            time.sleep(min(5.0, max(0.0, ends - time.monotonic())))
            with window.lock:
                seen = list(window.latencies)
            p50 = f"{percentile(seen, 0.5):.0f} ms" if seen else "-"
            print(
                f"  [{label} @ {rate}/s] {ends - time.monotonic():4.0f}s left: produced {producer.sent:,} "
                f"({producer.achieved():,.0f}/s), arrived {window.arrived_total:,} in {window.batches} batches, "
                f"p50 so far {p50}",
                flush=True,
            )
            if producer.error is not None or query.exception() is not None:
                break
        window.end_ms = now_ms()
        producer.stopping.set()
        producer.join(30)
        # Rows inserted inside the window, by the same test the sink applies (decided once the window is closed).
        window.produced = sum(n for stamp, n in producer.stamps if window.start_ms <= stamp < window.end_ms)
        if isinstance(source, KafkaPath):
            source.close()
        deadline = time.monotonic() + args.drain
        while len(window.latencies) < window.produced and time.monotonic() < deadline:
            if query.exception() is not None:
                break
            time.sleep(0.2)
        error = producer.error or query.exception()
        if error is not None:
            raise RuntimeError(f"{label} at {rate} rows/s failed: {error}")
        progress = [p for p in query.recentProgress if p["batchId"] > first_batch and p["numInputRows"] > 0]
    finally:
        producer.stopping.set()
        query.stop()
    durations = {
        key: statistics.mean(p["durationMs"].get(key, 0) for p in progress) if progress else 0.0 for key in DURATIONS
    }
    lat = window.latencies
    return {
        "rows": len(lat),
        "produced": window.produced,
        "rate": window.produced / max(1e-9, (window.end_ms - window.start_ms) / 1000),
        "p50": percentile(lat, 0.5) if lat else float("nan"),
        "p99": percentile(lat, 0.99) if lat else float("nan"),
        "max": max(lat) if lat else float("nan"),
        "batches": len(progress),
        "durations": durations,
    }


def profile_reader(reader: Any, write: Callable[[int, int, int], None], batches: int, rows: int) -> dict[str, Any]:
    """Drive a stream reader in the order Spark's driver does, ``batches`` times with ``rows`` new rows each:
    ``latestOffset(start)`` (which commits ``start``, the last batch, and fetches the bounds), ``commit(start)``
    (Spark's delayed commit of that batch: nothing left to do), ``partitions``, then reading every partition (here,
    in this process). Mean ms and YT round trips of each."""
    from spyt_queue.yt.client import counting_requests

    names = ("latestOffset", "commit", "partitions", "read")
    totals: dict[str, float] = Counter()
    trips: dict[str, Counter[str]] = {name: Counter() for name in names}
    start = reader.initialOffset()
    sent = 0

    def step(name: str, call: Callable[..., Any], *call_args: Any) -> Any:
        with counting_requests() as counts:
            began = time.perf_counter()
            result = call(*call_args)
            totals[name] += time.perf_counter() - began
        trips[name].update(counts)
        return result

    done = -2  # two warm-up batches: clients, connections, schema, the first commit's baseline
    while done < batches:
        write(sent, rows, now_ms())
        sent += rows
        end = step("latestOffset", reader.latestOffset, start, None)
        if end == start:
            continue
        step("commit", reader.commit, start)
        parts = step("partitions", reader.partitions, start, end)
        step("read", lambda chosen: [list(reader.read(p)) for p in chosen], parts)
        start = end
        done += 1
        if done <= 0:
            totals.clear()
            for counter in trips.values():
                counter.clear()
    return {name: (totals[name] * 1000 / batches, sum(trips[name].values()) / batches, trips[name]) for name in names}


def _profile(args: argparse.Namespace, proxy: str, root: str, bootstrap: str) -> None:
    from spyt_queue.connect import backend_for, settings_for, store_for
    from spyt_queue.options import Options
    from spyt_queue.spark.stream_reader import QueueStreamReader

    print(f"\ndriver profile of our reader per micro-batch ({args.profile_batches} batches of 100 rows, in process):")
    yt_source = YtPath(proxy, root, args.partitions, "profile")
    kafka_source = KafkaPath(bootstrap, args.partitions, f"profile-{uuid.uuid4().hex[:8]}", jvm=False)
    for label, options, write in (
        (
            "yt",
            {"proxy": proxy, "consumer_path": yt_source.consumer, "path": yt_source.queue},
            yt_source.write,
        ),
        (
            "kafka",
            {
                "kafka.bootstrap.servers": bootstrap,
                "subscribe": kafka_source.topic,
                "startingOffsets": "earliest",
                "kafka.group.id": f"profile-{kafka_source.topic}",
            },
            lambda first, count, stamp: (kafka_source.write(first, count, stamp), kafka_source.producer.flush(10)),
        ),
    ):
        opts = Options(options)
        backend = backend_for(opts, streaming=True)
        reader = QueueStreamReader(backend, settings_for(opts, streaming=True), store_for(opts, backend))
        result = profile_reader(reader, write, args.profile_batches, 100)
        total = sum(ms for ms, _, _ in result.values())
        print(f"  {PATHS[label]:<24} total {total:7.1f} ms/batch")
        for name, (ms, count, by_command) in result.items():
            detail = f"  YT round trips {count:.1f} ({', '.join(f'{k} {v}' for k, v in sorted(by_command.items()))})"
            print(f"    {name:<13} {ms:7.1f} ms{detail if label == 'yt' else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="1000,10000", help="producer rates, rows/s (default 1000,10000)")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured seconds per rate per path")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds between the first batch and the measurement")
    parser.add_argument("--drain", type=float, default=60.0, help="max seconds to wait for the measured rows")
    parser.add_argument("--partitions", type=int, default=4, help="tablets / topic partitions (default 4)")
    parser.add_argument(
        "--paths",
        default="yt,yt-driver,yt-unpacked,kafka,kafka-driver,kafka-unpacked,jvm",
        help="which paths (default yt,yt-driver,yt-unpacked,kafka,kafka-driver,kafka-unpacked,jvm)",
    )
    parser.add_argument("--profile-batches", type=int, default=20, help="driver profile batches (0: skip)")
    parser.add_argument("--profile-only", action="store_true", help="only the driver profile (no Spark queries)")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    jars = spark_kafka_jars()
    if not jars:
        sys.exit("Spark's Kafka source jars are missing: run integration/install.sh")
    rates = [int(r) for r in args.rates.split(",")]
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    work = Path(tempfile.mkdtemp(prefix="latency-bench-"))

    from spyt_queue.local import LocalYtServer
    from spyt_queue.yt.client import make_yt_client

    results: dict[tuple[str, int], dict[str, Any]] = {}
    server = LocalYtServer(data_dir=work / "yt").start()
    try:
        with KafkaBroker(heap="1g") as broker:
            proxy, bootstrap = server.proxy, broker.bootstrap_servers
            root = f"//tmp/bench-latency-{int(time.time())}"
            make_yt_client(proxy).create("map_node", root, recursive=True)
            print(
                f"YT {proxy}, Kafka {bootstrap}; rates {rates} rows/s, {args.seconds:.0f}s each after "
                f"{args.warmup:.0f}s warm-up, {args.partitions} partitions, paths {paths}",
                flush=True,
            )

            if not args.profile_only:
                from pyspark.sql import SparkSession

                from spyt_queue import register

                spark = (
                    SparkSession.builder.master("local[2]")
                    .config("spark.ui.enabled", "false")
                    .config("spark.ui.showConsoleProgress", "false")
                    .config("spark.sql.shuffle.partitions", "2")
                    .config("spark.sql.streaming.numRecentProgressUpdates", "100000")
                    .config("spark.jars", ",".join(jars))
                    .getOrCreate()
                )
                spark.sparkContext.setLogLevel("ERROR")
                register(spark)
                try:
                    for rate in rates:
                        for path in paths:
                            name = f"{path}-{rate}-{uuid.uuid4().hex[:6]}"
                            source: Any
                            options = PATH_OPTIONS.get(path.partition("-")[2])
                            if path.startswith("yt"):
                                source = YtPath(proxy, root, args.partitions, name, options)
                            else:
                                source = KafkaPath(bootstrap, args.partitions, name, jvm=path == "jvm", options=options)
                            for attempt in range(3):  # an overloaded machine: Spark's 10 s runner start-up limit
                                try:
                                    results[(path, rate)] = measure(spark, source, rate, args, PATHS[path], work)
                                    break
                                except RuntimeError as error:
                                    if "failed to connect back" not in str(error) or attempt == 2:
                                        raise
                                    print(f"  [{PATHS[path]} @ {rate}/s] {error}; starting it again", flush=True)
                            r = results[(path, rate)]
                            print(f"  [{PATHS[path]} @ {rate}/s] p50 {r['p50']:.0f}, p99 {r['p99']:.0f} ms", flush=True)
                finally:
                    spark.stop()
            if args.profile_batches:
                _profile(args, proxy, root, bootstrap)
    finally:
        server.stop()

    print(f"\nlatency insert -> foreachBatch, trigger processingTime=0, {args.partitions} partitions, local[2]")
    print(
        f"{'path':<24} {'rate/s':>7} {'achieved':>9} {'rows':>8} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
        f"{'batches':>7}  mean ms per batch: " + " ".join(f"{k}" for k in DURATIONS)
    )
    for (path, rate), r in results.items():
        spent = " ".join(f"{r['durations'][k]:.0f}" for k in DURATIONS)
        print(
            f"{PATHS[path]:<24} {rate:>7,} {r['rate']:>9,.0f} {r['rows']:>8,} {r['p50']:>7.0f} {r['p99']:>7.0f} "
            f"{r['max']:>7.0f} {r['batches']:>7}  {spent}"
        )
        if r["rows"] < r["produced"]:
            print(f"  ({r['produced'] - r['rows']:,} measured rows had not arrived when the drain wait ended)")
    for rate in rates:
        jvm = results.get(("jvm", rate))
        for path in ("yt", "yt-driver", "kafka", "kafka-driver"):
            ours = results.get((path, rate))
            if jvm and ours and jvm["p50"] > 0:
                print(
                    f"{PATHS[path]} / Spark JVM Kafka at {rate}/s: p50 {ours['p50'] / jvm['p50']:.2f}, "
                    f"p99 {ours['p99'] / max(1.0, jvm['p99']):.2f}"
                )
    for rate in rates:
        for path in ("yt", "kafka"):
            packed, unpacked = results.get((path, rate)), results.get((f"{path}-unpacked", rate))
            if packed and unpacked:
                add_on, add_off = packed["durations"]["addBatch"], unpacked["durations"]["addBatch"]
                print(
                    f"{PATHS[path]} at {rate}/s, packing on vs off: addBatch {add_on:.0f} vs {add_off:.0f} ms "
                    f"({(add_on - add_off) / max(1.0, add_off):+.0%}), p50 {packed['p50']:.0f} vs "
                    f"{unpacked['p50']:.0f} ms ({(packed['p50'] - unpacked['p50']) / max(1.0, unpacked['p50']):+.0%})"
                )
    for rate in rates:
        for path in ("yt", "kafka"):
            default, driver = results.get((path, rate)), results.get((f"{path}-driver", rate))
            if default and driver:
                print(
                    f"{PATHS[path]} at {rate}/s, read_mode driver vs executors: addBatch "
                    f"{driver['durations']['addBatch']:.0f} vs {default['durations']['addBatch']:.0f} ms, p50 "
                    f"{driver['p50']:.0f} vs {default['p50']:.0f} ms, "
                    f"p99 {driver['p99']:.0f} vs {default['p99']:.0f} ms"
                )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
