"""``spark.read.format("ytqueue")``: a bounded read between a starting and an ending position.

Spark plans a Python data source's batch partitions once per DataFrame (the JVM caches the planning result
on the data source object), while Spark's Kafka source resolves ``earliest``/``latest`` at every execution.
To match it, the bounds are checked when the DataFrame is first planned but, where a position means "the
first" or "the next" row of a partition, it travels to the executor unresolved and is bound there, when the
task runs: a reused DataFrame sees the records produced since its last execution.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from spyt_queue.backend import PartitionBounds, QueueBackend
from spyt_queue.errors import OptionError
from spyt_queue.positions import bind, plan_positions
from spyt_queue.settings import EARLIEST, LATEST, ReaderSettings
from spyt_queue.spark.errors import one_line_errors, one_line_rows
from spyt_queue.spark.partitions import (
    DataLossPolicy,
    PackedRanges,
    RangePartition,
    as_partitions,
    pack_ranges,
    split_ranges,
)
from spyt_queue.stores.base import OffsetStore


class LateBoundRange(RangePartition):
    """Rows ``[start, end)`` of one partition where ``start`` may be ``EARLIEST`` and ``end`` ``LATEST``: bound to
    the partition's bounds when the task runs, so every execution of a DataFrame reads up to the current end."""

    def __repr__(self) -> str:
        return f"LateBoundRange({self.partition}, [{self.start}, {self.end}))"

    def read(self) -> Iterator[pa.RecordBatch]:
        """Bind the range to the partition's current bounds, then read it (runs on an executor)."""
        policy = DataLossPolicy(self.fail_on_data_loss)
        start, end = self.start, self.end
        if start in (EARLIEST, LATEST) or end in (EARLIEST, LATEST):
            bounds = self.backend.bounds().get(self.partition)
            if bounds is None:
                policy.report(f"{_describe(self.backend, self.partition)} does not exist any more")
                return
            start, end = bind(start, bounds), bind(end, bounds)
        if start > end:
            raise OptionError(
                "startingOffsets",
                f"{start} is after the ending offset {end} of {_describe(self.backend, self.partition)}",
            )
        if start < end:
            yield from self.backend.read_range(self.partition, start, end, policy)


def _describe(backend: QueueBackend, partition: str) -> str:
    describe = getattr(backend, "describe", None)
    return describe(partition) if describe is not None else f"partition {partition}"


class QueueBatchReader(DataSourceReader):
    """Reads ``[startingOffsets, endingOffsets)`` of every partition.

    Without task-splitting options there is one range per partition whose ``earliest``/``latest`` ends are bound
    when the task runs; ranges short at planning time share tasks (``min_rows_per_task``). With
    ``maxRecordsPerPartition``, ``minPartitions`` or ``max_rows_per_partition`` the ranges are cut when the
    DataFrame is first planned, so they are fixed then (Spark would re-plan them).
    """

    def __init__(self, backend: QueueBackend, settings: ReaderSettings, store: OffsetStore | None = None) -> None:
        self.backend = backend
        self.settings = settings
        self.store = store
        backend.schema()  # fetched once on the driver, carried to executors inside the partitions

    def _splits_tasks(self) -> bool:
        s = self.settings
        return bool(s.max_rows_per_task or s.max_rows_per_partition or s.min_tasks)

    @one_line_errors
    def partitions(self) -> Sequence[InputPartition]:
        """Resolve both positions against the current bounds, check them, and plan one range per partition (or
        split the ranges), packing short ones into shared tasks."""
        bounds = self.backend.bounds()
        committed = self.store.committed() if self.store is not None else {}
        start = plan_positions(self.settings.starting, bounds, committed, self.backend)
        end = plan_positions(self.settings.ending, bounds, committed, self.backend, ending=True)
        self._check(start, end, bounds)
        if self._splits_tasks():
            return split_ranges(
                self.backend,
                {key: bind(offset, bounds[key]) for key, offset in start.items()},
                {key: bind(offset, bounds[key]) for key, offset in end.items()},
                self.settings.fail_on_data_loss,
                self.settings.max_rows_per_task or self.settings.max_rows_per_partition,
                self.settings.min_tasks,
                self.settings.min_rows_per_task,
            )
        late = {
            key: LateBoundRange(self.backend, key, start[key], end[key], self.settings.fail_on_data_loss)
            for key in start
        }
        # packed by their sizes now; the ends are still bound when the task runs
        sizes = [(key, 0, max(0, bind(end[key], bounds[key]) - bind(start[key], bounds[key]))) for key in start]
        groups = pack_ranges(sizes, self.settings.min_rows_per_task)
        return as_partitions([[late[key] for key, _, _ in group] for group in groups])

    def _check(self, start: dict[str, int], end: dict[str, int], bounds: dict[str, PartitionBounds]) -> None:
        for key in start:
            first, last, b = bind(start[key], bounds[key]), bind(end[key], bounds[key]), bounds[key]
            what = _describe(self.backend, key)
            if last > b.upper:
                raise OptionError(self.settings.ending.option, f"{last} is beyond the end {b.upper} of {what}")
            if first > last:
                raise OptionError(self.settings.starting.option, f"{first} is after the ending offset {last} of {what}")
            if self.settings.fail_on_data_loss and first < b.lower:
                DataLossPolicy(True).report(
                    f"rows [{first}, {b.lower}) of {what} were removed before they were read"
                )  # with failOnDataLoss=false the tasks warn when they meet the gap

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one range or packed ranges (on an executor). PySpark sends a placeholder ``InputPartition(None)`` when
        :meth:`partitions` planned none (nothing to read): it yields no rows."""
        if isinstance(partition, (RangePartition, PackedRanges)):
            return one_line_rows(partition.read())
        return iter(())
