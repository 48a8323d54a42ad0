"""The small interface every queue backend (YTsaurus, Kafka) implements for the shared Spark adapter.

A backend is a picklable description of *what* to read plus lazily created clients; the driver uses it to
list partitions and fetch bounds, and executors use the same object
(unpickled) to read one ``[start, end)`` range of one partition as Arrow record batches.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from spyt_queue.stores.base import OffsetStore


@dataclass(frozen=True)
class PartitionBounds:
    """Rows a partition still holds: ``lower`` is the first available row, ``upper`` the next row to be written."""

    lower: int
    upper: int


class DataLossHandler(ABC):
    """Decides what to do when rows are gone: fail the query or warn and go on."""

    @abstractmethod
    def report(self, message: str) -> None:
        """Raise :class:`~spyt_queue.errors.DataLossError` or log ``message`` as a warning."""


class BatchJournal(ABC):
    """Where a source journals each micro-batch's range for a sink that commits the source's positions itself (the
    transactional YT sink, :mod:`spyt_queue.yt.batch_journal`), so that sink never reads Spark's checkpoint."""

    @abstractmethod
    def requested(self) -> bool:
        """Whether a sink asks for the journal (checked by the driver's planner)."""

    @abstractmethod
    def record(self, plan: Mapping[str, Any]) -> None:
        """Journal a batch's ``start`` and ``end`` offsets, from the task that reads the batch's first partition."""


class QueueBackend(ABC):
    """A partitioned, append-only log: bounds and ``[start, end)`` reads. Committed positions live in an
    :class:`~spyt_queue.stores.base.OffsetStore`."""

    @property
    @abstractmethod
    def source_id(self) -> str:
        """A stable identity of the source, stored in every offset (guards against a reused checkpoint)."""

    @abstractmethod
    def schema(self) -> StructType:
        """The Spark schema of the rows :meth:`read_range` yields."""

    @abstractmethod
    def bounds(self) -> dict[str, PartitionBounds]:
        """Current bounds of every partition, fetched in as few calls as possible."""

    def default_store(self) -> OffsetStore | None:
        """Where this source keeps committed positions unless ``offsets.store`` says otherwise (YT: the consumer
        table, Kafka: the consumer group); ``None`` when there is none (a YT batch read without a consumer)."""
        return None

    def batch_journal(self) -> BatchJournal | None:
        """Where this source journals its batches' ranges (:class:`BatchJournal`), ``None`` when it has nowhere."""
        return None

    @abstractmethod
    def is_transient(self, error: BaseException) -> bool:
        """Whether ``error`` is worth retrying (network, unavailable, lock conflict)."""

    def vanished(self, partitions: Iterable[str]) -> set[str]:
        """Which of ``partitions`` no longer exist (a deleted Kafka topic). Asked when a commit failed, to commit
        the partitions that remain; the default compares with the current bounds."""
        current = self.bounds()
        return {key for key in partitions if key not in current}

    @abstractmethod
    def read_range(
        self, partition: str, start: int, end: int, on_data_loss: DataLossHandler
    ) -> Iterator[pa.RecordBatch]:
        """Yield the rows ``[start, end)`` of ``partition`` as batches matching :meth:`schema` exactly.

        Rows that are gone are reported through ``on_data_loss`` and skipped; a row index that does not
        follow the previous one is a gap and is reported too.
        """

    def thread_copy(self) -> QueueBackend:
        """A copy of this backend for one reading thread of the driver (``read_mode=driver`` reads a batch's ranges
        side by side): what a read changes and the clients it uses are that thread's own. The default is a shallow
        copy, for backends that borrow a client per read from a thread-safe pool (Kafka's pooled consumers)."""
        return copy.copy(self)

    def offsets_for_timestamps(self, timestamps: Mapping[str, int]) -> dict[str, int | None]:
        """First offset at or after each timestamp (ms), ``None`` where there is none (Kafka only)."""
        raise NotImplementedError(f"{type(self).__name__} can not look up offsets by timestamp")
