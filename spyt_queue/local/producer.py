"""Queue producer API: sessions with epochs and exactly-once pushes by sequence number."""

from __future__ import annotations

from typing import Any

import yt.yson as yson

from spyt_queue.local import sorted_tables, tablet_checks
from spyt_queue.local.cypress import Node
from spyt_queue.local.errors import INVALID_EPOCH, INVALID_ROW_SEQUENCE_NUMBERS, ZOMBIE_EPOCH, YtError
from spyt_queue.local.schema import PRODUCER_SCHEMA, same_schema
from spyt_queue.local.state import State, normalize_path
from spyt_queue.local.transactions import Transaction
from spyt_queue.local.ypath import RichPath

SEQUENCE_NUMBER = b"$sequence_number"


def _producer(state: State, path: str) -> Node:
    node = state.dynamic_table(path)
    assert node.table is not None
    if not same_schema(node.table.schema, PRODUCER_SCHEMA):
        raise YtError(
            "Table schema is not recognized as a valid producer schema",
            attributes={"expected_schema": PRODUCER_SCHEMA.to_yson(), "actual_schema": node.table.schema.to_yson()},
        )
    return node


def _key(state: State, queue: RichPath, session_id: str) -> dict[bytes, Any]:
    return {
        b"queue_cluster": (queue.cluster or state.cluster_name).encode("utf-8"),
        b"queue_path": normalize_path(queue.path).encode("utf-8"),
        b"session_id": session_id.encode("utf-8"),
    }


def _session(state: State, node: Node, key: dict[bytes, Any], ts: int) -> dict[bytes, Any] | None:
    assert node.table is not None
    return sorted_tables.lookup(state.storage, node.id, sorted_tables.key_of(node.table.schema, key), ts)


def create_session(
    state: State, producer: RichPath, queue: RichPath, session_id: str, user_meta: Any
) -> dict[str, Any]:
    """``create_queue_producer_session``: new sessions start at epoch 0, sequence -1; existing ones bump epoch."""
    producer_path = state.local_path(producer)
    state.local_path(queue)
    result: dict[str, Any] = {}

    def apply(tx: Transaction) -> None:
        node = _producer(state, producer_path)
        tablet_checks.validate_table_mounted(node, write=True)
        key = _key(state, queue, session_id)
        current = _session(state, node, key, tx.start_ts)
        row = dict(key)
        if current is None:
            row.update({b"sequence_number": -1, b"epoch": 0, b"user_meta": user_meta})
        else:
            row.update(
                {
                    b"sequence_number": int(current[b"sequence_number"]),
                    b"epoch": int(current[b"epoch"]) + 1,
                    b"user_meta": user_meta if user_meta is not None else current.get(b"user_meta"),
                    b"system_meta": current.get(b"system_meta"),
                }
            )
        state.buffer_sorted(tx, node, [row], delete=False, update=False)
        result.update(
            {"epoch": row[b"epoch"], "sequence_number": row[b"sequence_number"], "user_meta": row[b"user_meta"]}
        )

    state.write(None, apply)
    return result


def remove_session(state: State, producer: RichPath, queue: RichPath, session_id: str) -> None:
    """``remove_queue_producer_session``."""
    producer_path = state.local_path(producer)

    def apply(tx: Transaction) -> None:
        node = _producer(state, producer_path)
        key = _key(state, queue, session_id)
        if _session(state, node, key, tx.start_ts) is None:
            raise YtError(
                f"Queue producer session {session_id!r} does not exist",
                attributes={"producer_path": producer_path, "session_id": session_id},
            )
        state.buffer_sorted(tx, node, [key], delete=True, update=False)

    state.write(None, apply)


def push(
    state: State,
    producer: RichPath,
    queue: RichPath,
    session_id: str,
    epoch: int,
    rows: list[dict[bytes, Any]],
    sequence_number: int | None,
    user_meta: Any,
    tx: Transaction | None,
    complex_type_mode: str = "named",
) -> dict[str, Any]:
    """``push_queue_producer``: rows at or below the session's sequence number are skipped."""
    producer_path = state.local_path(producer)
    queue_path = state.local_path(queue)
    result: dict[str, Any] = {}

    def apply(target: Transaction) -> None:
        node = _producer(state, producer_path)
        key = _key(state, queue, session_id)
        snapshot = tx.start_ts if tx is not None else target.start_ts
        current = _session(state, node, key, snapshot)
        if current is None:
            raise YtError(
                f"Queue producer session {session_id!r} for queue {queue_path} does not exist; create it "
                "with create_queue_producer_session",
                attributes={"session_id": session_id},
            )
        current_epoch = int(current[b"epoch"])
        if epoch < current_epoch:
            raise YtError(
                f"Received epoch {epoch} is less than the current epoch {current_epoch} of session "
                f"{session_id!r} (zombie producer)",
                code=ZOMBIE_EPOCH,
                attributes={"epoch": epoch, "current_epoch": current_epoch},
            )
        if epoch > current_epoch:
            raise YtError(
                f"Received epoch {epoch} is greater than the current epoch {current_epoch} of session {session_id!r}",
                code=INVALID_EPOCH,
                attributes={"epoch": epoch, "current_epoch": current_epoch},
            )
        stored = int(current[b"sequence_number"])
        last, skipped, keep = _validate_sequence(rows, stored, sequence_number)
        queue_node = state.dynamic_table(queue_path)
        assert queue_node.table is not None
        if not queue_node.table.ordered:
            raise YtError(f"Table {queue_path} is not ordered")
        if keep:
            for row in keep:
                row.pop(SEQUENCE_NUMBER, None)
            queue_node.table.schema.validate_rows(keep, queue_path, ordered=True, complex_type_mode=complex_type_mode)
            state.buffer_ordered(target, queue_node, keep)
        if last > stored or user_meta is not None:
            update = dict(current)
            update[b"sequence_number"] = max(last, stored)
            if user_meta is not None:
                update[b"user_meta"] = user_meta
            state.buffer_sorted(target, node, [update], delete=False, update=False)
        result.update({"last_sequence_number": last, "skipped_row_count": skipped})

    state.write(tx, apply)
    return result


def _validate_sequence(
    rows: list[dict[bytes, Any]], stored: int, initial: int | None
) -> tuple[int, int, list[dict[bytes, Any]]]:
    """Sequence-number checks of ``ValidatePushQueueProducerRows``; returns (last, skipped, rows to write)."""
    next_number = initial
    last = -1
    skipped = 0
    keep: list[dict[bytes, Any]] = []
    for row in rows:
        value = row.get(SEQUENCE_NUMBER)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                raise YtError(
                    "Error parsing sequence number from row",
                    inner_errors=[YtError(f"Cannot parse integer from {value!r}")],
                )
            if initial is not None:
                raise YtError(
                    "Only one of explicit $sequence_number or initial sequence number can be set",
                    code=INVALID_ROW_SEQUENCE_NUMBERS,
                )
            number = int(value)
            if number < 0:
                raise YtError(f"Sequence number {number} cannot be negative", code=INVALID_ROW_SEQUENCE_NUMBERS)
        else:
            if next_number is None:
                raise YtError(
                    "There is no $sequence_number in the row and initial sequence number was not received",
                    code=INVALID_ROW_SEQUENCE_NUMBERS,
                )
            number = next_number
            next_number += 1
        if number <= last:
            raise YtError(
                f"Sequence numbers are not strongly monotonic: {number} <= {last}", code=INVALID_ROW_SEQUENCE_NUMBERS
            )
        last = number
        if number <= stored:
            skipped += 1
        else:
            keep.append(row)
    return last, skipped, keep


def as_structured(value: Any) -> Any:
    """Stored ``any`` values use byte strings; structured output accepts them as they are."""
    return yson.YsonEntity() if value is None else value
