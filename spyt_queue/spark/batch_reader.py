"""``spark.read.format("ytqueue")``: a bounded read between a starting and an ending position."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from spyt_queue.backend import QueueBackend
from spyt_queue.positions import resolve_positions
from spyt_queue.settings import ReaderSettings
from spyt_queue.spark.partitions import DataLossPolicy, RangePartition, split_ranges


class QueueBatchReader(DataSourceReader):
    """Reads ``[startingOffsets, endingOffsets)`` of every partition, split into tasks of at most
    ``max_rows_per_partition`` rows."""

    def __init__(self, backend: QueueBackend, settings: ReaderSettings) -> None:
        self.backend = backend
        self.settings = settings

    def partitions(self) -> Sequence[InputPartition]:
        """Resolve both positions against the current bounds and split the ranges into tasks."""
        bounds = self.backend.bounds()
        committed = self.backend.committed() if self.settings.starting.kind in ("consumer", "group") else {}
        start = resolve_positions(self.settings.starting, bounds, committed, self.backend)
        end = resolve_positions(self.settings.ending, bounds, committed, self.backend)
        policy = DataLossPolicy(self.settings.fail_on_data_loss)
        for key in start:
            if start[key] < bounds[key].lower:
                policy.report(
                    f"rows [{start[key]}, {bounds[key].lower}) of {getattr(self.backend, 'describe', str)(key)} "
                    "were removed before they were read"
                )
        return split_ranges(
            self.backend, start, end, self.settings.fail_on_data_loss, self.settings.max_rows_per_partition
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one range (on an executor)."""
        assert isinstance(partition, RangePartition)
        return partition.read()
