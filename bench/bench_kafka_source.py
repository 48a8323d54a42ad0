"""Side-by-side, one run, same topic, same Spark settings, ``noop`` sink with AvailableNow:

* the ytqueue Kafka adapter (``format("ytqueue")`` with ``kafka.bootstrap.servers``),
* Spark's JVM Kafka source (``format("kafka")``, ``spark-sql-kafka-0-10`` from Maven Central),
* a plain ``confluent-kafka`` consume loop (the Python client's ceiling, one process).

    .venv/bin/python bench/bench_kafka_source.py [--records 5000000] [--partitions 4] [--size 100]

Starts a real broker (``integration/kafka_broker.py``). Prints records/s and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from integration.kafka_broker import KafkaBroker, spark_kafka_jars


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


def consume_loop(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    """Seconds for one confluent-kafka consumer to read every record (values touched, not converted)."""
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
    started = time.perf_counter()
    while seen < records and len(eofs) < partitions:
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    eofs.add(message.partition())
                continue
            message.value()
            seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def spark_run(spark, fmt: str, bootstrap: str, topic: str, checkpoint: str) -> tuple[int, float]:
    """A source into ``noop`` with AvailableNow: (records, wall seconds from start to termination)."""
    df = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    started = time.perf_counter()
    query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    query.awaitTermination()
    return sum(p["numInputRows"] for p in query.recentProgress), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    jars = spark_kafka_jars()
    if not jars:
        sys.exit("Spark's Kafka source jars are missing: run integration/install.sh")
    work = Path(tempfile.mkdtemp(prefix="kafka-bench-"))
    with KafkaBroker(heap="1g") as broker:
        bootstrap, topic = broker.bootstrap_servers, f"bench-{uuid.uuid4().hex[:8]}"
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
        print("warming up both sources on a small topic...")
        warm = f"warm-{uuid.uuid4().hex[:6]}"
        fill(bootstrap, warm, 10_000, args.partitions, args.size)
        spark_run(spark, "ytqueue", bootstrap, warm, str(work / "w1"))
        spark_run(spark, "kafka", bootstrap, warm, str(work / "w2"))

        loop_s = consume_loop(bootstrap, topic, args.partitions, args.records)
        ours_n, ours_s = spark_run(spark, "ytqueue", bootstrap, topic, str(work / "ours"))
        jvm_n, jvm_s = spark_run(spark, "kafka", bootstrap, topic, str(work / "jvm"))
        spark.stop()

    rate = {
        "confluent-kafka loop": args.records / loop_s,
        "ytqueue adapter": ours_n / ours_s,
        "Spark JVM source": jvm_n / jvm_s,
    }
    print()
    for name, seconds, count in (
        ("confluent-kafka loop", loop_s, args.records),
        ("ytqueue adapter", ours_s, ours_n),
        ("Spark JVM source", jvm_s, jvm_n),
    ):
        print(f"{name:<22} {count:>11,} records in {seconds:7.2f}s = {rate[name]:>12,.0f} records/s")
    print(f"ytqueue / Spark JVM source : {rate['ytqueue adapter'] / rate['Spark JVM source']:.2f}")
    print(f"ytqueue / confluent loop   : {rate['ytqueue adapter'] / rate['confluent-kafka loop']:.2f}")


if __name__ == "__main__":
    main()
