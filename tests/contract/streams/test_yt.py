"""The shared stream scenarios on a YT queue (embedded server) read into an ordered YT table by the ytqueue sink,
committing to the queue's registered consumer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.streams.base import READ_MODES, StreamLog, StreamScenarios
from tests.yt.helpers import Pipeline, make_pipeline

pytestmark = pytest.mark.spark


class YtQueueLog(StreamLog):
    """A :class:`~tests.yt.helpers.Pipeline` (queue, consumer, output table, checkpoint) as a :class:`StreamLog`."""

    def __init__(self, pipe: Pipeline, read_mode: str = "executors") -> None:
        self.pipe = pipe
        self.read_mode = read_mode

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
        return self.pipe.reader(spark, **{"read_mode": self.read_mode, **options})

    def start(self, spark: Any, trigger: dict[str, Any], **options: Any) -> Any:
        return self.pipe.start(spark, trigger, **{"read_mode": self.read_mode, **options})

    def run(self, spark: Any, available_now: bool = True, **options: Any) -> Any:
        return self.pipe.run(spark, available_now=available_now, **{"read_mode": self.read_mode, **options})

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
        sibling = Pipeline(pipe.yt, pipe.proxy, pipe.queue, pipe.consumer, pipe.output, checkpoint)
        return YtQueueLog(sibling, self.read_mode)


class TestYtQueueStream(StreamScenarios):
    """Every shared scenario on a two-tablet YT queue with a consumer, read on executors and on the driver."""

    @pytest.fixture(params=READ_MODES)
    def log(self, request, yt, yt_proxy, yt_root, checkpoint) -> StreamLog:
        return YtQueueLog(make_pipeline(yt, yt_proxy, yt_root, checkpoint), request.param)
