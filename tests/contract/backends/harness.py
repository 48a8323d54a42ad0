"""Backend harnesses for the shared conformance suite: each creates a fresh partitioned log on a real server
(the embedded YT server or a real Kafka broker) and manipulates it the way the rules need."""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from typing import Any

import pyarrow as pa

from spyt_queue.backend import QueueBackend
from spyt_queue.yt.admin import column, create_consumer, create_queue


class Harness(ABC):
    """One fresh log with ``partitions`` partitions (read through its backend; the backend's store is tested in
    ``tests/contract/stores/``)."""

    @abstractmethod
    def partition_keys(self) -> list[str]:
        """Keys of the log's partitions, in order."""

    @abstractmethod
    def produce(self, partition: int, ids: list[int]) -> None:
        """Append records carrying ``ids`` to partition number ``partition``."""

    @abstractmethod
    def trim(self, partition: int, upto: int) -> None:
        """Delete the rows before offset ``upto`` of partition ``partition`` (and wait until it shows)."""

    @abstractmethod
    def add_partitions(self, total: int) -> None:
        """Grow the log to ``total`` partitions."""

    @abstractmethod
    def backend(self) -> QueueBackend:
        """A backend reading this log (fresh object, as a new query would build)."""

    @abstractmethod
    def ids(self, batch: pa.RecordBatch) -> list[int]:
        """The ids carried by a batch's rows."""


class YtHarness(Harness):
    """A YT queue with a registered consumer."""

    def __init__(self, yt: Any, proxy: str, root: str, partitions: int) -> None:
        self.yt, self.proxy = yt, proxy
        self.queue, self.consumer = f"{root}/q-{uuid.uuid4().hex[:6]}", f"{root}/c-{uuid.uuid4().hex[:6]}"
        create_queue(yt, self.queue, [column("id", "int64"), column("payload", "string")], tablet_count=partitions)
        create_consumer(yt, self.consumer, self.queue)

    def partition_keys(self) -> list[str]:
        return [str(i) for i in range(int(self.yt.get(f"{self.queue}/@tablet_count")))]

    def produce(self, partition: int, ids: list[int]) -> None:
        self.yt.insert_rows(self.queue, [{"$tablet_index": partition, "id": i, "payload": f"p{i}"} for i in ids])

    def trim(self, partition: int, upto: int) -> None:
        self.yt.trim_rows(self.queue, partition, upto)
        deadline = time.time() + 30
        while time.time() < deadline:
            info = self.yt.get_tablet_infos(self.queue, [partition])["tablets"][0]
            if int(info["trimmed_row_count"]) >= upto:
                return
            time.sleep(0.2)

    def add_partitions(self, total: int) -> None:
        self.yt.unmount_table(self.queue, sync=True)
        self.yt.reshard_table(self.queue, tablet_count=total)
        self.yt.mount_table(self.queue, sync=True)

    def backend(self) -> QueueBackend:
        from spyt_queue.yt.backend import YtConnection, YtQueueBackend

        return YtQueueBackend(YtConnection(self.proxy), self.queue, self.consumer)

    def ids(self, batch: pa.RecordBatch) -> list[int]:
        return batch.column("id").to_pylist()


class KafkaHarness(Harness):
    """A Kafka topic and a consumer group (topic handling shared with the Kafka tests' ``Topic``)."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        from tests.kafka.helpers import Topic

        self.bootstrap = bootstrap
        self.log = Topic(bootstrap, checkpoint="", partitions=partitions)
        self.topic, self.group = self.log.name, self.log.group

    def partition_keys(self) -> list[str]:
        topic = self.log.admin.list_topics(self.topic, timeout=10).topics[self.topic]
        return [f"{self.topic}:{i}" for i in sorted(topic.partitions)]

    def produce(self, partition: int, ids: list[int]) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})
        for i in ids:
            producer.produce(self.topic, value=str(i).encode(), key=f"k{i}".encode(), partition=partition)
        assert producer.flush(30) == 0

    def trim(self, partition: int, upto: int) -> None:
        self.log.delete_records(partition, upto)

    def add_partitions(self, total: int) -> None:
        self.log.add_partitions(total)

    def backend(self) -> QueueBackend:
        from spyt_queue.kafka.backend import KafkaBackend
        from spyt_queue.kafka.options import Subscription

        return KafkaBackend(
            {"bootstrap.servers": self.bootstrap}, Subscription("subscribe", topics=(self.topic,)), self.group
        )

    def ids(self, batch: pa.RecordBatch) -> list[int]:
        return [int(v) for v in batch.column("value").to_pylist()]
