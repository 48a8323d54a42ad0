"""What travels to executors: input partitions of ``[start, end)`` ranges, each range carrying its backend.

A task reads one range (:class:`RangePartition`) or, when a batch is small, several ranges of different partitions
one after the other (:class:`PackedRanges`): every Python task costs Spark a fixed set-up, so splitting a small
batch into one task per partition costs more than it saves (see :func:`pack_ranges`).
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from spyt_queue.backend import BatchJournal, DataLossHandler, QueueBackend
from spyt_queue.errors import DataLossError

log = logging.getLogger("spyt_queue.read")

#: A range as planned: (partition, first row, end row exclusive).
Range = tuple[str, int, int]
#: Most ranges one packed task reads: each range costs its own requests (YT: a pull, Kafka: a watermark look-up, a seek
#: and a fetch; a few ms each), so a small batch over hundreds of partitions still spreads over several tasks.
MAX_RANGES_PER_TASK = 16


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


class PackedRanges(InputPartition):
    """Several ranges, of different partitions, read by one task one after the other.

    Each range is read exactly as on its own (its own exactness and data-loss checks, its own service columns);
    the task's rows are the ranges' rows in the order of :attr:`ranges`.
    """

    def __init__(self, ranges: Sequence[RangePartition]) -> None:
        super().__init__(tuple((r.partition, r.start, r.end) for r in ranges))
        self.ranges = tuple(ranges)

    def __repr__(self) -> str:
        return f"PackedRanges({', '.join(map(repr, self.ranges))})"

    def read(self) -> Iterator[pa.RecordBatch]:
        """Yield every range's record batches, range after range (runs on an executor)."""
        for part in self.ranges:
            yield from part.read()


def pack_ranges(
    ranges: Sequence[Range],
    min_rows_per_task: int | None,
    min_tasks: int | None = None,
    max_rows_per_task: int | None = None,
    max_ranges: int = MAX_RANGES_PER_TASK,
) -> list[list[Range]]:
    """Group a batch's ranges into tasks: ranges shorter than ``min_rows_per_task`` share tasks of up to that many
    rows; a range of ``min_rows_per_task`` rows or more is a task of its own.

    The rule (``min_rows_per_task``): a task's fixed cost in Spark is about what reading some tens of thousands of
    rows costs, so tasks smaller than that are not worth their own scheduling, whatever the number of cores. Hence:

    * ranges are taken largest first and each goes to the least loaded task that has room for it (at most
      ``min_rows_per_task`` rows, and at most ``max_rows_per_task`` when set), a new task when none has: so a batch
      of ``R`` rows keeps at least ``ceil(R / min_rows_per_task)`` tasks, balanced;
    * there are at least ``min_tasks`` tasks (``minPartitions``) when there are that many ranges;
    * a task holds at most ``max_ranges`` ranges (:data:`MAX_RANGES_PER_TASK`);
    * a task never holds two ranges of one partition (pieces cut by ``maxRecordsPerPartition``/``minPartitions`` stay
      in tasks of their own, as asked);
    * ``min_rows_per_task`` of ``None`` or 0: one task per range.

    Within a task the ranges keep their order in ``ranges``; tasks are ordered by their first range.
    """
    if not min_rows_per_task or len(ranges) <= 1:
        return [[r] for r in ranges]
    room = min(min_rows_per_task, max_rows_per_task) if max_rows_per_task else min_rows_per_task
    wanted = min(max(min_tasks or 1, 1), len(ranges))
    members: list[list[int]] = [[] for _ in range(wanted)]
    keys: list[set[str]] = [set() for _ in range(wanted)]
    open_tasks = [(0, task) for task in range(wanted)]  # (rows, task) of tasks with room for another range: a heap
    by_size = sorted(range(len(ranges)), key=lambda i: ranges[i][1] - ranges[i][2])  # largest first, stable
    for index in by_size:
        key, first, stop = ranges[index]
        rows = stop - first
        skipped, chosen = [], None
        while open_tasks:  # the least loaded task that fits; if it has no room by rows, none has
            load, task = heapq.heappop(open_tasks)
            if members[task] and load + rows > room:
                skipped.append((load, task))
                break
            if key in keys[task]:
                skipped.append((load, task))
                continue
            chosen = (load, task)
            break
        for entry in skipped:
            heapq.heappush(open_tasks, entry)
        if chosen is None:
            chosen = (0, len(members))
            members.append([])
            keys.append(set())
        load, task = chosen
        members[task].append(index)
        keys[task].add(key)
        if len(members[task]) < max_ranges and load + rows < room:
            heapq.heappush(open_tasks, (load + rows, task))
    groups = sorted(sorted(m) for m in members if m)
    return [[ranges[i] for i in group] for group in groups]


def cut_ranges(
    start: dict[str, int], end: dict[str, int], max_rows_per_task: int | None = None, min_tasks: int | None = None
) -> list[Range]:
    """The ranges between two offsets; partitions absent from ``start`` are skipped.

    Ranges longer than ``max_rows_per_task`` (Spark-Kafka's ``maxRecordsPerPartition``) are cut, and with
    ``min_tasks`` (``minPartitions``) the largest ranges are cut further until there are at least that many,
    so one busy partition does not become one long task.
    """
    ranges: list[Range] = []
    for key, stop in end.items():
        begin = start.get(key)
        if begin is None or stop <= begin:
            continue
        step = max_rows_per_task or (stop - begin)
        ranges.extend((key, first, min(stop, first + step)) for first in range(begin, stop, step))
    if min_tasks and 0 < len(ranges) < min_tasks:
        total = sum(stop - first for _, first, stop in ranges)
        cut: list[Range] = []
        for key, first, stop in ranges:
            pieces = max(1, min(stop - first, round(min_tasks * (stop - first) / total)))
            bounds = [first + (stop - first) * i // pieces for i in range(pieces + 1)]
            cut.extend((key, a, b) for a, b in itertools.pairwise(bounds) if b > a)
        ranges = cut
    return ranges


def as_partitions(groups: Sequence[Sequence[RangePartition]]) -> list[InputPartition]:
    """One input partition per group: the range itself when alone, :class:`PackedRanges` otherwise."""
    return [group[0] if len(group) == 1 else PackedRanges(group) for group in groups]


def split_ranges(
    backend: QueueBackend,
    start: dict[str, int],
    end: dict[str, int],
    fail_on_data_loss: bool,
    max_rows_per_task: int | None = None,
    min_tasks: int | None = None,
    min_rows_per_task: int | None = None,
) -> list[InputPartition]:
    """Input partitions for the rows between two offsets: :func:`cut_ranges`, then :func:`pack_ranges`."""
    ranges = cut_ranges(start, end, max_rows_per_task, min_tasks)
    groups = pack_ranges(ranges, min_rows_per_task, min_tasks, max_rows_per_task)
    return as_partitions(
        [[RangePartition(backend, key, first, stop, fail_on_data_loss) for key, first, stop in g] for g in groups]
    )


class JournaledPartition(InputPartition):
    """The first input partition of a batch whose range the task journals before reading (``inner``: the
    partition's own ranges, ``None`` for a batch with no rows to read)."""

    def __init__(self, inner: InputPartition | None, journal: BatchJournal, plan: Mapping[str, Any]) -> None:
        super().__init__(getattr(inner, "value", None))
        self.inner = inner
        self.journal = journal
        self.plan = dict(plan)

    def __repr__(self) -> str:
        return f"JournaledPartition({self.inner!r})"

    def read(self) -> Iterator[pa.RecordBatch]:
        """Journal the batch's range, then read the partition's rows (on an executor)."""
        self.journal.record(self.plan)
        if self.inner is not None:
            yield from self.inner.read()  # type: ignore[attr-defined]


def attach(
    partitions: Sequence[InputPartition], journal: BatchJournal, plan: Mapping[str, Any]
) -> list[InputPartition]:
    """``partitions`` with the first one journaling ``plan`` (a batch without ranges gets one that only journals)."""
    if not partitions:
        return [JournaledPartition(None, journal, plan)]
    return [JournaledPartition(partitions[0], journal, plan), *partitions[1:]]
