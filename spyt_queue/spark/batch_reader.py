"""``spark.read.format("ytqueue")``: a bounded read between a starting and an ending position."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from spyt_queue.backend import QueueBackend
from spyt_queue.errors import OptionError
from spyt_queue.positions import resolve_positions
from spyt_queue.settings import ReaderSettings
from spyt_queue.spark.partitions import DataLossPolicy, RangePartition, split_ranges


class QueueBatchReader(DataSourceReader):
    """Reads ``[startingOffsets, endingOffsets)`` of every partition, split into tasks of at most
    ``max_rows_per_partition`` rows."""

    def __init__(self, backend: QueueBackend, settings: ReaderSettings) -> None:
        self.backend = backend
        self.settings = settings
        backend.schema()  # fetched once on the driver, carried to executors inside the partitions

    def partitions(self) -> Sequence[InputPartition]:
        """Resolve both positions against the current bounds, check them, and split the ranges into tasks."""
        bounds = self.backend.bounds()
        committed = self.backend.committed() if self.settings.starting.kind in ("consumer", "group") else {}
        start = resolve_positions(self.settings.starting, bounds, committed, self.backend)
        end = resolve_positions(self.settings.ending, bounds, committed, self.backend, ending=True)
        describe = getattr(self.backend, "describe", str)
        for key in start:
            if end[key] > bounds[key].upper:
                raise OptionError(
                    "endingOffsets", f"{end[key]} is beyond the end {bounds[key].upper} of {describe(key)}"
                )
            if start[key] > end[key]:
                raise OptionError(
                    "startingOffsets", f"{start[key]} is after the ending offset {end[key]} of {describe(key)}"
                )
            if self.settings.fail_on_data_loss and start[key] < bounds[key].lower:
                DataLossPolicy(True).report(
                    f"rows [{start[key]}, {bounds[key].lower}) of {describe(key)} were removed before they were read"
                )  # with failOnDataLoss=false the tasks warn when they meet the gap
        return split_ranges(
            self.backend,
            start,
            end,
            self.settings.fail_on_data_loss,
            self.settings.max_rows_per_task or self.settings.max_rows_per_partition,
            self.settings.min_tasks,
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one range (on an executor)."""
        assert isinstance(partition, RangePartition)
        return partition.read()
