"""The packing rule of ``min_rows_per_task``: short ranges share tasks, long ones keep theirs (pure logic)."""

from __future__ import annotations

import math
import pickle
import random
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from spyt_queue.backend import DataLossHandler
from spyt_queue.errors import DataLossError, OptionError
from spyt_queue.options import Options
from spyt_queue.settings import DEFAULT_MIN_ROWS_PER_TASK, ReaderSettings
from spyt_queue.spark.partitions import MAX_RANGES_PER_TASK, PackedRanges, RangePartition, pack_ranges, split_ranges


def rows(group: list[tuple[str, int, int]]) -> int:
    return sum(stop - first for _, first, stop in group)


def test_a_small_batch_over_four_partitions_is_one_task() -> None:
    ranges = [(str(i), 100, 350) for i in range(4)]
    assert pack_ranges(ranges, 20_000) == [ranges]


def test_ranges_of_the_threshold_or_more_keep_their_own_task() -> None:
    ranges = [("0", 0, 20_000), ("1", 5, 30_005), ("2", 0, 10), ("3", 0, 10)]
    assert pack_ranges(ranges, 20_000) == [[("0", 0, 20_000)], [("1", 5, 30_005)], [("2", 0, 10), ("3", 0, 10)]]


def test_a_large_batch_keeps_one_task_per_partition() -> None:
    ranges = [(str(i), 0, 15_000) for i in range(4)]  # no two fit in 20 000 rows
    assert pack_ranges(ranges, 20_000) == [[r] for r in ranges]


def test_packing_off_is_one_task_per_range() -> None:
    ranges = [(str(i), 0, 5) for i in range(3)]
    assert pack_ranges(ranges, 0) == pack_ranges(ranges, None) == [[r] for r in ranges]


def test_min_tasks_keeps_at_least_that_many_tasks() -> None:
    ranges = [(str(i), 0, 5) for i in range(6)]
    groups = pack_ranges(ranges, 20_000, min_tasks=3)
    assert len(groups) == 3 and sorted(map(rows, groups)) == [10, 10, 10]
    assert len(pack_ranges(ranges[:2], 20_000, min_tasks=5)) == 2  # never more tasks than ranges


def test_pieces_of_one_partition_never_share_a_task() -> None:
    """minPartitions cut one partition into pieces: they stay in separate tasks (contiguous rows per tablet per task,
    which the producer-session sink needs)."""
    pieces = [("a", 0, 12), ("a", 12, 25), ("a", 25, 37), ("a", 37, 50)]
    assert pack_ranges(pieces, 20_000, min_tasks=4) == [[p] for p in pieces]
    assert pack_ranges(pieces, 20_000) == [[p] for p in pieces]
    mixed = pack_ranges([("a", 0, 5), ("a", 5, 10), ("b", 0, 5)], 20_000)
    assert all(len({key for key, _, _ in group}) == len(group) for group in mixed)
    assert len(mixed) == 2


def test_max_rows_per_task_caps_packed_tasks() -> None:
    ranges = [(str(i), 0, 4) for i in range(5)]
    groups = pack_ranges(ranges, 20_000, max_rows_per_task=10)
    assert all(rows(g) <= 10 for g in groups) and len(groups) == 3


def test_a_task_reads_at_most_max_ranges_per_task_ranges() -> None:
    """Each range costs its own requests: a small batch over many partitions spreads over several tasks."""
    ranges = [(str(i), 0, 1) for i in range(40)]
    groups = pack_ranges(ranges, 20_000)
    assert [len(g) for g in groups] == [MAX_RANGES_PER_TASK, MAX_RANGES_PER_TASK, 40 - 2 * MAX_RANGES_PER_TASK]
    assert len(pack_ranges(ranges, 20_000, max_ranges=40)) == 1


def test_packing_ten_thousand_partitions_is_quick() -> None:
    ranges = [(f"t:{i}", 0, 1 + i % 7) for i in range(10_000)]
    began = time.perf_counter()
    groups = pack_ranges(ranges, 20_000)
    assert time.perf_counter() - began < 2.0
    assert sum(map(len, groups)) == 10_000 and len(groups) == math.ceil(10_000 / MAX_RANGES_PER_TASK)


@pytest.mark.parametrize("seed", range(40))
def test_random_batches_every_range_once_within_the_rule(seed: int) -> None:
    rng = random.Random(seed)
    room = rng.choice([10, 100, 1000])
    ranges = []
    for key in range(rng.randint(1, 30)):
        first = rng.randint(0, 50)
        for _ in range(rng.randint(1, 3)):
            stop = first + rng.randint(1, 3 * room)
            ranges.append((f"p{key}", first, stop))
            first = stop
    min_tasks = rng.choice([None, 1, 3, 50])
    groups = pack_ranges(ranges, room, min_tasks=min_tasks)
    flat = [r for g in groups for r in g]
    assert sorted(flat) == sorted(ranges), "every range in exactly one task"
    small = [r for r in ranges if rows([r]) < room]
    assert len(groups) >= len(ranges) - len(small) + math.ceil(rows(small) / room), "large batches keep parallelism"
    assert len(groups) >= min(min_tasks or 1, len(ranges))
    for group in groups:
        assert len({key for key, _, _ in group}) == len(group) <= MAX_RANGES_PER_TASK
        assert len(group) == 1 or rows(group) <= room, "only ranges that fit together share a task"
        assert group == sorted(group, key=ranges.index), "a task reads its ranges in planning order"


class FakeBackend:
    """Records the ranges read; reports data loss for partition ``lossy``."""

    def __init__(self, lossy: str | None = None) -> None:
        self.lossy = lossy

    def read_range(
        self, partition: str, start: int, end: int, on_data_loss: DataLossHandler
    ) -> Iterator[pa.RecordBatch]:
        if partition == self.lossy:
            on_data_loss.report(f"rows [{start}, {start + 1}) of {partition} were removed")
            start += 1
        yield pa.record_batch({"p": [partition] * (end - start), "i": list(range(start, end))})


def test_packed_partition_reads_its_ranges_one_after_the_other_each_with_its_checks() -> None:
    parts = split_ranges(FakeBackend(), {"a": 0, "b": 3}, {"a": 2, "b": 5}, True, min_rows_per_task=100)  # type: ignore[arg-type]
    assert len(parts) == 1 and isinstance(parts[0], PackedRanges)
    packed = pickle.loads(pickle.dumps(parts[0]))
    table = pa.Table.from_batches(list(packed.read()))
    assert list(zip(table["p"].to_pylist(), table["i"].to_pylist(), strict=True)) == [
        ("a", 0),
        ("a", 1),
        ("b", 3),
        ("b", 4),
    ]
    lossy = split_ranges(FakeBackend("b"), {"a": 0, "b": 3}, {"a": 2, "b": 5}, True, min_rows_per_task=100)  # type: ignore[arg-type]
    with pytest.raises(DataLossError, match="of b"):
        list(lossy[0].read())
    kept = split_ranges(FakeBackend("b"), {"a": 0, "b": 3}, {"a": 2, "b": 5}, False, min_rows_per_task=100)  # type: ignore[arg-type]
    assert sum(batch.num_rows for batch in kept[0].read()) == 3


def test_a_range_alone_stays_a_range_partition() -> None:
    parts = split_ranges(FakeBackend(), {"a": 0, "b": 0}, {"a": 50, "b": 50}, True, min_rows_per_task=60)  # type: ignore[arg-type]
    assert [type(p) for p in parts] == [RangePartition, RangePartition]


def test_min_rows_per_task_option() -> None:
    assert ReaderSettings.parse(Options({})).min_rows_per_task == DEFAULT_MIN_ROWS_PER_TASK
    assert ReaderSettings.parse(Options({"min_rows_per_task": "0"})).min_rows_per_task == 0
    assert ReaderSettings.parse(Options({"minRowsPerTask": "500"})).min_rows_per_task == 500
    with pytest.raises(OptionError, match="min_rows_per_task"):
        ReaderSettings.parse(Options({"min_rows_per_task": "-1"}))
