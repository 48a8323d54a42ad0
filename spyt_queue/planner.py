"""Plans the end offsets of a micro-batch: per-partition caps, a global cap split by backlog, and bounds.

Pure logic with no I/O, so every offset rule (new partitions, trimmed rows, vanished partitions, caps,
AvailableNow targets) is unit-testable without Spark or a server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from spyt_queue.backend import DataLossHandler, PartitionBounds
from spyt_queue.offsets import sorted_partitions


@dataclass
class BatchPlan:
    """The outcome of planning one trigger."""

    start: dict[str, int]  # where each partition's rows effectively begin (after skipping lost rows)
    end: dict[str, int]
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """Rows the batch reads."""
        return sum(self.end[p] - self.start[p] for p in self.end)


def split_by_backlog(backlog: Mapping[str, int], limit: int) -> dict[str, int]:
    """Split ``limit`` rows across partitions in proportion to their backlog, never exceeding a backlog.

    Every partition with a backlog gets at least one row, so a small partition beside a hot one is never
    starved (Spark's Kafka source rounds small shares up for the same reason). The total is
    ``min(sum(backlog), max(limit, partitions with a backlog))``: it exceeds ``limit`` only when the cap is
    smaller than the number of partitions waiting, by giving each of them one row. The rest is handed out by
    largest remainder, so the total is exact and the split deterministic.
    """
    total = sum(backlog.values())
    if total <= limit:
        return dict(backlog)
    waiting = [key for key, size in backlog.items() if size > 0]
    budget = max(limit, len(waiting))
    shares = {key: min(size, limit * size // total) for key, size in backlog.items()}
    for key in waiting:
        shares[key] = max(shares[key], 1)
    over = sum(shares.values()) - budget
    while over > 0:  # the round-ups overshot: take rows back from the largest shares (each keeps >= 1)
        largest = max(waiting, key=lambda key: (shares[key], key))
        shares[largest] -= 1
        over -= 1
    remainders = sorted(waiting, key=lambda key: (-((limit * backlog[key]) % total), key))
    left = budget - sum(shares.values())
    while left > 0:
        progressed = False
        for key in remainders:
            if left <= 0:
                break
            if shares[key] < backlog[key]:
                shares[key] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    return shares


class OffsetPlanner:
    """Turns a start offset and the current bounds into the end offset of the next batch."""

    def __init__(self, max_rows_per_partition: int | None, describe: callable = str) -> None:
        self.max_rows_per_partition = max_rows_per_partition
        self.describe = describe

    def plan(
        self,
        start: Mapping[str, int],
        bounds: Mapping[str, PartitionBounds],
        on_data_loss: DataLossHandler,
        max_rows: int | None = None,
        target: Mapping[str, int] | None = None,
    ) -> BatchPlan:
        """Return the batch after ``start`` given ``bounds``.

        * A partition in ``bounds`` but not in ``start`` is new: this batch only records its first available
          row as its position (no rows), so the next batch reads it from a start that is in the offset log
          and replays deterministically. Rows already gone before it was seen are reported as data loss.
        * A partition in ``start`` but not in ``bounds`` vanished: reported, and dropped from the offset.
        * ``start`` below the first available row means trimmed rows: reported; the batch reads from the
          first available row.
        * ``start`` beyond the end means the partition was recreated or truncated: reported; like a new
          partition, this batch moves its position to the first available row without reading.
        * ``target`` (AvailableNow) caps each partition; partitions absent from it are not read.
        """
        effective: dict[str, int] = {}
        hold: set[str] = set()
        notes: list[str] = []
        for key in sorted_partitions(start):
            if key not in bounds:
                on_data_loss.report(
                    f"{self.describe(key)} no longer exists; rows after offset {start[key]} can not be read"
                )
                notes.append(f"dropped vanished {key}")
        for key in sorted_partitions(bounds):
            b = bounds[key]
            if key not in start:
                if b.lower > 0:
                    on_data_loss.report(
                        f"{self.describe(key)} appeared after the query started and its rows [0, {b.lower}) "
                        "were removed before they could be read"
                    )
                effective[key] = b.lower
                hold.add(key)
                notes.append(f"new {key} from {b.lower}")
                continue
            position = start[key]
            if position < b.lower:
                on_data_loss.report(
                    f"rows [{position}, {b.lower}) of {self.describe(key)} were removed (trimmed or expired) "
                    "before they were read"
                )
                position = b.lower
            elif position > b.upper:
                on_data_loss.report(
                    f"offset {position} of {self.describe(key)} is beyond its end {b.upper}: the partition "
                    "was recreated or truncated"
                )
                position = b.lower
                hold.add(key)
            effective[key] = position

        backlog: dict[str, int] = {}
        for key, position in effective.items():
            upper = bounds[key].upper
            if target is not None:
                upper = min(upper, target.get(key, position))
            size = 0 if key in hold else max(0, upper - position)
            if self.max_rows_per_partition is not None:
                size = min(size, self.max_rows_per_partition)
            backlog[key] = size
        if max_rows is not None:
            backlog = split_by_backlog(backlog, max_rows)
        end = {key: effective[key] + backlog[key] for key in sorted_partitions(effective)}
        return BatchPlan(start=effective, end=end, notes=notes)
