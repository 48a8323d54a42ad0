"""Helpers for the Kafka adapter tests: topics, producing, running queries, reading group offsets."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from spyt_queue.kafka.errors import is_transient_kafka_error
from tests.queries import run_to_end


@dataclass
class Topic:
    """A fresh topic on the session broker, with a group name and a checkpoint for queries reading it."""

    bootstrap: str
    checkpoint: str
    partitions: int = 2
    name: str = field(default_factory=lambda: f"t-{uuid.uuid4().hex[:10]}")
    group: str = field(default_factory=lambda: f"g-{uuid.uuid4().hex[:10]}")
    next_id: int = 0
    config: dict[str, str] = field(default_factory=dict)  # topic configs, e.g. {"max.message.bytes": "1000"}

    def __post_init__(self) -> None:
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self.admin.create_topics([NewTopic(self.name, self.partitions, 1, config=self.config)])[self.name].result(30)
        self.wait_partitions(self.partitions)

    def wait_partitions(self, total: int) -> None:
        """Wait until the broker's metadata shows ``total`` partitions."""
        deadline = time.time() + 30
        while time.time() < deadline:
            topic = self.admin.list_topics(self.name, timeout=10).topics.get(self.name)
            if topic is not None and topic.error is None and len(topic.partitions) >= total:
                return
            time.sleep(0.2)
        raise AssertionError(f"{self.name} did not reach {total} partitions")

    def produce(
        self,
        count: int,
        partition: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        timestamp_ms: int | None = None,
    ) -> list[int]:
        """Produce ``count`` records with fresh ids (round-robin over partitions unless one is given)."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})
        ids = []
        for i in range(count):
            ident = self.next_id
            self.next_id += 1
            target = partition if partition is not None else i % self.partitions
            kwargs: dict[str, Any] = {"value": str(ident).encode(), "key": f"k{ident}".encode(), "partition": target}
            if headers:
                kwargs["headers"] = headers
            if timestamp_ms is not None:
                kwargs["timestamp"] = timestamp_ms
            producer.produce(self.name, **kwargs)
            ids.append(ident)
        assert producer.flush(30) == 0
        return ids

    def add_partitions(self, total: int) -> None:
        """Grow the topic to ``total`` partitions."""
        self.admin.create_partitions([NewPartitions(self.name, total)])[self.name].result(30)
        self.partitions = total
        self.wait_partitions(total)

    def delete(self) -> None:
        """Delete the topic and wait until the broker's metadata no longer lists it."""
        self.admin.delete_topics([self.name])[self.name].result(30)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.name not in self.admin.list_topics(timeout=10).topics:
                return
            time.sleep(0.2)
        raise AssertionError(f"{self.name} was still listed 30 s after its deletion")

    def send(self, values: list[str], partition: int | None = None) -> None:
        """Produce records with the given string values to ``partition``, or round-robin over the partitions
        (Spark's ``KafkaTestUtils.sendMessages``)."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})
        for i, value in enumerate(values):
            target = i % self.partitions if partition is None else partition
            producer.produce(self.name, value=value.encode(), partition=target)
        assert producer.flush(30) == 0

    def delete_records(self, partition: int, before: int) -> None:
        """What retention does: delete the records before offset ``before``."""
        for future in self.admin.delete_records([TopicPartition(self.name, partition, before)]).values():
            future.result(30)

    def group_offsets(self) -> dict[int, int]:
        """The consumer group's committed offsets, as a consumer of the group (never joining it) reads them.

        Not through ``AdminClient.list_consumer_group_offsets``: librdkafka can crash the process when that
        request meets a coordinator still loading (see ``KafkaBackend._committed``)."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False})
        request = [TopicPartition(self.name, p) for p in range(self.partitions)]
        deadline = time.monotonic() + 30
        try:
            while True:
                try:
                    found = consumer.committed(request, timeout=30)
                    break
                except KafkaException as error:  # the coordinator is loading or moved: ask again
                    if is_transient_kafka_error(error) and time.monotonic() < deadline:
                        time.sleep(0.5)
                        continue
                    raise
        finally:
            consumer.close()
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}

    def ends(self) -> dict[int, int]:
        """High watermark per partition."""
        from confluent_kafka.admin import OffsetSpec

        futures = self.admin.list_offsets(
            {TopicPartition(self.name, p): OffsetSpec.latest() for p in range(self.partitions)}
        )
        return {tp.partition: f.result(30).offset for tp, f in futures.items()}

    def stream(self, spark: Any, **options: Any) -> Any:
        """A streaming DataFrame over the topic, committing to this topic's group."""
        reader = (
            spark.readStream.format("ytqueue")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("subscribe", self.name)
            .option("kafka.group.id", self.group)
        )
        for key, value in options.items():
            reader = reader.option(key, str(value))
        return reader.load()


#: The columns :func:`start_to_files` writes, for reading an output directory back (even one with no files yet).
FILES_SCHEMA = "key string, value string, partition int, offset long"


def start_to_files(df: Any, checkpoint: str, path: str, trigger: dict[str, Any]) -> Any:
    """Start ``df`` (key and value cast to strings) into a parquet directory with ``trigger(**trigger)``.

    The file sink recovers from its checkpoint (the memory sink does not), so restarts can be tested.
    """
    writer = (
        df.selectExpr("cast(key as string) as key", "cast(value as string) as value", "partition", "offset")
        .writeStream.format("parquet")
        .option("path", path)
        .option("checkpointLocation", checkpoint)
    )
    return writer.trigger(**trigger).start()


def run_to_files(
    df: Any, checkpoint: str, path: str, available_now: bool = True, timeout: float = 120, **options: Any
) -> Any:
    """Run ``df`` (cast to strings) into a parquet directory until done; returns the finished query."""
    return run_to_end(lambda trigger: start_to_files(df, checkpoint, path, trigger), available_now, timeout)


def ids_in(spark: Any, path: str) -> list[int]:
    """Ids (record values) written to a parquet output directory, duplicates included."""
    return sorted(int(r.value) for r in spark.read.parquet(path).collect())


def produce_transaction(topic: Topic, count: int, outcome: str, partition: int = 0) -> tuple[list[int], Any]:
    """Produce ``count`` fresh ids to ``partition`` in one producer transaction, then ``outcome`` it:
    ``"commit"``, ``"abort"`` or ``"open"`` (left running). Returns the ids and the transactional producer."""
    producer = Producer({"bootstrap.servers": topic.bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    ids = []
    for _ in range(count):
        ids.append(topic.next_id)
        producer.produce(topic.name, value=str(topic.next_id).encode(), partition=partition)
        topic.next_id += 1
    assert producer.flush(30) == 0
    if outcome == "commit":
        producer.commit_transaction(30)
    elif outcome == "abort":
        producer.abort_transaction(30)
    else:
        assert outcome == "open", outcome
    return ids, producer


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the Java client's default partitioner hash), as a signed 32-bit int."""
    seed, m, r = 0x9747B28C, 0x5BD1E995, 24
    mask = 0xFFFFFFFF
    length = len(data)
    h = (seed ^ length) & mask
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    tail = data[whole:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    """The partition Java's default partitioner (and Spark's Kafka sink) picks for a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
