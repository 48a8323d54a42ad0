"""Conformance: the queue producer API (exactly-once writes into a queue).

Sources: ``queues.md`` ("Creating a producer", "Writing data": a new session has epoch 0 and sequence
number -1, an existing one gets epoch + 1; rows carry ``$sequence_number``),
``yt/yt/tests/integration/queues/test_producer.py`` (``test_basic``, ``test_multiple_sessions``,
``test_push_queue_producer_with_start_sequence_number`` (epoch ahead -> InvalidEpoch, behind ->
ZombieEpoch), ``test_push_queue_producer_with_explicit_sequence_numbers`` (gaps allowed, already
written prefix skipped), ``test_push_queue_producer_twice_in_transaction``),
``yt/yt/client/queue_client/public.h`` (3101 InvalidEpoch, 3102 ZombieEpoch, 3103
InvalidRowSequenceNumbers), ``yt/yt/ytlib/queue_client/helpers.cpp`` (``ValidatePushQueueProducerRows``:
strictly increasing, non-negative sequence numbers; rows at or below the stored one are skipped).
``YtClient.push_queue_producer`` has no ``sequence_number`` option, so every row carries
``$sequence_number``.
"""

from __future__ import annotations

import pytest
from conformance import (
    INVALID_EPOCH,
    INVALID_ROW_SEQUENCE_NUMBERS,
    ZOMBIE_EPOCH,
    create_producer,
    create_queue,
    select,
)
from yt.wrapper.errors import YtResponseError


@pytest.fixture
def qp(yt, yt_root) -> tuple[str, str]:
    """A one-tablet queue and a producer."""
    return create_queue(yt, f"{yt_root}/q"), create_producer(yt, f"{yt_root}/p")


def _session_row(yt, producer: str, session_id: str) -> dict | None:
    rows = select(yt, f'* from [{producer}] where [session_id] = "{session_id}"')
    assert len(rows) <= 1
    return rows[0] if rows else None


def _queue_data(yt, queue: str) -> list[str]:
    rows = select(yt, f"* from [{queue}]")
    assert all("$sequence_number" not in r for r in rows), rows
    return [r["data"] for r in sorted(rows, key=lambda r: (r["$tablet_index"], r["$row_index"]))]


def _push(yt, qp, session_id: str, epoch: int, rows: list[dict]):
    queue, producer = qp
    return yt.push_queue_producer(producer, queue, session_id, epoch, rows)


def test_new_session_starts_at_epoch_0_sequence_minus_1(yt, qp):
    """``create_queue_producer_session`` for a new id returns epoch 0, sequence number -1 and the user meta,
    and stores the session row in the producer table."""
    queue, producer = qp
    meta = {"owner": "test", "n": [1, 2]}
    session = yt.create_queue_producer_session(producer, queue, "s1", user_meta=meta)
    assert (session["epoch"], session["sequence_number"], session["user_meta"]) == (0, -1, meta)
    row = _session_row(yt, producer, "s1")
    assert row is not None
    assert (row["queue_path"], row["epoch"], row["sequence_number"], row["user_meta"]) == (queue, 0, -1, meta)


def test_existing_session_gets_next_epoch(yt, qp):
    """Re-creating an existing session increments the epoch and keeps sequence number and user meta; other
    session ids are independent; after ``remove_queue_producer_session`` epochs restart from 0."""
    queue, producer = qp
    yt.create_queue_producer_session(producer, queue, "s1", user_meta="m")
    assert yt.create_queue_producer_session(producer, queue, "s1")["epoch"] == 1
    session = yt.create_queue_producer_session(producer, queue, "s1")
    assert (session["epoch"], session["sequence_number"], session["user_meta"]) == (2, -1, "m")
    assert yt.create_queue_producer_session(producer, queue, "s2")["epoch"] == 0

    yt.remove_queue_producer_session(producer, queue, "s1")
    assert _session_row(yt, producer, "s1") is None
    assert _session_row(yt, producer, "s2") is not None
    assert yt.create_queue_producer_session(producer, queue, "s1")["epoch"] == 0


def test_push_writes_rows_and_advances_sequence(yt, qp):
    """``push_queue_producer`` appends the rows (without ``$sequence_number``) to the queue and stores the
    last sequence number; gaps between sequence numbers are allowed."""
    queue, producer = qp
    yt.create_queue_producer_session(producer, queue, "s")
    result = _push(yt, qp, "s", 0, [{"data": "a", "$sequence_number": 0}, {"data": "b", "$sequence_number": 1}])
    assert (result["last_sequence_number"], result["skipped_row_count"]) == (1, 0)
    result = _push(yt, qp, "s", 0, [{"data": "c", "$sequence_number": 6}, {"data": "d", "$sequence_number": 10}])
    assert (result["last_sequence_number"], result["skipped_row_count"]) == (10, 0)
    assert _queue_data(yt, queue) == ["a", "b", "c", "d"]
    row = _session_row(yt, producer, "s")
    assert (row["sequence_number"], row["epoch"]) == (10, 0)


def test_push_skips_already_written_sequence_numbers(yt, qp):
    """Rows with a sequence number at or below the stored one are skipped (counted in
    ``skipped_row_count``); the rest are written; a fully duplicate batch writes nothing."""
    queue, producer = qp
    yt.create_queue_producer_session(producer, queue, "s")
    _push(yt, qp, "s", 0, [{"data": f"r{i}", "$sequence_number": i} for i in range(3)])

    result = _push(yt, qp, "s", 0, [{"data": f"r{i}", "$sequence_number": i} for i in range(1, 5)])
    assert (result["last_sequence_number"], result["skipped_row_count"]) == (4, 2)
    assert _queue_data(yt, queue) == [f"r{i}" for i in range(5)]

    result = _push(yt, qp, "s", 0, [{"data": f"r{i}", "$sequence_number": i} for i in range(2, 5)])
    assert result["skipped_row_count"] == 3
    assert _queue_data(yt, queue) == [f"r{i}" for i in range(5)]
    assert _session_row(yt, producer, "s")["sequence_number"] == 4


def test_push_after_new_epoch_skips_and_continues(yt, qp):
    """A restarted producer (new epoch) resends from its last acknowledged row: duplicates are skipped."""
    queue, producer = qp
    yt.create_queue_producer_session(producer, queue, "s")
    _push(yt, qp, "s", 0, [{"data": "row1", "$sequence_number": 0}])
    session = yt.create_queue_producer_session(producer, queue, "s")
    assert (session["epoch"], session["sequence_number"]) == (1, 0)
    result = _push(yt, qp, "s", 1, [{"data": "row1", "$sequence_number": 0}, {"data": "row2", "$sequence_number": 1}])
    assert (result["last_sequence_number"], result["skipped_row_count"]) == (1, 1)
    assert _queue_data(yt, queue) == ["row1", "row2"]
    row = _session_row(yt, producer, "s")
    assert (row["sequence_number"], row["epoch"]) == (1, 1)


def test_push_with_stale_epoch_is_zombie_3102(yt, qp):
    """Pushing with an epoch older than the session's fails with 3102 (ZombieEpoch); nothing is written."""
    queue, producer = qp
    yt.create_queue_producer_session(producer, queue, "s")
    yt.create_queue_producer_session(producer, queue, "s")  # epoch 1
    with pytest.raises(YtResponseError) as info:
        _push(yt, qp, "s", 0, [{"data": "zombie", "$sequence_number": 0}])
    assert info.value.contains_code(ZOMBIE_EPOCH), info.value
    assert _queue_data(yt, queue) == []


def test_push_with_future_epoch_is_invalid_3101(yt, qp):
    """Pushing with an epoch newer than the session's fails with 3101 (InvalidEpoch); nothing is written."""
    queue, producer = qp
    yt.create_queue_producer_session(producer, queue, "s")
    with pytest.raises(YtResponseError) as info:
        _push(yt, qp, "s", 1, [{"data": "x", "$sequence_number": 0}])
    assert info.value.contains_code(INVALID_EPOCH), info.value
    assert _queue_data(yt, queue) == []


@pytest.mark.parametrize(
    "rows",
    [
        [{"data": "a", "$sequence_number": 3}, {"data": "b", "$sequence_number": 3}],
        [{"data": "a", "$sequence_number": 5}, {"data": "b", "$sequence_number": 4}],
        [{"data": "a", "$sequence_number": -1}],
        [{"data": "a"}],
        [{"data": "a", "$sequence_number": 0}, {"data": "b"}],
    ],
    ids=["equal", "decreasing", "negative", "missing", "missing-after-first"],
)
def test_push_invalid_sequence_numbers_3103(yt, qp, rows):
    """Sequence numbers in a batch must be present, non-negative and strictly increasing, otherwise the
    push fails with 3103 (InvalidRowSequenceNumbers) and writes nothing."""
    queue, producer = qp
    yt.create_queue_producer_session(producer, queue, "s")
    with pytest.raises(YtResponseError) as info:
        _push(yt, qp, "s", 0, rows)
    assert info.value.contains_code(INVALID_ROW_SEQUENCE_NUMBERS), info.value
    assert _queue_data(yt, queue) == []
    assert _session_row(yt, producer, "s")["sequence_number"] == -1


def test_push_in_tablet_transaction(yt, yt2, qp):
    """Inside a tablet transaction the pushed rows and the session update become visible only at commit."""
    queue, producer = qp
    yt.create_queue_producer_session(producer, queue, "s")
    with yt.Transaction(type="tablet"):
        result = _push(yt, qp, "s", 0, [{"data": "row1", "$sequence_number": 0}])
        assert result["last_sequence_number"] == 0
        assert _queue_data(yt2, queue) == []
        assert _session_row(yt2, producer, "s")["sequence_number"] == -1
    assert _queue_data(yt2, queue) == ["row1"]
    assert _session_row(yt2, producer, "s")["sequence_number"] == 0


def test_push_to_explicit_tablets(yt, yt_root):
    """Rows may carry ``$tablet_index`` next to ``$sequence_number`` (test_producer.py
    ``test_several_tablets``)."""
    queue = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    producer = create_producer(yt, f"{yt_root}/p")
    yt.create_queue_producer_session(producer, queue, "s")
    result = yt.push_queue_producer(
        producer,
        queue,
        "s",
        0,
        [
            {"data": "row1", "$tablet_index": 0, "$sequence_number": 0},
            {"data": "row2", "$tablet_index": 1, "$sequence_number": 2},
        ],
    )
    assert (result["last_sequence_number"], result["skipped_row_count"]) == (2, 0)
    assert [r["data"] for r in select(yt, f"* from [{queue}] where [$tablet_index] = 0")] == ["row1"]
    assert [r["data"] for r in select(yt, f"* from [{queue}] where [$tablet_index] = 1")] == ["row2"]
