"""Conformance: consumer registrations and ``advance_consumer``.

Sources: ``queues.md`` ("Registering a consumer with a queue", "Working with a consumer": offsets are
the first unread row, ``old_offset`` is compared inside the transaction, other dynamic-table operations
may share the transaction), ``yt/python/yt/wrapper/tests/test_queue_commands.py``
(``test_register_queue_consumer``, ``test_advance_consumer``: ``old_offset=0`` on an empty consumer),
``yt/yt/client/driver/queue_commands.cpp`` (registration fields ``queue_path``, ``consumer_path``,
``vital``, ``partitions``), ``yt/yt/client/queue_client/consumer_client.cpp`` (``Advance``: a missing row
counts as offset 0; mismatch -> 3100 ConsumerOffsetConflict; no monotonicity check),
``yt/yt/client/api/queue_transaction_mixin.cpp`` ("Queue consumer offset %v cannot be negative").
"""

from __future__ import annotations

import pytest
from conformance import (
    AUTHORIZATION_ERROR,
    CONSUMER_OFFSET_CONFLICT,
    CONSUMER_SCHEMA,
    SORTED_SCHEMA,
    consumer_offsets,
    create_consumer,
    create_queue,
    create_sorted_table,
    insert,
    register_consumer,
    select,
    wait_until,
)
from yt.wrapper.errors import YtResponseError


@pytest.fixture
def qc(yt, yt_root) -> tuple[str, str]:
    """A 2-tablet queue with 5 rows per tablet and a consumer (not registered)."""
    queue = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    insert(yt, queue, [{"$tablet_index": t, "data": f"{t}:{i}"} for t in (0, 1) for i in range(5)])
    consumer = create_consumer(yt, f"{yt_root}/c")
    return queue, consumer


def _registrations(yt, queue: str | None = None, consumer: str | None = None) -> list[dict]:
    result = yt.list_queue_consumer_registrations(queue_path=queue, consumer_path=consumer)
    return [
        {
            "queue_path": str(r["queue_path"]),
            "consumer_path": str(r["consumer_path"]),
            "vital": r["vital"],
            "partitions": r["partitions"],
        }
        for r in result
    ]


def test_register_list_unregister(yt, qc):
    """``register_queue_consumer`` adds a registration listed (by queue, by consumer, by both) with
    ``queue_path``, ``consumer_path``, ``vital`` and ``partitions``; ``unregister_queue_consumer`` removes
    it; registering again with other settings replaces it."""
    queue, consumer = qc
    yt.register_queue_consumer(queue, consumer, vital=True)
    expected = [{"queue_path": queue, "consumer_path": consumer, "vital": True, "partitions": None}]
    wait_until(lambda: _registrations(yt, queue, consumer) == expected, message="registration listed")
    assert _registrations(yt, queue=queue) == expected
    assert _registrations(yt, consumer=consumer) == expected
    assert all(
        set(r) >= {"queue_path", "consumer_path", "vital", "partitions"}
        for r in yt.list_queue_consumer_registrations(queue_path=queue)
    )

    yt.unregister_queue_consumer(queue, consumer)
    wait_until(lambda: _registrations(yt, queue, consumer) == [], message="registration removed")
    assert _registrations(yt, queue=queue) == []

    yt.register_queue_consumer(queue, consumer, vital=False, partitions=[1, 0])
    expected = [{"queue_path": queue, "consumer_path": consumer, "vital": False, "partitions": [1, 0]}]
    wait_until(lambda: _registrations(yt, queue, consumer) == expected, message="re-registration listed")
    yt.unregister_queue_consumer(queue, consumer)
    wait_until(lambda: _registrations(yt, queue, consumer) == [], message="registration removed")


def test_unregistered_consumer_loses_pull_access(yt, qc):
    """After ``unregister_queue_consumer`` a ``pull_consumer`` fails again with 901."""
    queue, consumer = qc
    register_consumer(yt, queue, consumer)
    assert len(list(yt.pull_consumer(consumer, queue, offset=0, partition_index=1))) == 5
    yt.unregister_queue_consumer(queue, consumer)

    def refused() -> bool:
        try:
            list(yt.pull_consumer(consumer, queue, offset=0, partition_index=0))
            return False
        except YtResponseError as error:
            assert error.contains_code(AUTHORIZATION_ERROR), error
            return True

    wait_until(refused, message="pull_consumer to be refused after unregistration")


def test_advance_writes_consumer_row(yt, qc):
    """``advance_consumer`` upserts ``{queue_cluster, queue_path, partition_index, offset}`` into the
    consumer table; ``select_rows`` on the consumer sees the new offset per partition."""
    queue, consumer = qc
    assert consumer_offsets(yt, consumer, queue) == {}
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=None, new_offset=3)
    yt.advance_consumer(consumer, queue, partition_index=1, old_offset=None, new_offset=1)
    assert consumer_offsets(yt, consumer, queue) == {0: 3, 1: 1}
    rows = select(yt, f'* from [{consumer}] where [queue_path] = "{queue}" and [partition_index] = 0')
    assert len(rows) == 1
    assert rows[0]["offset"] == 3
    assert isinstance(rows[0]["queue_cluster"], str)


def test_advance_with_matching_old_offset_succeeds(yt, qc):
    """With ``old_offset`` equal to the stored offset the advance succeeds (compare-and-set)."""
    queue, consumer = qc
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=2)
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=2, new_offset=5)
    assert consumer_offsets(yt, consumer, queue) == {0: 5}


def test_advance_old_offset_zero_on_empty_consumer(yt, qc):
    """A missing consumer row counts as offset 0: ``old_offset=0`` succeeds on an empty consumer
    (test_queue_commands.py ``test_advance_consumer``); any other ``old_offset`` conflicts."""
    queue, consumer = qc
    with pytest.raises(YtResponseError) as info:
        yt.advance_consumer(consumer, queue, partition_index=1, old_offset=1, new_offset=2)
    assert info.value.contains_code(CONSUMER_OFFSET_CONFLICT), info.value
    yt.advance_consumer(consumer, queue, partition_index=1, old_offset=0, new_offset=2)
    assert consumer_offsets(yt, consumer, queue) == {1: 2}


def test_advance_old_offset_mismatch_is_3100(yt, qc):
    """A mismatching ``old_offset`` fails with 3100 (ConsumerOffsetConflict) and leaves the row as is."""
    queue, consumer = qc
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=None, new_offset=4)
    with pytest.raises(YtResponseError) as info:
        yt.advance_consumer(consumer, queue, partition_index=0, old_offset=3, new_offset=5)
    assert info.value.contains_code(CONSUMER_OFFSET_CONFLICT), info.value
    assert consumer_offsets(yt, consumer, queue) == {0: 4}
    # consumer_client.cpp: "Offset conflict at partition %v of consumer %v: expected offset %v, found offset %v"
    stack, conflict = [info.value.error], None
    while stack and conflict is None:
        item = stack.pop()
        conflict = item if item.get("code") == CONSUMER_OFFSET_CONFLICT else None
        stack.extend(item.get("inner_errors") or [])
    assert conflict is not None
    attributes = conflict["attributes"]
    assert (attributes["partition"], attributes["expected_offset"], attributes["current_offset"]) == (0, 3, 4)
    assert "consumer" in attributes and "current_offset_timestamp" in attributes
    assert "expected offset 3, found offset 4" in conflict["message"]


def test_advance_backwards_is_allowed(yt, qc):
    """There is no monotonicity check: an advance may move the offset backwards."""
    queue, consumer = qc
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=None, new_offset=5)
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=5, new_offset=1)
    assert consumer_offsets(yt, consumer, queue) == {0: 1}


def test_advance_negative_offset_fails(yt, qc):
    """``new_offset < 0`` is rejected ("Queue consumer offset %v cannot be negative")."""
    queue, consumer = qc
    with pytest.raises(YtResponseError):
        yt.advance_consumer(consumer, queue, partition_index=0, old_offset=None, new_offset=-1)
    assert consumer_offsets(yt, consumer, queue) == {}


def test_advance_in_tablet_transaction_commit(yt, yt2, qc):
    """Inside a tablet transaction the advance is invisible to others until commit."""
    queue, consumer = qc
    with yt.Transaction(type="tablet"):
        yt.advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=2)
        assert consumer_offsets(yt2, consumer, queue) == {}
    assert consumer_offsets(yt2, consumer, queue) == {0: 2}


def test_advance_in_tablet_transaction_abort(yt, yt2, qc):
    """Aborting the tablet transaction discards the advance."""
    queue, consumer = qc
    with pytest.raises(RuntimeError, match="abort"), yt.Transaction(type="tablet"):
        yt.advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=2)
        raise RuntimeError("abort")
    assert consumer_offsets(yt2, consumer, queue) == {}


def test_advance_conflict_inside_transaction(yt, qc):
    """``old_offset`` is checked inside the transaction: a mismatch raises 3100 from the advance call."""
    queue, consumer = qc
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=None, new_offset=3)
    with pytest.raises(YtResponseError) as info, yt.Transaction(type="tablet"):
        yt.advance_consumer(consumer, queue, partition_index=0, old_offset=2, new_offset=4)
    assert info.value.contains_code(CONSUMER_OFFSET_CONFLICT), info.value
    assert consumer_offsets(yt, consumer, queue) == {0: 3}


def test_advance_is_atomic_with_insert_rows(yt, yt2, yt_root, qc):
    """Advance and ``insert_rows`` into another dynamic table in one tablet transaction commit together,
    and abort together (queues.md "Working with a consumer")."""
    queue, consumer = qc
    sink = create_sorted_table(yt, f"{yt_root}/sink")

    with pytest.raises(RuntimeError), yt.Transaction(type="tablet"):
        insert(yt, sink, [{"key": 1, "value": "aborted"}])
        yt.advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=1)
        raise RuntimeError("abort")
    assert list(yt2.lookup_rows(sink, [{"key": 1}])) == []
    assert consumer_offsets(yt2, consumer, queue) == {}

    with yt.Transaction(type="tablet"):
        insert(yt, sink, [{"key": 1, "value": "committed"}])
        yt.advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=1)
        assert list(yt2.lookup_rows(sink, [{"key": 1}])) == []
    assert [r["value"] for r in yt2.lookup_rows(sink, [{"key": 1}])] == ["committed"]
    assert consumer_offsets(yt2, consumer, queue) == {0: 1}


def test_pull_consumer_reads_from_given_offset_after_advance(yt, qc):
    """Offsets are "first unread row": after advancing to N, pulling at the stored offset yields N."""
    queue, consumer = qc
    register_consumer(yt, queue, consumer)
    yt.advance_consumer(consumer, queue, partition_index=1, old_offset=0, new_offset=3)
    offset = consumer_offsets(yt, consumer, queue)[1]
    rows = list(yt.pull_consumer(consumer, queue, offset=offset, partition_index=1))
    assert [(r["$row_index"], r["data"]) for r in rows] == [(3, "1:3"), (4, "1:4")]


def test_consumer_schema_without_meta_is_accepted(yt, yt_root, qc):
    """A consumer table with the schema without ``meta`` (``YTConsumerWithoutMetaTableSchema``, the one
    SPYT creates) works with ``advance_consumer`` too."""
    queue, _ = qc
    consumer = f"{yt_root}/c_without_meta"
    schema = [c for c in CONSUMER_SCHEMA if c["name"] != "meta"]
    yt.create("table", consumer, attributes={"dynamic": True, "schema": schema, "treat_as_queue_consumer": True})
    yt.mount_table(consumer, sync=True)
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=2)
    assert consumer_offsets(yt, consumer, queue) == {0: 2}


def test_advance_on_non_consumer_table_fails(yt, yt_root, qc):
    """A sorted table whose schema is not a consumer schema is rejected ("Table schema is not recognized
    as a valid consumer schema", consumer_client.cpp) and left untouched."""
    queue, _ = qc
    table = create_sorted_table(yt, f"{yt_root}/not_a_consumer", schema=SORTED_SCHEMA)
    with pytest.raises(YtResponseError):
        yt.advance_consumer(table, queue, partition_index=0, old_offset=None, new_offset=1)
    assert select(yt, f"* from [{table}]") == []
