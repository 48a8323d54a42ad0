"""Kudu sink planners (pure logic, no Kudu): each test fails if its rule breaks.

The examples follow ../shared/notes/sinks-and-offset-stores.md §1.1-1.3 (Type I rules, the 5-case history walk,
`10 then 20 then late 15`, and the nrtkudu defects that must not come back).
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import re
from collections.abc import Sequence
from typing import Any

import pytest

from spyt_queue.errors import BadRecordError, OptionError
from spyt_queue.sinks.kudu.mutations import KeyConflictError, Mutation, MutationKind, apply, key_of
from spyt_queue.sinks.kudu.planners import (
    INT64_MAX,
    AppendPlanner,
    HistoryPlanner,
    LatestPlanner,
    Planner,
    UpsertPlanner,
    plan_batch,
    planner_from_options,
)

INF = INT64_MAX
HIST = HistoryPlanner(["id"], event_time="ts")
LATEST = LatestPlanner(["id"], event_time="ts")


def r(ts: Any, v: Any, id: Any = 1, **extra: Any) -> dict[str, Any]:
    """An arriving row."""
    return {"id": id, "ts": ts, "v": v, **extra}


def run(planner: Planner, state: Sequence[dict[str, Any]], batch: Sequence[dict[str, Any]], now: Any = 0):
    """(state after the batch, mutations of the batch); checks that no primary key gets two mutations, so the sink
    may apply them in any order (AUTO_FLUSH_BACKGROUND does not keep the order of operations)."""
    mutations = plan_batch(planner, batch, state, now=now)
    keys = [key_of(m.row, planner.primary_key) for m in mutations]
    assert len(keys) == len(set(keys)), mutations
    return apply(state, mutations, planner.primary_key), mutations


def run_batches(planner: Planner, batches: Sequence[Sequence[dict[str, Any]]], now: Any = 0) -> list[dict[str, Any]]:
    state: list[dict[str, Any]] = []
    for batch in batches:
        state, _ = run(planner, state, batch, now)
    return state


def hist_view(state: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(id, from, to, current, v) per stored version."""
    return [(s["id"], s["ts"], s["effective_to"], s["is_current"], s["v"]) for s in state]


def kinds(mutations: Sequence[Mutation]) -> list[tuple[str, Any]]:
    return [(m.kind.value, m.row.get("ts")) for m in mutations]


# ---------------------------------------------------------------- history (Type II)


def test_history_first_version_is_current_until_far_future() -> None:
    """Case 0: no stored version -> INSERT from=a, to=far future, current."""
    state, muts = run(HIST, [], [r(10, "a")], now=7)
    assert hist_view(state) == [(1, 10, INF, True, "a")]
    assert muts == [
        Mutation("insert", {"id": 1, "ts": 10, "v": "a", "effective_to": INF, "is_current": True, "last_updated": 7})
    ]


def test_history_10_then_20_then_late_15_across_batches() -> None:
    """The notes' example: 10 then 20 -> 10..19 N, 20..inf Y; a late 15 -> 10..14 N, 15..19 N, 20..inf Y."""
    state, _ = run(HIST, [], [r(10, "a")])
    state, muts = run(HIST, state, [r(20, "b")])
    assert hist_view(state) == [(1, 10, 19, False, "a"), (1, 20, INF, True, "b")]
    assert kinds(muts) == [("update", 10), ("insert", 20)]
    state, muts = run(HIST, state, [r(15, "c")])
    assert hist_view(state) == [(1, 10, 14, False, "a"), (1, 15, 19, False, "c"), (1, 20, INF, True, "b")]
    assert kinds(muts) == [("update", 10), ("insert", 15)], "version 20 must not be rewritten"


@pytest.mark.parametrize("order", [[10, 20, 15], [15, 20, 10], [20, 15, 10], [20, 10, 15]])
def test_history_out_of_order_within_one_batch(order: list[int]) -> None:
    """Versions planned earlier in a batch are seen by later arrivals: any order gives the same three rows, each
    written once (an INSERT never followed by an UPDATE of the same row)."""
    payload = {10: "a", 15: "c", 20: "b"}
    state, muts = run(HIST, [], [r(t, payload[t]) for t in order])
    assert hist_view(state) == [(1, 10, 14, False, "a"), (1, 15, 19, False, "c"), (1, 20, INF, True, "b")]
    assert sorted(kinds(muts)) == [("insert", 10), ("insert", 15), ("insert", 20)]


def test_history_earlier_than_all_leaves_stored_rows_untouched() -> None:
    """Case 2: an arrival before every stored version is inserted up to the first one, not current."""
    state, _ = run(HIST, [], [r(20, "b")])
    state, muts = run(HIST, state, [r(10, "a")])
    assert hist_view(state) == [(1, 10, 19, False, "a"), (1, 20, INF, True, "b")]
    assert kinds(muts) == [("insert", 10)]


def test_history_same_timestamp_correction_updates_in_place() -> None:
    """Case 1 with real epoch-millisecond values (distinct int objects, unlike small cached ints): nrtkudu compared
    boxed Longs by reference and dropped the correction."""
    t1, t2 = int("1700000000000"), int("1700000005000")
    state, _ = run(HIST, [], [r(t1, "a"), r(t2, "b")])
    state, muts = run(HIST, state, [r(int("1700000000000"), "a2")], now=9)
    assert [m.kind for m in muts] == [MutationKind.UPDATE]
    assert dict(muts[0].row) | {} == {
        "id": 1,
        "ts": t1,
        "v": "a2",
        "effective_to": t2 - 1,
        "is_current": False,
        "last_updated": 9,
    }
    assert hist_view(state) == [(1, t1, t2 - 1, False, "a2"), (1, t2, INF, True, "b")]


def test_history_same_timestamp_correction_within_a_batch_keeps_the_later_arrival() -> None:
    state, muts = run(HIST, [], [r(10, "a"), r(10, "a2")])
    assert hist_view(state) == [(1, 10, INF, True, "a2")]
    assert kinds(muts) == [("insert", 10)]


def test_history_identical_later_version_adds_nothing() -> None:
    """nrtkudu's case 4 lacked the value check and added a row; here neither after-all nor in-between does."""
    state, _ = run(HIST, [], [r(10, "a"), r(30, "b")])
    _, muts = run(HIST, state, [r(40, "b")])
    assert muts == []
    _, muts = run(HIST, state, [r(20, "a")])
    assert muts == [], "an in-between version equal to the version in force changes nothing"


def test_history_identical_later_version_caveat_is_documented() -> None:
    """Documented limit of the default (event time not a value column): the dropped identical version leaves no
    trace, so a version arriving afterwards that happened before it stays current."""
    state = run_batches(HIST, [[r(10, "a")], [r(20, "a")], [r(15, "b")]])
    assert hist_view(state) == [(1, 10, 14, False, "a"), (1, 15, INF, True, "b")]
    keep_all = HistoryPlanner(["id"], event_time="ts", values=["v", "ts"])
    state = run_batches(keep_all, [[r(10, "a")], [r(20, "a")], [r(15, "b")]])
    assert hist_view(state) == [(1, 10, 14, False, "a"), (1, 15, 19, False, "b"), (1, 20, INF, True, "a")]


def test_history_repair_reopens_a_version_closed_by_a_half_applied_flush() -> None:
    """Kudu refused the INSERT of version 20 but applied the UPDATE closing version 10: the key has no current
    version. Repairing with nothing left to write reopens 10; a consistent key needs no repair."""
    state, muts = run(HIST, [], [r(10, "a")])
    _, muts = run(HIST, state, [r(20, "b")])
    closing = [m for m in muts if m.kind is MutationKind.UPDATE]
    half = apply(state, closing, HIST.primary_key)
    assert hist_view(half) == [(1, 10, 19, False, "a")], "the broken state: no current version"
    assert HIST.plan([], half) == [], "plan() alone leaves it broken"
    repaired = apply(half, HIST.repair((1,), half, now=0), HIST.primary_key)
    assert hist_view(repaired) == [(1, 10, INF, True, "a")]
    assert HIST.repair((1,), repaired, now=0) == []


def test_history_repair_keeps_the_versions_that_were_written() -> None:
    """Versions 10 and 20 arrive in one batch and 20 is refused: the repair of the half-written key (10 stored,
    closed at 19) makes 10 the current version."""
    _, muts = run(HIST, [], [r(10, "a"), r(20, "b")])
    half = apply([], [m for m in muts if m.row["ts"] == 10], HIST.primary_key)
    assert hist_view(half) == [(1, 10, 19, False, "a")]
    repaired = apply(half, HIST.repair((1,), half, now=0), HIST.primary_key)
    assert hist_view(repaired) == [(1, 10, INF, True, "a")]


def test_only_history_repairs() -> None:
    """``latest``/``upsert``/``append`` write one row per key, so a refusal leaves nothing half-written."""
    assert HIST.repairs and not any(p.repairs for p in (LATEST, UpsertPlanner(["id"]), AppendPlanner(["id"])))
    assert LATEST.repair((1,), [r(10, "a")]) == []


def test_history_replayed_batches_write_nothing() -> None:
    """Planning a batch again against the state it produced yields no mutation, even with another batch time."""
    batches = [[r(10, "a"), r(20, "b")], [r(15, "c"), r(20, "b2"), r(5, "z")], [r(30, None), r(25, "d")]]
    state: list[dict[str, Any]] = []
    for i, batch in enumerate(batches):
        state, muts = run(HIST, state, batch, now=i)
        assert muts
        assert plan_batch(HIST, batch, state, now=100 + i) == []


def test_history_nulls_in_value_columns() -> None:
    """NULL is a value: NULL -> 'a' is a change, NULL -> NULL is not; every column of a row is kept whatever its
    position (nrtkudu stopped reading a row at its first NULL)."""
    state, _ = run(HIST, [], [r(10, None, w=None, x=3)])
    assert state[0]["v"] is None and state[0]["w"] is None and state[0]["x"] == 3
    _, muts = run(HIST, state, [r(20, None, w=None, x=3)])
    assert muts == []
    state, muts = run(HIST, state, [r(20, "a", w=None, x=3)])
    assert kinds(muts) == [("update", 10), ("insert", 20)]
    state, muts = run(HIST, state, [r(20, "a", w=None, x=None)])
    assert kinds(muts) == [("update", 20)] and state[1]["x"] is None


def test_history_null_event_time_or_key_is_a_bad_record_naming_the_key() -> None:
    with pytest.raises(BadRecordError, match=r"NULL in event-time column 'ts' \(id=7\)"):
        plan_batch(HIST, [r(None, "a", id=7)], [], now=0)
    with pytest.raises(BadRecordError, match="NULL in a key column"):
        plan_batch(HIST, [r(10, "a", id=None)], [], now=0)


def test_history_custom_columns_timestamps_and_flags() -> None:
    """Separate effective-from column, 'Y'/'N' flag, timestamps: preceding time is 1 microsecond, far future is
    9999-12-31 in the event time's zone."""
    p = HistoryPlanner(
        ["k1", "k2"],
        event_time="at",
        effective_from="valid_from",
        effective_to="valid_to",
        current_flag="cur",
        current_true="Y",
        current_false="N",
        last_updated="touched",
    )
    assert p.primary_key == ("k1", "k2", "valid_from")
    utc = dt.timezone.utc
    t1, t2 = dt.datetime(2024, 1, 1, tzinfo=utc), dt.datetime(2024, 1, 2, tzinfo=utc)
    rows = [{"k1": "a", "k2": b"\x00", "at": t2, "p": 2}, {"k1": "a", "k2": b"\x00", "at": t1, "p": 1}]
    state, _ = run(p, [], rows, now="batch-1")
    assert [(s["valid_from"], s["valid_to"], s["cur"], s["p"], s["touched"]) for s in state] == [
        (t1, t2 - dt.timedelta(microseconds=1), "N", 1, "batch-1"),
        (t2, dt.datetime(9999, 12, 31, tzinfo=utc), "Y", 2, "batch-1"),
    ]
    assert plan_batch(p, rows, state, now="batch-2") == []


def test_history_dates_and_optional_maintained_columns() -> None:
    """Date event times step by one day; effective-to, flag and last-updated can each be switched off."""
    p = HistoryPlanner(["id"], event_time="d", effective_to="until", current_flag=None, last_updated=None)
    state, _ = run(p, [], [{"id": 1, "d": dt.date(2024, 3, 1), "v": 1}, {"id": 1, "d": dt.date(2024, 2, 1), "v": 0}])
    assert state == [
        {"id": 1, "d": dt.date(2024, 2, 1), "v": 0, "until": dt.date(2024, 2, 29)},
        {"id": 1, "d": dt.date(2024, 3, 1), "v": 1, "until": dt.date(9999, 12, 31)},
    ]


def test_history_far_future_configurable_and_type_checked() -> None:
    far = 253402214400000  # 9999-12-31 in epoch milliseconds, nrtkudu's value
    p = HistoryPlanner(["id"], event_time="ts", far_future=far)
    state, _ = run(p, [], [r(10, "a")])
    assert state[0]["effective_to"] == far
    bad = HistoryPlanner(["id"], event_time="ts", far_future=dt.date(9999, 12, 31))
    with pytest.raises(OptionError, match=r"planner\.far_future"):
        plan_batch(bad, [r(10, "a")], [], now=0)


def test_history_explicit_value_columns_ignore_other_columns() -> None:
    p = HistoryPlanner(["id"], event_time="ts", values=["v"])
    state, _ = run(p, [], [r(10, "a", note="x")])
    assert run(p, state, [r(20, "a", note="y")])[1] == []
    assert run(p, state, [r(10, "a", note="y")])[1] == []


def _expected_history(versions: dict[int, str], key: int) -> list[tuple[Any, ...]]:
    """The state a history table must hold for these versions, computed without the planner."""
    times = sorted(versions)
    return [
        (key, t, times[i + 1] - 1 if i + 1 < len(times) else INF, i + 1 == len(times), versions[t])
        for i, t in enumerate(times)
    ]


def _random_batches(rng: random.Random, rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    rows = rows[:]
    rng.shuffle(rows)
    cuts = sorted(rng.sample(range(1, len(rows)), rng.randint(0, min(4, len(rows) - 1)))) if len(rows) > 1 else []
    return [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)], strict=True)]


def test_history_state_is_independent_of_arrival_order_and_batch_boundaries() -> None:
    """Property (fixed seed, 300 trials): versions of 1-3 keys with distinct payloads, plus replayed duplicates,
    shuffled and cut into random batches, always end in the state computed independently from the version set."""
    rng = random.Random(20240611)
    for _ in range(300):
        rows: list[dict[str, Any]] = []
        expected: list[tuple[Any, ...]] = []
        for key in range(1, rng.randint(1, 3) + 1):
            times = rng.sample(range(0, 60), rng.randint(1, 8))
            versions = {t: f"{key}-{t}" for t in times}
            rows += [r(t, v, id=key) for t, v in versions.items()]
            rows += [r(t, versions[t], id=key) for t in rng.choices(times, k=rng.randint(0, 3))]
            expected += _expected_history(versions, key)
        batches = _random_batches(rng, rows)
        state = run_batches(HIST, batches)
        assert hist_view(state) == expected, batches
        for batch in batches:
            assert plan_batch(HIST, batch, state, now=1) == [], "replay must write nothing"


def test_history_with_event_time_as_value_is_order_independent_for_repeated_payloads() -> None:
    """Property (fixed seed, 200 trials): with the event time listed among the values, payloads that repeat
    (A, B, A...) still give one state whatever the order and batch cuts."""
    p = HistoryPlanner(["id"], event_time="ts", values=["v", "ts"])
    rng = random.Random(7)
    for _ in range(200):
        times = rng.sample(range(0, 40), rng.randint(1, 8))
        versions = {t: rng.choice("AB") for t in times}
        batches = _random_batches(rng, [r(t, v) for t, v in versions.items()])
        assert hist_view(run_batches(p, batches)) == _expected_history(versions, 1), batches


# ---------------------------------------------------------------- latest (Type I)


def test_latest_10_then_20_then_late_15_keeps_20() -> None:
    state, muts = run(LATEST, [], [r(10, "a")], now=1)
    assert kinds(muts) == [("insert", 10)]
    state, muts = run(LATEST, state, [r(20, "b")], now=2)
    assert kinds(muts) == [("update", 20)]
    state, muts = run(LATEST, state, [r(15, "c")], now=3)
    assert muts == [], "a stale arrival is ignored"
    assert state == [{"id": 1, "ts": 20, "v": "b", "last_updated": 2}]


def test_latest_newest_arrival_of_a_batch_wins_in_any_order() -> None:
    for order in ([10, 20, 15], [20, 15, 10], [15, 10, 20]):
        state, muts = run(LATEST, [], [r(t, f"v{t}") for t in order])
        assert len(muts) == 1 and state == [{"id": 1, "ts": 20, "v": "v20", "last_updated": 0}]


def test_latest_identical_values_write_nothing_and_replays_are_no_ops() -> None:
    batch = [r(10, "a", id=1), r(12, "b", id=2), r(11, None, id=1)]
    state, _ = run(LATEST, [], batch)
    assert plan_batch(LATEST, batch, state, now=99) == []
    assert plan_batch(LATEST, [r(11, None, id=1)], state, now=99) == []


def test_latest_same_timestamp_correction_updates() -> None:
    t = int("1700000000000")
    state, _ = run(LATEST, [], [r(t, "a")])
    state, muts = run(LATEST, state, [r(int("1700000000000"), "a2")], now=5)
    assert [m.kind for m in muts] == [MutationKind.UPDATE]
    assert state == [{"id": 1, "ts": t, "v": "a2", "last_updated": 5}]


def test_latest_newer_identical_payload_moves_event_time_by_default() -> None:
    """Default: the event time is a value, so a later identical payload moves it forward and a version that
    happened in between stays stale; with values=['v'] (the nrtkudu rule) it writes nothing."""
    state = run_batches(LATEST, [[r(10, "a")], [r(20, "a")], [r(15, "b")]])
    assert state == [{"id": 1, "ts": 20, "v": "a", "last_updated": 0}]
    p = LatestPlanner(["id"], event_time="ts", values=["v"])
    state, _ = run(p, [], [r(10, "a")])
    assert plan_batch(p, [r(20, "a")], state, now=0) == []


def test_latest_nulls_and_missing_batch_time() -> None:
    state, _ = run(LATEST, [], [r(10, None, w=1)])
    state, muts = run(LATEST, state, [r(11, "x", w=None)])
    assert state == [{"id": 1, "ts": 11, "v": "x", "w": None, "last_updated": 0}] and len(muts) == 1
    stored_null_time = [{"id": 1, "ts": None, "v": "old", "last_updated": 0}]
    assert kinds(plan_batch(LATEST, [r(1, "new")], stored_null_time, now=0)) == [("update", 1)]
    with pytest.raises(BadRecordError, match="NULL in event-time column"):
        plan_batch(LATEST, [r(None, "a")], [], now=0)
    with pytest.raises(OptionError, match=r"planner\.last_updated"):
        plan_batch(LATEST, [r(10, "a")], [])


def test_latest_state_is_independent_of_arrival_order() -> None:
    """Property (fixed seed, 300 trials): the stored row is the version with the highest event time."""
    rng = random.Random(99)
    for _ in range(300):
        times = rng.sample(range(100), rng.randint(1, 8))
        rows = [r(t, rng.choice(["A", "B", None])) for t in times]
        newest = max(rows, key=lambda x: x["ts"])
        batches = _random_batches(rng, rows + rng.choices(rows, k=2))
        assert run_batches(LATEST, batches) == [newest | {"last_updated": 0}], batches


# ---------------------------------------------------------------- append and upsert


def test_append_inserts_and_replays_write_nothing() -> None:
    p = AppendPlanner(["src_partition", "src_offset"])
    batch = [{"src_partition": 0, "src_offset": o, "v": None if o == 1 else o} for o in range(3)]
    state, muts = run(p, [], batch)
    assert [m.kind for m in muts] == [MutationKind.INSERT] * 3 and len(state) == 3
    assert plan_batch(p, batch, state) == []
    assert kinds(plan_batch(p, batch + batch, [])) == [("insert", None)] * 3, "duplicates within a batch"


def test_append_different_value_under_a_stored_key_is_an_error_naming_the_key() -> None:
    p = AppendPlanner(["src_partition", "src_offset"])
    stored = [{"src_partition": 0, "src_offset": 5, "v": "a"}]
    with pytest.raises(KeyConflictError, match=r"src_partition=0, src_offset=5 is stored with other values"):
        plan_batch(p, [{"src_partition": 0, "src_offset": 5, "v": "b"}], stored)
    with pytest.raises(KeyConflictError, match="two different rows in one batch"):
        plan_batch(p, [{"src_partition": 0, "src_offset": 6, "v": 1}, {"src_partition": 0, "src_offset": 6}], [])


def test_upsert_last_arrival_wins_and_existing_rows_are_not_needed() -> None:
    p = UpsertPlanner(["id"], last_updated="lu")
    assert p.needs_existing is False
    batch = [r(20, "b"), r(10, "a"), r(5, "x", id=2)]
    muts = plan_batch(p, batch, [{"id": 1, "ts": 99, "v": "stored"}], now=3)
    assert muts == [
        Mutation("upsert", {"id": 1, "ts": 10, "v": "a", "lu": 3}),
        Mutation("upsert", {"id": 2, "ts": 5, "v": "x", "lu": 3}),
    ]
    state = apply([], muts, p.primary_key)
    assert apply(state, plan_batch(p, batch, state, now=3), p.primary_key) == state


# ---------------------------------------------------------------- batch planning, apply, options


def test_plan_batch_groups_by_key_and_ignores_stored_rows_of_other_keys() -> None:
    stored = [{"id": 3, "ts": 1, "v": "other", "last_updated": 0}, {"id": 2, "ts": 50, "v": "s", "last_updated": 0}]
    muts = plan_batch(LATEST, [r(10, "a", id=2), r(10, "b", id=bytearray(b"k")), r(60, "c", id=2)], stored, now=1)
    assert [(m.kind.value, m.row["id"], m.row["v"]) for m in muts] == [("update", 2, "c"), ("insert", b"k", "b")]


def test_planner_plan_refuses_rows_of_two_keys() -> None:
    with pytest.raises(BadRecordError, match="one key"):
        HIST.plan([r(1, "a", id=1), r(1, "a", id=2)], [], now=0)


def test_apply_follows_kudu_rules() -> None:
    with pytest.raises(KeyConflictError, match="INSERT of an existing row"):
        apply([{"k": 1}], [Mutation("insert", {"k": 1})], ["k"])
    with pytest.raises(KeyConflictError, match="UPDATE of a missing row"):
        apply([], [Mutation("update", {"k": 1})], ["k"])
    state = apply(
        [{"k": 1, "a": 1, "b": 2}], [Mutation("upsert", {"k": 1, "a": None}), Mutation("upsert", {"k": 0})], ["k"]
    )
    assert state == [{"k": 0}, {"k": 1, "a": None, "b": 2}]
    assert apply(state, [Mutation("delete", {"k": 0})], ["k"]) == [{"k": 1, "a": None, "b": 2}]


def test_planner_from_options() -> None:
    p = planner_from_options(
        {
            "planner": "history",
            "planner.key": "tenant, id",
            "planner.event_time": "ts",
            "planner.effective_from": "from_ts",
            "planner.current_flag": "cur",
            "planner.current_flag.true": "Y",
            "planner.current_flag.false": "N",
            "planner.last_updated": "",
            "planner.far_future": "9999-12-31T00:00:00",
            "table": "ignored here",
        }
    )
    assert isinstance(p, HistoryPlanner)
    assert p.primary_key == ("tenant", "id", "from_ts")
    assert (p.current_true, p.current_false, p.last_updated) == ("Y", "N", None)
    assert p.far_future == dt.datetime(9999, 12, 31, tzinfo=dt.timezone.utc), "a timestamp without zone is UTC"
    assert planner_from_options({"planner.key": "id"}).name == "upsert"
    flags = planner_from_options({"planner": "history", "planner.key": "id", "planner.current_flag.true": "TRUE"})
    assert flags.current_true is True  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"planner": "scd2", "planner.key": "id"}, "planner"),
        ({"planner": "latest"}, "planner.key"),
        ({"planner": "latest", "planner.key": "id", "planner.efective_to": "x"}, "planner.efective_to"),
        ({"planner": "history", "planner.key": "id", "planner.far_future": "soon"}, "planner.far_future"),
        ({"planner": "history", "planner.key": "id,effective_to"}, "planner.key"),
    ],
)
def test_planner_from_options_errors_name_the_option(options: dict[str, str], option: str) -> None:
    with pytest.raises(OptionError, match=re.escape(f"Invalid option '{option}'")):
        planner_from_options(options)


def test_latest_same_timestamp_within_a_batch_later_arrival_wins() -> None:
    state, muts = run(LATEST, [], [r(10, "a"), r(10, "a2"), r(9, "old")])
    assert len(muts) == 1 and state == [{"id": 1, "ts": 10, "v": "a2", "last_updated": 0}]


@pytest.mark.parametrize("planner", [HIST, LATEST], ids=["history", "latest"])
def test_last_updated_comes_from_the_caller_and_is_not_a_value(planner: Planner) -> None:
    """An arriving last_updated is overwritten by the batch time and never counts as a change; NaN equals NaN."""
    batch = [r(10, float("nan"), last_updated="from the source")]
    state, _ = run(planner, [], batch, now=1)
    assert state[0]["last_updated"] == 1
    assert plan_batch(planner, [r(10, float("nan"), last_updated="changed at the source")], state, now=2) == []


# ---------------------------------------------------------------- issue 19: history in canonical merged form


MERGED = [(1, 10, 29, False, "A"), (1, 30, INF, True, "B")]
VERSIONS_10A_20A_30B = [r(10, "A"), r(20, "A"), r(30, "B")]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_history_equal_consecutive_versions_merge_in_any_order_within_a_batch(order: tuple[int, ...]) -> None:
    """10:A, 20:A, 30:B in one batch, any order: 10..29 A, 30.. B (20:A arriving first gave a row of its own)."""
    state, muts = run(HIST, [], [VERSIONS_10A_20A_30B[i] for i in order])
    assert hist_view(state) == MERGED
    assert all(m.kind is MutationKind.INSERT for m in muts)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
@pytest.mark.parametrize("cuts", [(1,), (2,), (1, 2)], ids=str)
def test_history_equal_consecutive_versions_merge_in_any_order_across_batches(
    order: tuple[int, ...], cuts: tuple[int, ...]
) -> None:
    """The same versions cut into two or three batches: the same two rows; replaying any batch writes nothing."""
    rows = [VERSIONS_10A_20A_30B[i] for i in order]
    batches = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)], strict=True)]
    state = run_batches(HIST, batches)
    assert hist_view(state) == MERGED, batches
    for batch in batches:
        assert plan_batch(HIST, batch, state, now=1) == []


def test_history_late_version_equal_to_the_next_one_takes_its_place() -> None:
    """20:A stored, then 10:A: the stored row from 20 is deleted and 10 holds A until 20's effective-to (the one
    row key 20 had is not left beside it)."""
    state, _ = run(HIST, [], [r(20, "A"), r(40, "B")])
    state, muts = run(HIST, state, [r(10, "A")])
    assert hist_view(state) == [(1, 10, 39, False, "A"), (1, 40, INF, True, "B")]
    assert sorted(kinds(muts)) == [("delete", 20), ("insert", 10)]
    assert [dict(m.row) for m in muts if m.kind is MutationKind.DELETE] == [{"id": 1, "ts": 20}]


def test_history_correction_equal_to_a_neighbour_merges() -> None:
    """A same-time correction that makes a version equal to the one before it merges the two."""
    state, _ = run(HIST, [], [r(10, "A"), r(20, "B"), r(30, "C")])
    state, muts = run(HIST, state, [r(20, "A")])
    assert hist_view(state) == [(1, 10, 29, False, "A"), (1, 30, INF, True, "C")]
    assert sorted(kinds(muts)) == [("delete", 20), ("update", 10)]


def test_history_stored_versions_no_arrival_changes_are_never_merged() -> None:
    """A key stored with two consecutive equal versions (written with the event time in planner.values) keeps
    them: a batch adding a later version only closes the last one, and the repair deletes nothing either."""
    stored = [
        {"id": 1, "ts": 10, "v": "A", "effective_to": 19, "is_current": False, "last_updated": 0},
        {"id": 1, "ts": 20, "v": "A", "effective_to": INF, "is_current": True, "last_updated": 0},
    ]
    state, muts = run(HIST, stored, [r(30, "B")])
    assert hist_view(state) == [(1, 10, 19, False, "A"), (1, 20, 29, False, "A"), (1, 30, INF, True, "B")]
    assert sorted(kinds(muts)) == [("insert", 30), ("update", 20)]
    assert HIST.repair((1,), stored, now=0) == []


def _merged_history(versions: dict[int, str], key: int) -> list[tuple[Any, ...]]:
    """The canonical merged form of a key's versions, computed without the planner: a version equal to the one
    before it in time is part of that one."""
    starts = [t for i, t in enumerate(sorted(versions)) if i == 0 or versions[t] != versions[sorted(versions)[i - 1]]]
    return [
        (key, t, starts[i + 1] - 1 if i + 1 < len(starts) else INF, i + 1 == len(starts), versions[t])
        for i, t in enumerate(starts)
    ]


def test_history_with_repeated_values_is_independent_of_arrival_order_and_batch_boundaries() -> None:
    """Property (fixed seed, 400 trials): versions of 1-3 keys whose values run in blocks (A A B C C: a value never
    comes back after another one), plus replayed duplicates, shuffled and cut into random batches, always end in the
    merged history of the version set; replaying any batch writes nothing."""
    rng = random.Random(19)
    for _ in range(400):
        rows: list[dict[str, Any]] = []
        expected: list[tuple[Any, ...]] = []
        for key in range(1, rng.randint(1, 3) + 1):
            times = sorted(rng.sample(range(0, 60), rng.randint(1, 8)))
            versions: dict[int, str] = {}
            value = 0
            for t in times:
                value += rng.random() < 0.4 and bool(versions)
                versions[t] = f"{key}-{value}"
            rows += [r(t, v, id=key) for t, v in versions.items()]
            rows += [r(t, versions[t], id=key) for t in rng.choices(times, k=rng.randint(0, 3))]
            expected += _merged_history(versions, key)
        batches = _random_batches(rng, rows)
        state = run_batches(HIST, batches)
        assert hist_view(state) == expected, batches
        for batch in batches:
            assert plan_batch(HIST, batch, state, now=1) == [], "replay must write nothing"


def test_history_a_value_coming_back_after_a_merged_version_is_the_documented_limit() -> None:
    """Merging forgets the merged version's time: 10:A and 20:A stored as one row from 10, then 15:B gives
    10..14 A, 15.. B, where the order 10, 15, 20 keeps 20:A. The README states this; listing the event time in
    planner.values keeps every version instead."""
    assert hist_view(run_batches(HIST, [[r(10, "A")], [r(20, "A")], [r(15, "B")]])) == [
        (1, 10, 14, False, "A"),
        (1, 15, INF, True, "B"),
    ]
    assert hist_view(run_batches(HIST, [[r(10, "A")], [r(15, "B")], [r(20, "A")]])) == [
        (1, 10, 14, False, "A"),
        (1, 15, 19, False, "B"),
        (1, 20, INF, True, "A"),
    ]


# ---------------------------------------------------------------- issue 19: rows refused on their own


@pytest.mark.parametrize("planner", [HIST, LATEST], ids=["history", "latest"])
def test_check_row_names_a_row_that_can_never_be_planned(planner: Planner) -> None:
    """The sink diverts such a row alone (its key's other rows are planned): a NULL, missing or non-time event
    time; a good row passes."""
    planner.check_row((7,), r(10, "a", id=7))
    with pytest.raises(BadRecordError, match=r"NULL in event-time column 'ts' \(id=7\)"):
        planner.check_row((7,), r(None, "a", id=7))
    with pytest.raises(BadRecordError, match="has no column 'ts'"):
        planner.check_row((7,), {"id": 7, "v": "a"})
    with pytest.raises(BadRecordError, match="is not an integer, date or timestamp"):
        planner.check_row((7,), r("noon", "a", id=7))
    UpsertPlanner(["id"]).check_row((7,), {"id": 7})


def test_history_with_far_future_returns_a_copy() -> None:
    """The sink fits the far-future sentinel to the effective-to column (2^31-1 for INT32) without changing the
    planner it was given."""
    narrow = HIST.with_far_future(2**31 - 1)
    assert narrow is not HIST and HIST.far_future is None
    assert hist_view(run(narrow, [], [r(10, "a")])[0]) == [(1, 10, 2**31 - 1, True, "a")]
