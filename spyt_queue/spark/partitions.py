"""What travels to executors: one input partition per ``[start, end)`` range, carrying its backend."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from spyt_queue.backend import DataLossHandler, QueueBackend
from spyt_queue.errors import DataLossError

log = logging.getLogger("spyt_queue.read")


@dataclass(frozen=True)
class DataLossPolicy(DataLossHandler):
    """``failOnDataLoss``: raise :class:`DataLossError`, or log a warning and go on."""

    fail: bool

    def report(self, message: str) -> None:
        if self.fail:
            raise DataLossError(
                f"{message}. Some data may have been lost. Set failOnDataLoss=false to skip lost rows "
                "with a warning instead of failing the query."
            )
        log.warning("%s; skipping them because failOnDataLoss=false", message)


class RangePartition(InputPartition):
    """Rows ``[start, end)`` of one partition of one backend."""

    def __init__(self, backend: QueueBackend, partition: str, start: int, end: int, fail_on_data_loss: bool) -> None:
        super().__init__((partition, start, end))
        self.backend = backend
        self.partition = partition
        self.start = start
        self.end = end
        self.fail_on_data_loss = fail_on_data_loss

    def __repr__(self) -> str:
        return f"RangePartition({self.partition}, [{self.start}, {self.end}))"

    def read(self) -> Iterator[pa.RecordBatch]:
        """Yield the range's rows as Arrow record batches (runs on an executor)."""
        return self.backend.read_range(self.partition, self.start, self.end, DataLossPolicy(self.fail_on_data_loss))


def split_ranges(
    backend: QueueBackend,
    start: dict[str, int],
    end: dict[str, int],
    fail_on_data_loss: bool,
    max_rows_per_task: int | None = None,
    min_tasks: int | None = None,
) -> list[RangePartition]:
    """Input partitions for the rows between two offsets; partitions absent from ``start`` are skipped.

    Ranges longer than ``max_rows_per_task`` (Spark-Kafka's ``maxRecordsPerPartition``) are cut, and with
    ``min_tasks`` (``minPartitions``) the largest ranges are cut further until there are at least that many tasks,
    so one busy partition does not become one long task.
    """
    ranges: list[tuple[str, int, int]] = []
    for key, stop in end.items():
        begin = start.get(key)
        if begin is None or stop <= begin:
            continue
        step = max_rows_per_task or (stop - begin)
        ranges.extend((key, first, min(stop, first + step)) for first in range(begin, stop, step))
    if min_tasks and 0 < len(ranges) < min_tasks:
        total = sum(stop - first for _, first, stop in ranges)
        cut: list[tuple[str, int, int]] = []
        for key, first, stop in ranges:
            pieces = max(1, min(stop - first, round(min_tasks * (stop - first) / total)))
            bounds = [first + (stop - first) * i // pieces for i in range(pieces + 1)]
            cut.extend((key, a, b) for a, b in itertools.pairwise(bounds) if b > a)
        ranges = cut
    return [RangePartition(backend, key, first, stop, fail_on_data_loss) for key, first, stop in ranges]
