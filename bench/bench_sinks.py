"""Sink throughput side by side, one run, same machine:

(a) YT: ``df.write.format("ytqueue")`` into a sorted and an ordered dynamic table versus a one-thread
    ``yt.wrapper`` ``insert_rows`` loop writing the same rows, in chunks of the same size (``--batch``, the sink's
    ``dyn_batch_size``), into a fresh table of the same kind on the same embedded server.
(b) Kafka: the ytqueue Kafka sink versus Spark's JVM Kafka sink (``df.write.format("kafka")``) and a plain
    ``confluent-kafka`` produce loop, the same records into fresh topics with the same partition count.

    .venv/bin/python bench/bench_sinks.py [--rows 1000000] [--records 2000000] [--size 100] [--partitions 4]
        [--batch 50000] [--tasks 2] [--only yt|kafka] [--option key=value ...] [--rounds 1]

What is fair: both Spark sinks are batch writes (``df.write``) of a DataFrame that is cached and counted first, in
``--tasks`` partitions, so the time is the sink's (Spark's scheduling and its Arrow hand-over to the Python
workers included; they are part of what a user pays). The loops get their rows ready-made as Python values (YT:
lists of dicts, Kafka: one ``bytes`` value) outside the timed part: the baseline is the client call alone. The
producers of the Kafka loop and the ytqueue sink use the same settings (``acks=all``, idempotence, librdkafka's
defaults otherwise; ``--option kafka.linger.ms=...`` changes the ytqueue sink's, and the loop takes the same
``kafka.*`` options). Starts the embedded YT server and a Kafka broker on 127.0.0.1 and stops them at the end.
Prints rows/s, ratios and CPU seconds; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

YT_GOAL = 0.9
KAFKA_GOAL = 1.0
TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int | None, exclude: int | None = None) -> float:
    """CPU seconds (user + system, reaped children included) of ``root`` and its live descendants, leaving out
    the subtree of ``exclude`` (one scan of ``/proc``, so the two figures of a run are read at the same moment)."""
    if root is None:
        return 0.0
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2 :].split()
            stats[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / TICKS)
    total, frontier = 0.0, [root]
    while frontier:
        pid = frontier.pop()
        if pid == exclude:
            continue
        total += stats.get(pid, (0, 0.0))[1]
        frontier.extend(child for child, (parent, _) in stats.items() if parent == pid)
    return total


class Meter:
    """Times one run and charges CPU to the writer's process trees and the server's."""

    def __init__(self, writers: list[int], server: int | None) -> None:
        self.writers, self.server = writers, server
        self.results: dict[str, dict[str, float]] = {}

    def run(self, label: str, rows: int, work: Callable[[], Any]) -> dict[str, float]:
        """Run ``work()`` (which writes ``rows`` rows), print and keep the figures (the best of several rounds)."""
        print(f"  {label}: writing {rows:,} rows...", flush=True)
        server0, cpu0 = tree_cpu(self.server), sum(tree_cpu(p, self.server) for p in self.writers)
        started = time.perf_counter()
        work()
        seconds = time.perf_counter() - started
        server = tree_cpu(self.server) - server0
        cpu = sum(tree_cpu(p, self.server) for p in self.writers) - cpu0
        result = {"rows": rows, "seconds": seconds, "rate": rows / seconds, "cpu": cpu, "server_cpu": server}
        print(f"  {label}: {rows / seconds:,.0f} rows/s ({seconds:.2f}s, writer CPU {cpu:.2f}s, server {server:.2f}s)")
        best = self.results.get(label)
        if best is None or result["seconds"] < best["seconds"]:
            self.results[label] = result
        return result

    def table(self) -> None:
        print(f"\n{'writer':<34} {'rows':>11} {'wall s':>8} {'rows/s':>12} {'writer CPU-s':>13} {'server CPU-s':>13}")
        for label, r in self.results.items():
            print(
                f"{label:<34} {int(r['rows']):>11,} {r['seconds']:>8.2f} {r['rate']:>12,.0f} {r['cpu']:>13.2f} "
                f"{r['server_cpu']:>13.2f}"
            )

    def ratio(self, ours: str, theirs: str, goal: float | None = None) -> None:
        a, b = self.results[ours], self.results[theirs]
        cpu = (a["cpu"] / a["rows"]) / max(b["cpu"] / b["rows"], 1e-12)
        wanted = f"   (goal >= {goal})" if goal is not None else ""
        print(f"{ours} / {theirs}: {a['rate'] / b['rate']:.2f}{wanted}; writer CPU per row {cpu:.2f}x")


def register_null_sink(spark) -> None:  # type: ignore[no-untyped-def]
    """``format("bench_null")``: a Python Data Source sink whose tasks read their Arrow batches and write nothing,
    the engine's share of a Python sink (Spark's scheduling, the cached rows to Arrow, the hand-over to the
    Python workers), measured beside the real sinks."""
    from dataclasses import dataclass

    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    @dataclass
    class Done(WriterCommitMessage):
        rows: int

    class NullWriter(DataSourceArrowWriter):
        def write(self, iterator):  # type: ignore[no-untyped-def,override]
            return Done(sum(batch.num_rows for batch in iterator))

    class NullSink(DataSource):
        @classmethod
        def name(cls) -> str:
            return "bench_null"

        def writer(self, schema, overwrite):  # type: ignore[no-untyped-def]
            return NullWriter()

    spark.dataSource.register(NullSink)


def spark_session(jars: list[str], tasks: int):  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    from spyt_queue import register

    builder = (
        SparkSession.builder.master(f"local[{tasks}]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(tasks))
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    register_null_sink(spark)
    return spark


def null_write(df) -> None:  # type: ignore[no-untyped-def]
    df.write.format("bench_null").mode("append").save()


# -- (a) YT --------------------------------------------------------------------------------------------------------
def yt_part(spark, args, meter_for: Callable[[int | None], Meter]) -> Meter:  # type: ignore[no-untyped-def]
    from spyt_queue.local import LocalYtServer
    from spyt_queue.yt.admin import column, create_queue, create_sorted_table
    from spyt_queue.yt.backend import skip_empty_proxy_discovery
    from spyt_queue.yt.client import make_yt_client

    work = Path(tempfile.mkdtemp(prefix="sink-bench-yt-"))
    server = LocalYtServer(data_dir=work / "yt").start()
    try:
        proxy = server.proxy
        client = make_yt_client(proxy)
        skip_empty_proxy_discovery(client)  # as the sink's executors do
        root = f"//tmp/sinks-{int(time.time())}"
        schema = [column("id", "int64"), column("payload", "string")]
        sorted_schema = [column("id", "int64", sort_order="ascending"), column("payload", "string")]
        payload = "x" * 40
        print(f"YT: {args.rows:,} rows (id int64, 40-byte payload), {args.tasks} Spark tasks, chunks of {args.batch:,}")
        df = spark.range(args.rows, numPartitions=args.tasks).selectExpr("id", f"'{payload}' AS payload").cache()
        df.count()
        rows = [{"id": i, "payload": payload} for i in range(args.rows)]
        chunks = [rows[i : i + args.batch] for i in range(0, len(rows), args.batch)]
        meter = meter_for(server.pid)

        def loop(path: str, update: bool | None) -> None:
            for chunk in chunks:
                client.insert_rows(path, chunk, update=update)

        def threads(path: str, update: bool | None) -> None:
            """The loop's chunks split as Spark splits the rows (``--tasks`` contiguous ranges), one thread each."""
            from concurrent.futures import ThreadPoolExecutor

            share = -(-len(chunks) // args.tasks)

            def one(part: list[list[dict[str, Any]]]) -> None:
                own = make_yt_client(proxy)
                skip_empty_proxy_discovery(own)
                for chunk in part:
                    own.insert_rows(path, chunk, update=update)

            with ThreadPoolExecutor(args.tasks) as pool:
                for future in [pool.submit(one, chunks[i : i + share]) for i in range(0, len(chunks), share)]:
                    future.result()

        def sink(path: str) -> None:
            (
                df.write.format("ytqueue")
                .option("proxy", proxy)
                .option("dyn_batch_size", str(args.batch))
                .mode("append")
                .save(path)
            )

        warm = f"{root}/warm"
        create_sorted_table(client, warm, sorted_schema)
        spark.range(1000, numPartitions=args.tasks).selectExpr("id", "'w' AS payload").write.format("ytqueue").option(
            "proxy", proxy
        ).mode("append").save(warm)
        for round_ in range(args.rounds):
            meter.run("Spark -> Python sink writing nothing", args.rows, lambda: null_write(df))
            for kind in ("sorted", "ordered"):
                paths = {}
                for who in ("loop", "threads", "sink"):
                    paths[who] = f"{root}/{kind}-{who}-{round_}"
                    if kind == "sorted":
                        create_sorted_table(client, paths[who], sorted_schema)
                    else:
                        create_queue(client, paths[who], schema, tablet_count=args.tablets)
                meter.run(
                    f"insert_rows loop, {kind}",
                    args.rows,
                    lambda p=paths["loop"], k=kind: loop(p, True if k == "sorted" else None),
                )
                if args.tasks > 1:
                    meter.run(
                        f"insert_rows, {args.tasks} threads, {kind}",
                        args.rows,
                        lambda p=paths["threads"], k=kind: threads(p, True if k == "sorted" else None),
                    )
                meter.run(f"ytqueue sink, {kind}", args.rows, lambda p=paths["sink"]: sink(p))
                if kind == "ordered":
                    for path in paths.values():
                        infos = client.get_tablet_infos(path, list(range(args.tablets)))["tablets"]
                        count = sum(int(info["total_row_count"]) for info in infos)
                        if count != args.rows:
                            print(f"  WARNING: {path} holds {count:,} rows, not {args.rows:,}")
        df.unpersist()
        return meter
    finally:
        server.stop()


# -- (b) Kafka -----------------------------------------------------------------------------------------------------
def kafka_part(spark, args, extra: dict[str, str], meter_for: Callable[[int | None], Meter]) -> Meter:  # type: ignore[no-untyped-def]
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from integration.kafka_broker import KafkaBroker

    with KafkaBroker(heap="1g") as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})

        def topic(name: str) -> str:
            name = f"{name}-{uuid.uuid4().hex[:8]}"
            admin.create_topics([NewTopic(name, args.partitions, 1)])[name].result(30)
            return name

        print(
            f"Kafka: {args.records:,} records x {args.size} B into topics of {args.partitions} partitions, "
            f"{args.tasks} Spark tasks; ytqueue sink options: {extra or 'defaults'}"
        )
        df = (
            spark.range(args.records, numPartitions=args.tasks)
            .selectExpr(f"CAST(repeat('x', {args.size}) AS BINARY) AS value")
            .cache()
        )
        df.count()
        value = b"x" * args.size
        producer_config = {"enable.idempotence": True, "acks": "all", "partitioner": "murmur2_random"}
        producer_config.update({k[len("kafka.") :]: v for k, v in extra.items() if k.startswith("kafka.")})
        meter = meter_for(broker.pid)

        def loop(name: str) -> None:
            producer = Producer({"bootstrap.servers": bootstrap, **producer_config})
            produce, poll = producer.produce, producer.poll
            for i in range(args.records):
                while True:
                    try:
                        produce(name, value)
                        break
                    except BufferError:
                        poll(0.05)
                if i % 10_000 == 0:
                    poll(0)
            if producer.flush(120):
                raise RuntimeError("the loop's producer did not flush within 120 s")

        def ours(name: str) -> None:
            writer = df.write.format("ytqueue").option("kafka.bootstrap.servers", bootstrap).option("topic", name)
            for key, option in extra.items():
                writer = writer.option(key, option)
            writer.mode("append").save()

        def jvm(name: str) -> None:
            df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", name).mode(
                "append"
            ).save()

        ours(topic("warm-ours"))
        jvm(topic("warm-jvm"))
        for _ in range(args.rounds):
            meter.run("Spark -> Python sink writing nothing", args.records, lambda: null_write(df))
            meter.run("confluent-kafka produce loop", args.records, lambda n=topic("loop"): loop(n))
            meter.run("ytqueue Kafka sink", args.records, lambda n=topic("ours"): ours(n))
            meter.run("Spark JVM Kafka sink", args.records, lambda n=topic("jvm"): jvm(n))
        df.unpersist()
        return meter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="YT rows per writer (default 1M)")
    parser.add_argument("--records", type=int, default=2_000_000, help="Kafka records per writer (default 2M)")
    parser.add_argument("--size", type=int, default=100, help="Kafka value size in bytes (default 100)")
    parser.add_argument("--partitions", type=int, default=4, help="Kafka topic partitions (default 4)")
    parser.add_argument("--tablets", type=int, default=1, help="tablets of the ordered YT tables (default 1)")
    parser.add_argument("--batch", type=int, default=50_000, help="rows per insert_rows, both YT writers")
    parser.add_argument("--tasks", type=int, default=2, help="Spark partitions and local[N] threads (default 2)")
    parser.add_argument("--only", choices=("yt", "kafka"), default=None)
    parser.add_argument("--rounds", type=int, default=1, help="run every writer this many times; keep the best")
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="extra option of the ytqueue Kafka sink"
    )
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    extra = dict(item.split("=", 1) for item in args.option)
    jars: list[str] = []
    if args.only != "yt":
        from integration.kafka_broker import spark_kafka_jars

        jars = spark_kafka_jars()
        if not jars:
            sys.exit("Spark's Kafka jars are missing: run integration/install.sh")
    spark = spark_session(jars, args.tasks)

    def meter_for(server: int | None) -> Meter:
        # This process's tree holds Spark's JVM and its Python workers, and the server it started (left out).
        return Meter([os.getpid()], server)

    yt = kafka = None
    try:
        if args.only != "kafka":
            yt = yt_part(spark, args, meter_for)
        if args.only != "yt":
            kafka = kafka_part(spark, args, extra, meter_for)
    finally:
        spark.stop()
    print("\nwriter CPU: this process and Spark's JVM with its Python workers; server: the YT server or the broker")
    if yt is not None:
        yt.table()
        for kind in ("sorted", "ordered"):
            yt.ratio(f"ytqueue sink, {kind}", f"insert_rows loop, {kind}", YT_GOAL)
            if args.tasks > 1:
                yt.ratio(f"ytqueue sink, {kind}", f"insert_rows, {args.tasks} threads, {kind}")
    if kafka is not None:
        kafka.table()
        kafka.ratio("ytqueue Kafka sink", "Spark JVM Kafka sink", KAFKA_GOAL)
        kafka.ratio("ytqueue Kafka sink", "confluent-kafka produce loop")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
