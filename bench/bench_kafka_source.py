"""Side-by-side, one run, same topic, same Spark settings, ``noop`` sink with AvailableNow:

* the ytqueue Kafka adapter (``format("ytqueue")`` with ``kafka.bootstrap.servers``),
* Spark's JVM Kafka source (``format("kafka")``, ``spark-sql-kafka-0-10`` from Maven Central),
* a plain ``confluent-kafka`` consume loop (the Python client's ceiling, one process).

    .venv/bin/python bench/bench_kafka_source.py [--records 5000000] [--partitions 4] [--size 100]
        [--min-partitions N] [--option key=value ...] [--rounds 1]

Starts a real broker (``integration/kafka_broker.py``). Prints records/s, the two ratios (adapter / JVM source and
adapter / loop) and the CPU seconds each reader and the broker spent (from ``/proc``: user + system time of the
process trees, so Spark's figure covers its JVM and its Python workers); asserts nothing. With ``--rounds N`` the
three readers run N times in turn and the best wall time of each is kept (less noise on a loaded machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from integration.kafka_broker import KafkaBroker, spark_kafka_jars

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children) from ``/proc/<pid>/stat``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / TICKS  # ppid; utime stime cutime cstime


def tree_cpu(root: int) -> tuple[float, float]:
    """CPU seconds (user + system) of ``root`` itself and of its live descendants (with the children they
    reaped): for Spark, its JVM and its Python workers."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                stats[int(entry)] = stat
    own = stats[root][1] if root in stats else 0.0
    descendants, frontier = 0.0, [root]
    while frontier:
        pid = frontier.pop()
        for child, (parent, cpu) in stats.items():
            if parent == pid:
                descendants += cpu
                frontier.append(child)
    return own, descendants


@dataclass
class Run:
    """One reader's pass over the topic."""

    records: int
    seconds: float
    cpu: float  # of the reader (loop process, or Spark's JVM and Python workers)
    python_cpu: float  # of the reader's child processes (Spark's Python workers)
    broker_cpu: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds


def measured(reader_pid: int, broker_pid: int, work, with_children: bool = True) -> Run:
    """Run ``work()`` (returning a record count), timing it and charging CPU to the reader (with its child
    processes unless ``with_children`` is false: this script's own children are the broker and Spark) and to the
    broker."""
    (own0, children0), broker0, started = tree_cpu(reader_pid), sum(tree_cpu(broker_pid)), time.perf_counter()
    records = work()
    seconds = time.perf_counter() - started
    own, children = tree_cpu(reader_pid)
    python = children - children0 if with_children else 0.0
    return Run(records, seconds, own - own0 + python, python, sum(tree_cpu(broker_pid)) - broker0)


def fill(bootstrap: str, topic: str, records: int, partitions: int, size: int) -> None:
    """Produce ``records`` values of ``size`` bytes round-robin over the partitions."""
    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep a reference until the future resolves
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    value = b"x" * size
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 200_000 == 0:
            producer.poll(0)
            print(f"  produced {i:,}/{records:,}", end="\r", flush=True)
    producer.flush(120)
    print(f"  produced {records:,} records in {time.perf_counter() - started:.1f}s" + " " * 20)


def consume_loop(bootstrap: str, topic: str, partitions: int, records: int) -> int:
    """One confluent-kafka consumer reads every record (values touched, not converted); the count read."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen, eofs = 0, set()
    while seen < records and len(eofs) < partitions:
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    eofs.add(message.partition())
                continue
            message.value()
            seen += 1
    consumer.close()
    return seen


def spark_run(
    spark, fmt: str, bootstrap: str, topic: str, checkpoint: str, options: dict[str, str], phases: bool = False
) -> int:
    """A source into ``noop`` with AvailableNow; the records it read. ``phases``: print where the wall time went
    (``load()``, then each batch's ``durationMs`` from the query progress)."""
    started = time.perf_counter()
    reader = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load()
    loaded = time.perf_counter()
    query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination()
    if phases:
        print(f"  {fmt}: load() {loaded - started:.2f}s, query {time.perf_counter() - loaded:.2f}s")
        for progress in query.recentProgress:
            spent = ", ".join(f"{k} {v / 1000:.2f}s" for k, v in sorted(progress["durationMs"].items()) if v >= 50)
            print(f"    batch {progress['batchId']}: {progress['numInputRows']:,} rows; {spent}")
    return sum(p["numInputRows"] for p in query.recentProgress)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=5_000_000, help="records in the topic (default 5M)")
    parser.add_argument("--partitions", type=int, default=4, help="topic partitions (default 4)")
    parser.add_argument("--size", type=int, default=100, help="value size in bytes (default 100)")
    parser.add_argument("--min-partitions", type=int, default=None, help="minPartitions for both Spark sources")
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="extra option of the adapter (repeatable)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="run the three readers this many times; keep the best")
    parser.add_argument("--phases", action="store_true", help="print each Spark query's time per phase and batch")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    jars = spark_kafka_jars()
    if not jars:
        sys.exit("Spark's Kafka source jars are missing: run integration/install.sh")
    common = {} if args.min_partitions is None else {"minPartitions": str(args.min_partitions)}
    ours_options = {**common, **dict(item.split("=", 1) for item in args.option)}
    work = Path(tempfile.mkdtemp(prefix="kafka-bench-"))
    runs: dict[str, list[Run]] = {"confluent-kafka loop": [], "ytqueue adapter": [], "Spark JVM source": []}
    with KafkaBroker(heap="1g") as broker:
        bootstrap, topic = broker.bootstrap_servers, f"bench-{uuid.uuid4().hex[:8]}"
        broker_pid = broker.pid
        assert broker_pid is not None
        print(
            f"broker {bootstrap}; filling {topic}: {args.records:,} x {args.size} B over {args.partitions} partitions"
        )
        fill(bootstrap, topic, args.records, args.partitions, args.size)

        from pyspark.sql import SparkSession

        from spyt_queue import register

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.jars", ",".join(jars))
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        jvm_pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
        print(f"warming up both sources on a small topic... (adapter options: {ours_options or 'none'})")
        warm = f"warm-{uuid.uuid4().hex[:6]}"
        fill(bootstrap, warm, 10_000, args.partitions, args.size)
        spark_run(spark, "ytqueue", bootstrap, warm, str(work / "w1"), ours_options)
        spark_run(spark, "kafka", bootstrap, warm, str(work / "w2"), common)

        for round_ in range(args.rounds):
            runs["confluent-kafka loop"].append(
                measured(
                    os.getpid(),
                    broker_pid,
                    lambda: consume_loop(bootstrap, topic, args.partitions, args.records),
                    with_children=False,
                )
            )
            runs["ytqueue adapter"].append(
                measured(
                    jvm_pid,
                    broker_pid,
                    lambda r=round_: spark_run(
                        spark, "ytqueue", bootstrap, topic, str(work / f"o{r}"), ours_options, args.phases
                    ),
                )
            )
            runs["Spark JVM source"].append(
                measured(
                    jvm_pid,
                    broker_pid,
                    lambda r=round_: spark_run(
                        spark, "kafka", bootstrap, topic, str(work / f"jvm{r}"), common, args.phases
                    ),
                )
            )
        spark.stop()

    best = {name: min(done, key=lambda r: r.seconds) for name, done in runs.items()}
    print()
    print(
        f"{'reader':<22} {'records':>11} {'wall s':>8} {'records/s':>12} {'reader CPU-s':>13} {'of it Python':>13}"
        f" {'broker CPU-s':>13} {'records/reader CPU-s':>21}"
    )
    for name, run in best.items():
        print(
            f"{name:<22} {run.records:>11,} {run.seconds:>8.2f} {run.rate:>12,.0f} {run.cpu:>13.2f} "
            f"{run.python_cpu:>13.2f} "
            f"{run.broker_cpu:>13.2f} {run.records / max(run.cpu, 1e-9):>21,.0f}"
        )
    ours, jvm, loop = best["ytqueue adapter"], best["Spark JVM source"], best["confluent-kafka loop"]
    print()
    print(f"adapter / Spark JVM source (records/s): {ours.rate / jvm.rate:.2f}   (goal >= 1.5)")
    print(f"adapter / confluent-kafka loop (records/s): {ours.rate / loop.rate:.2f}   (goal >= 1.0)")
    print(f"CPU per record, adapter / JVM source: {ours.cpu / ours.records / (jvm.cpu / jvm.records):.2f}")

    # Where the adapter's CPU goes, and what is left to cut: its Python workers (consume() and the Arrow columns)
    # against the plain loop (consume() and one value() per record), and Spark's JVM share (Arrow to rows).
    def us(cpu: float, run: Run) -> str:
        return f"{cpu / run.records * 1e6:.2f}"

    print(f"CPU per record (µs): adapter's Python workers {us(ours.python_cpu, ours)}, plain loop {us(loop.cpu, loop)}")
    jvm_share = us(ours.cpu - ours.python_cpu, ours)
    print(f"CPU per record (µs): adapter's JVM (Arrow to rows) {jvm_share}, JVM source {us(jvm.cpu, jvm)}")
    print(
        f"CPU per record (µs), reader + broker: adapter {us(ours.cpu + ours.broker_cpu, ours)}, "
        f"JVM source {us(jvm.cpu + jvm.broker_cpu, jvm)}"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
