"""The one sink skeleton every sink of the plugin plugs into: ``ytqueue`` tables, Kafka, ``spyt_kudu``, ``spyt_hbase``.

A sink is a :class:`WriteTask`: picklable configuration plus what runs on an executor for one task's Arrow batches
(:meth:`WriteTask.write`, returning the task's commit message), and optional driver-side hooks (:meth:`~WriteTask.check`
refuses a batch before it commits, :meth:`~WriteTask.commit` does the commit's own work, such as YTsaurus'
transactional commit, :meth:`~WriteTask.abort` undoes what can be undone and says what stays). The skeleton does the
parts every sink shares, once:

- the Spark writers: :class:`SinkStreamWriter` (``writeStream``) and :class:`SinkBatchWriter` (``write``), both
  Arrow writers calling the task;
- one-line errors: every driver-side hook and every factory runs through
  :func:`~spyt_queue.spark.errors.user_errors`, so a spyt-queue error reaches the user as one line;
- dead letters: a task carries its :class:`~spyt_queue.deadletter.BoundDeadLetters` (stage ``sink``); with one,
  its write collects the bad records in a :class:`~spyt_queue.deadletter.DeadLetterCollector` (coordinates, reason,
  record; written durably by its ``flush()`` before the task returns) and reports the count in its commit message's
  ``dead_letters``; the skeleton logs each batch's count at commit;
- batch logging: a committed batch is logged with the task's :meth:`~WriteTask.summary`, a failed one with what its
  :meth:`~WriteTask.abort` says stays;
- overwrite refusal: :meth:`SinkFormat.refuse_overwrite` (complete output mode, ``mode("overwrite")``) in one wording.

Each technology keeps its own code in its own folder (:mod:`spyt_queue.yt.sink` for YTsaurus tables,
:mod:`spyt_queue.kafka.sink`, :mod:`spyt_queue.sinks.kudu.sink`, :mod:`spyt_queue.sinks.hbase.sink`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from spyt_queue.deadletter import BoundDeadLetters, log_batch
from spyt_queue.errors import OptionError
from spyt_queue.options import Options
from spyt_queue.spark.compat import DataSourceStreamArrowWriter
from spyt_queue.spark.errors import user_errors

log = logging.getLogger("spyt_queue.sink")

#: The ``stage`` of a sink's dead letters (a source's are ``source``).
SINK_STAGE = "sink"

Messages = Sequence[WriterCommitMessage | None]


@dataclass(frozen=True)
class SinkFormat:
    """How a sink names itself in messages: its ``format()`` name, what it does to its target (for the overwrite
    refusal) and the streaming output modes it takes."""

    name: str
    writes: str
    stream_modes: str = "append or update"

    def refuse_overwrite(self, overwrite: bool, streaming: bool) -> None:
        """Refuse replacing the target: complete output mode on a stream, ``mode("overwrite")`` on a batch write."""
        if not overwrite:
            return
        if streaming:
            raise OptionError(
                "outputMode",
                f"{self.name} {self.writes} each micro-batch and can not replace the target (complete mode): "
                f"use outputMode {self.stream_modes}",
            )
        raise OptionError(
            "mode",
            f"{self.name} {self.writes} and can not replace the target (overwrite): use mode('append') (Spark itself "
            "refuses the default mode, errorifexists, for every Python data source)",
        )


def finished(messages: Messages, kind: type[WriterCommitMessage]) -> list[Any]:
    """The commit messages of ``kind`` among ``messages`` (``None`` stands for a failed or cancelled task)."""
    return [message for message in messages if isinstance(message, kind)]


def tasks_finished(messages: Messages, kind: type[WriterCommitMessage]) -> str:
    """``2 of 3 task(s) finished``."""
    return f"{len(finished(messages, kind))} of {len(messages)} task(s) finished"


class WriteTask(ABC):
    """What one sink does, picklable: the executor-side :meth:`write` of a task and the driver-side hooks.

    Built on the driver by the sink's factory (options checked, target prepared), pickled to the executors with the
    Spark writer. ``dead_letters`` is where rows the target refuses go (``deadLetter.*``), ``None``: they fail the
    task."""

    dead_letters: BoundDeadLetters | None = None

    @abstractmethod
    def describe(self) -> str:
        """The target, for log lines: ``YTsaurus table //t``, ``Kafka topic t``, ``Kudu table 't'``, ..."""

    @abstractmethod
    def write(self, batches: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """On an executor: write one task's rows, dead letters durable before returning; the task's commit message
        (with ``dead_letters``, the count diverted)."""

    def check(self, messages: Messages, batch_id: int | None) -> None:  # noqa: B027 - most sinks check nothing
        """On the driver, before a batch commits: raise a :class:`~spyt_queue.errors.SpytQueueError` to refuse it
        (``batch_id`` is ``None`` for a batch write)."""

    def commit(self, messages: Messages, batch_id: int | None) -> None:  # noqa: B027 - most sinks wrote everything
        """On the driver: the commit's own work once the tasks wrote (most sinks have none: their tasks' writes are
        durable already)."""

    def summary(self, messages: Messages) -> str:
        """What the finished tasks of a batch wrote, for the log line of its commit or abort."""
        return tasks_finished(messages, WriterCommitMessage)

    def abort(self, messages: Messages, batch_id: int | None) -> str:
        """On the driver, after a task failed: undo what can be undone; returns what stays and what a replay does."""
        return f"{self.summary(messages)}; what they wrote stays"


def batch_name(batch_id: int | None) -> str:
    """``micro-batch 7`` (a stream), ``write`` (a batch write)."""
    return "write" if batch_id is None else f"micro-batch {batch_id}"


class _SinkWriter:
    """What the stream and batch writers share: the task's write, and commit/abort through its hooks."""

    def __init__(self, task: WriteTask) -> None:
        self.task = task

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:  # type: ignore[override]
        """Write one task's rows (on an executor)."""
        return self.task.write(iterator)

    def _commit(self, messages: Messages, batch_id: int | None) -> None:
        task = self.task
        user_errors(lambda: task.check(messages, batch_id))
        log_batch(messages, batch_id, task.dead_letters)
        user_errors(lambda: task.commit(messages, batch_id))
        log.info("%s: %s committed: %s", task.describe(), batch_name(batch_id), task.summary(messages))

    def _abort(self, messages: Messages, batch_id: int | None) -> None:
        task = self.task
        stays = user_errors(lambda: task.abort(messages, batch_id))
        log.warning("%s: %s failed: %s", task.describe(), batch_name(batch_id), stays)


class SinkStreamWriter(_SinkWriter, DataSourceStreamArrowWriter):
    """``writeStream``: each micro-batch's tasks write; the driver checks, commits and logs the batch."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        """The batch's tasks all succeeded: the task's check and commit hooks, then its log lines."""
        self._commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        """A task failed: the task's abort hook, logged with what stays."""
        self._abort(messages, batchId)


class SinkBatchWriter(_SinkWriter, DataSourceArrowWriter):
    """``write``: a DataFrame's tasks write; the driver checks, commits and logs the write."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        """Every task succeeded: the task's check and commit hooks, then its log lines."""
        self._commit(messages, None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        """A task failed: the task's abort hook, logged with what stays."""
        self._abort(messages, None)


def stream_writer(sink: SinkFormat, overwrite: bool, build: Callable[[], WriteTask]) -> SinkStreamWriter:
    """The ``writeStream`` writer of a sink: complete mode refused, then the task built (options checked, target
    prepared). Data sources call it through :func:`~spyt_queue.spark.errors.user_errors`."""
    sink.refuse_overwrite(overwrite, streaming=True)
    return SinkStreamWriter(build())


def batch_writer(sink: SinkFormat, overwrite: bool, build: Callable[[], WriteTask]) -> SinkBatchWriter:
    """The ``write`` writer of a sink: ``mode("overwrite")`` refused, then the task built."""
    sink.refuse_overwrite(overwrite, streaming=False)
    return SinkBatchWriter(build())


class SinkDataSource(DataSource):
    """A write-only data source (``spyt_kudu``, ``spyt_hbase``): its format name and its two writer factories,
    each ``(options, schema, overwrite) -> writer``, run in one-line errors."""

    sink: ClassVar[SinkFormat]

    @classmethod
    def name(cls) -> str:
        """The short name used with ``format()``."""
        return cls.sink.name

    @staticmethod
    @abstractmethod
    def open_stream(options: Options, schema: StructType, overwrite: bool) -> SinkStreamWriter:
        """The sink's ``writeStream`` factory."""

    @staticmethod
    @abstractmethod
    def open_batch(options: Options, schema: StructType, overwrite: bool) -> SinkBatchWriter:
        """The sink's ``write`` factory."""

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """Each micro-batch written by the sink's tasks (complete mode is refused)."""
        return user_errors(lambda: self.open_stream(Options(dict(self.options)), schema, overwrite))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A DataFrame written by the sink's tasks (``mode("overwrite")`` is refused)."""
        return user_errors(lambda: self.open_batch(Options(dict(self.options)), schema, overwrite))
