"""Offset rules of the planner: each test fails if its rule breaks (pure logic, no server needed)."""

from __future__ import annotations

import itertools

import pytest

from spyt_queue.backend import PartitionBounds
from spyt_queue.errors import DataLossError
from spyt_queue.offsets import StreamOffset, partition_sort_key
from spyt_queue.planner import OffsetPlanner, split_by_backlog
from spyt_queue.spark.partitions import DataLossPolicy, split_ranges

FAIL = DataLossPolicy(fail=True)
WARN = DataLossPolicy(fail=False)


def b(lower: int, upper: int) -> PartitionBounds:
    return PartitionBounds(lower, upper)


def test_end_is_exclusive_next_unread_row() -> None:
    """Offsets hold the next unread row: a partition with rows [0, 10) and start 4 ends at 10."""
    plan = OffsetPlanner(None).plan({"0": 4}, {"0": b(0, 10)}, FAIL)
    assert plan.end == {"0": 10}
    ranges = split_ranges(None, {"0": 4}, plan.end, True)  # type: ignore[arg-type]
    assert [(r.start, r.end) for r in ranges] == [(4, 10)]


def test_max_rows_per_partition_caps_each_tablet() -> None:
    plan = OffsetPlanner(3).plan({"0": 0, "1": 5}, {"0": b(0, 10), "1": b(0, 6)}, FAIL)
    assert plan.end == {"0": 3, "1": 6}


def test_global_cap_split_by_backlog_never_exceeds_limit() -> None:
    shares = split_by_backlog({"0": 90, "1": 9, "2": 1}, 10)
    assert sum(shares.values()) == 10
    assert shares == {"0": 8, "1": 1, "2": 1}, "every partition with a backlog gets a share"
    assert split_by_backlog({"0": 3, "1": 4}, 100) == {"0": 3, "1": 4}


def test_global_cap_never_starves_a_small_partition_beside_a_hot_one() -> None:
    """Issue 8.5: {"0": 40, "1": 1000000} with a cap of 1000 gave partition 0 nothing on every trigger."""
    backlog = {"0": 40, "1": 1_000_000}
    position = dict.fromkeys(backlog, 0)
    for _trigger in range(40):
        shares = split_by_backlog({k: backlog[k] - position[k] for k in backlog}, 1000)
        assert sum(shares.values()) == 1000
        assert shares["0"] >= 1
        for key, share in shares.items():
            position[key] += share
    assert position["0"] == 40, "the small partition drains while the hot one stays busy"


def test_a_cap_below_the_number_of_waiting_partitions_gives_each_one_row() -> None:
    shares = split_by_backlog({"a": 5, "b": 1, "c": 7, "d": 0}, 2)
    assert shares == {"a": 1, "b": 1, "c": 1, "d": 0}


@pytest.mark.parametrize("limit", [1, 7, 33, 100])
def test_global_cap_progress_and_bound(limit: int) -> None:
    backlog = {"0": 50, "1": 25, "2": 0, "3": 5}
    shares = split_by_backlog(backlog, limit)
    assert sum(shares.values()) == min(80, max(limit, 3)), "the cap, or one row per waiting partition"
    assert all(shares[k] >= 1 for k in backlog if backlog[k])
    assert all(0 <= shares[k] <= backlog[k] for k in backlog)


def test_trimmed_rows_fail_when_fail_on_data_loss() -> None:
    with pytest.raises(DataLossError, match=r"rows \[2, 5\) of 0"):
        OffsetPlanner(None).plan({"0": 2}, {"0": b(5, 9)}, FAIL)


def test_trimmed_rows_skipped_with_warning(caplog: pytest.LogCaptureFixture) -> None:
    plan = OffsetPlanner(None).plan({"0": 2}, {"0": b(5, 9)}, WARN)
    assert plan.end == {"0": 9}
    assert "rows [2, 5)" in caplog.text


def test_new_partition_recorded_at_first_available_row_without_reading() -> None:
    """A tablet that appears mid-stream is read from its first row in the *next* batch (deterministic replay)."""
    plan = OffsetPlanner(None).plan({"0": 3}, {"0": b(0, 3), "1": b(0, 4)}, FAIL)
    assert plan.end == {"0": 3, "1": 0}
    nxt = OffsetPlanner(None).plan(plan.end, {"0": b(0, 3), "1": b(0, 4)}, FAIL)
    assert nxt.end == {"0": 3, "1": 4}
    assert [(r.partition, r.start, r.end) for r in split_ranges(None, plan.end, nxt.end, True)] == [("1", 0, 4)]  # type: ignore[arg-type]


def test_new_partition_already_trimmed_is_data_loss() -> None:
    with pytest.raises(DataLossError, match=r"1 appeared after the query started and its rows \[0, 2\)"):
        OffsetPlanner(None).plan({"0": 0}, {"0": b(0, 0), "1": b(2, 4)}, FAIL)
    plan = OffsetPlanner(None).plan({"0": 0}, {"0": b(0, 0), "1": b(2, 4)}, WARN)
    assert plan.end == {"0": 0, "1": 2}  # recorded at its first available row, not at 0


def test_vanished_partition_is_data_loss() -> None:
    with pytest.raises(DataLossError, match="no longer exists"):
        OffsetPlanner(None).plan({"0": 0, "1": 1}, {"0": b(0, 0)}, FAIL)
    plan = OffsetPlanner(None).plan({"0": 0, "1": 1}, {"0": b(0, 2)}, WARN)
    assert plan.end == {"0": 2}


def test_offset_beyond_end_resets_to_first_row() -> None:
    plan = OffsetPlanner(None).plan({"0": 50}, {"0": b(3, 10)}, WARN)
    assert plan.end == {"0": 3}
    with pytest.raises(DataLossError, match="offset 50 of 0 is beyond its end 10"):
        OffsetPlanner(None).plan({"0": 50}, {"0": b(3, 10)}, FAIL)


def test_available_now_target_caps_and_ignores_new_partitions() -> None:
    bounds = {"0": b(0, 100), "1": b(0, 5)}  # "1" appeared after prepareForTriggerAvailableNow froze the target
    plan = OffsetPlanner(None).plan({"0": 0}, bounds, FAIL, target={"0": 40})
    assert plan.end == {"0": 40, "1": 0}
    again = OffsetPlanner(None).plan(plan.end, bounds, FAIL, target={"0": 40})
    assert again.end == plan.end, "a partition outside the frozen target is never read in this run"


def test_offset_json_is_canonical_and_versioned() -> None:
    a = StreamOffset("yt://q", {"10": 1, "2": 5, "0": 3}).to_json()
    b_ = StreamOffset("yt://q", {"0": 3, "2": 5, "10": 1}).to_json()
    import json

    assert json.dumps(a) == json.dumps(b_)
    assert list(a["partitions"]) == ["0", "2", "10"]
    assert a["version"] == 1
    assert StreamOffset.from_json(json.loads(json.dumps(a))).positions == {"0": 3, "2": 5, "10": 1}
    with pytest.raises(Exception, match="belongs to source"):
        StreamOffset.from_json(a, expected_source="yt://other")
    assert partition_sort_key("t:10") > partition_sort_key("t:9")


def test_split_ranges_bounds_task_size() -> None:
    ranges = split_ranges(None, {"0": 0}, {"0": 10}, True, max_rows_per_task=4)  # type: ignore[arg-type]
    assert [(r.start, r.end) for r in ranges] == [(0, 4), (4, 8), (8, 10)]


def test_max_rows_per_task_and_min_tasks_cut_ranges_without_gaps() -> None:
    """maxRecordsPerPartition / minPartitions: ranges are cut into contiguous, non-overlapping pieces."""
    ranges = split_ranges(None, {"a": 0, "b": 0}, {"a": 90, "b": 10}, True, min_tasks=5)  # type: ignore[arg-type]
    pieces = [(r.partition, r.start, r.end) for r in ranges]
    assert len(pieces) >= 5
    for key, total in (("a", 90), ("b", 10)):
        mine = sorted((s, e) for k, s, e in pieces if k == key)
        assert mine[0][0] == 0 and mine[-1][1] == total
        assert all(a[1] == b[0] for a, b in itertools.pairwise(mine))
    capped = split_ranges(None, {"a": 0}, {"a": 10}, True, max_rows_per_task=4, min_tasks=1)  # type: ignore[arg-type]
    assert [(r.start, r.end) for r in capped] == [(0, 4), (4, 8), (8, 10)]
