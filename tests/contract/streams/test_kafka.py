"""The shared stream scenarios on a Kafka topic (real broker) read into parquet files by Spark's file sink,
committing to the query's consumer group."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.contract.streams.base import READ_MODES, StreamLog, StreamScenarios
from tests.kafka.helpers import FILES_SCHEMA, Topic, run_to_files, start_to_files

pytestmark = pytest.mark.spark


class KafkaTopicLog(StreamLog):
    """A :class:`~tests.kafka.helpers.Topic` and its group, read into parquet directories under ``workdir``.

    Every checkpoint gets its own output directory: the file sink's own log would otherwise take a new query's
    batch 0 for one it already wrote and skip it.
    """

    def __init__(self, spark: Any, topic: Topic, checkpoint: str, workdir: Path, read_mode: str = "executors") -> None:
        self.spark, self.topic, self.checkpoint, self.workdir = spark, topic, checkpoint, workdir
        self.read_mode = read_mode
        self.outputs = [str(workdir / "out-0")]

    def produce(self, count: int, partition: int | None = None) -> list[int]:
        return self.topic.produce(count, partition=partition)

    def trim(self, partition: int, before: int) -> None:
        self.topic.delete_records(partition, before)

    def add_partitions(self, total: int) -> None:
        self.topic.add_partitions(total)

    def key(self, partition: int) -> str:
        return f"{self.topic.name}:{partition}"

    def describe(self, partition: int) -> str:
        return f"partition {partition} of topic {self.topic.name}"

    def stream(self, spark: Any, **options: Any) -> Any:
        # "group" is Kafka's name for the store
        return self.topic.stream(spark, **{"startingOffsets": "group", "read_mode": self.read_mode, **options})

    def start(self, spark: Any, trigger: dict[str, Any], **options: Any) -> Any:
        return start_to_files(self.stream(spark, **options), self.checkpoint, self.outputs[-1], trigger)

    def run(self, spark: Any, available_now: bool = True, **options: Any) -> Any:
        df = self.stream(spark, **options)
        return run_to_files(df, self.checkpoint, self.outputs[-1], available_now=available_now)

    def sink_ids(self) -> list[int]:
        read = self.spark.read.schema(FILES_SCHEMA)
        written = [path for path in self.outputs if Path(path).exists()]
        return sorted(int(r.value) for path in written for r in read.parquet(path).collect())

    def committed(self) -> dict[int, int]:
        return self.topic.group_offsets()

    def ends(self) -> dict[int, int]:
        return self.topic.ends()

    def delete_checkpoint(self) -> None:
        shutil.rmtree(self.checkpoint, ignore_errors=True)
        self.outputs.append(str(self.workdir / f"out-{len(self.outputs)}"))

    def sibling(self, checkpoint: str) -> StreamLog:
        return KafkaTopicLog(self.spark, self.topic, checkpoint, Path(f"{checkpoint}-files"), self.read_mode)


class TestKafkaTopicStream(StreamScenarios):
    """Every shared scenario on a two-partition topic with a consumer group, read on executors and on the driver."""

    @pytest.fixture(params=READ_MODES)
    def log(self, request, spark, kafka_bootstrap, checkpoint, tmp_path) -> StreamLog:
        return KafkaTopicLog(spark, Topic(kafka_bootstrap, checkpoint), checkpoint, tmp_path, request.param)
