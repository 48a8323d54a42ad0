"""The shared stream scenarios on a YT queue (embedded server) read into an ordered YT table by the ytqueue sink,
committing to the queue's registered consumer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spark.helpers import Pipeline, make_pipeline
from tests.streams.base import StreamLog, StreamScenarios

pytestmark = pytest.mark.spark


class YtQueueLog(StreamLog):
    """A :class:`~tests.spark.helpers.Pipeline` (queue, consumer, output table, checkpoint) as a :class:`StreamLog`."""

    def __init__(self, pipe: Pipeline) -> None:
        self.pipe = pipe

    def produce(self, count: int, partition: int | None = None) -> list[int]:
        return self.pipe.produce(count, tablet=partition)

    def trim(self, partition: int, before: int) -> None:
        self.pipe.yt.trim_rows(self.pipe.queue, partition, before)

    def add_partitions(self, total: int) -> None:
        yt, queue = self.pipe.yt, self.pipe.queue
        yt.unmount_table(queue, sync=True)
        yt.reshard_table(queue, tablet_count=total)
        yt.mount_table(queue, sync=True)

    def key(self, partition: int) -> str:
        return str(partition)

    def describe(self, partition: int) -> str:
        return f"tablet {partition}"

    def stream(self, spark: Any, **options: Any) -> Any:
        return self.pipe.reader(spark, **options)

    def start(self, spark: Any, trigger: dict[str, Any], **options: Any) -> Any:
        return self.pipe.start(spark, trigger, **options)

    def run(self, spark: Any, available_now: bool = True, **options: Any) -> Any:
        return self.pipe.run(spark, available_now=available_now, **options)

    def sink_ids(self) -> list[int]:
        return self.pipe.output_ids()

    def committed(self) -> dict[int, int]:
        return self.pipe.consumer_offsets()

    def ends(self) -> dict[int, int]:
        return self.pipe.ends()

    def delete_checkpoint(self) -> None:
        self.pipe.delete_checkpoint()

    def sibling(self, checkpoint: str) -> StreamLog:
        pipe = self.pipe
        return YtQueueLog(Pipeline(pipe.yt, pipe.proxy, pipe.queue, pipe.consumer, pipe.output, checkpoint))


class TestYtQueueStream(StreamScenarios):
    """Every shared scenario on a two-tablet YT queue with a consumer."""

    @pytest.fixture
    def log(self, yt, yt_proxy, yt_root, checkpoint) -> StreamLog:
        return YtQueueLog(make_pipeline(yt, yt_proxy, yt_root, checkpoint))
