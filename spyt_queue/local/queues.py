"""Queue API: consumer registrations, ``pull_queue``/``pull_consumer`` and ``advance_consumer``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yt.yson as yson

from spyt_queue.local import ordered, sorted_tables
from spyt_queue.local.cypress import Node
from spyt_queue.local.errors import AUTHORIZATION_ERROR, CONSUMER_OFFSET_CONFLICT, YtError
from spyt_queue.local.formats import Format, dumps_rows
from spyt_queue.local.schema import CONSUMER_SCHEMA, CONSUMER_SCHEMA_WITHOUT_META, row_data_weight, same_schema
from spyt_queue.local.state import Registration, State
from spyt_queue.local.transactions import Transaction
from spyt_queue.local.ypath import RichPath

DEFAULT_MAX_ROW_COUNT = 1000
DEFAULT_MAX_DATA_WEIGHT = 16 * 1024 * 1024


def _ref(cluster: str, path: str) -> str:
    return f"{cluster}:{path}"


def _rich(cluster: str, path: str) -> Any:
    return yson.to_yson_type(path, attributes={"cluster": cluster})


# --------------------------------------------------------------------------------------------------------------
# Registrations


def register(state: State, queue: RichPath, consumer: RichPath, vital: bool, partitions: list[int] | None) -> None:
    """``register_queue_consumer``: both objects must exist; re-registering updates vital/partitions."""
    queue_path, consumer_path = state.local_path(queue), state.local_path(consumer)
    with state.lock:
        state.cypress.resolve_table(queue_path)
        state.cypress.resolve_table(consumer_path)
        registration = Registration(
            state.cluster_name,
            queue_path,
            state.cluster_name,
            consumer_path,
            bool(vital),
            [int(p) for p in partitions] if partitions is not None else None,
        )
        with state.storage.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO registrations (queue_cluster, queue_path, consumer_cluster, consumer_path, "
                "vital, partitions) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    registration.queue_cluster,
                    registration.queue_path,
                    registration.consumer_cluster,
                    registration.consumer_path,
                    int(registration.vital),
                    yson.dumps(registration.partitions) if registration.partitions is not None else None,
                ),
            )
        state.registrations = [
            r for r in state.registrations if (r.queue_path, r.consumer_path) != (queue_path, consumer_path)
        ]
        state.registrations.append(registration)


def unregister(state: State, queue: RichPath, consumer: RichPath) -> None:
    """``unregister_queue_consumer`` (deleting an absent registration is a no-op, as a row delete is)."""
    queue_path, consumer_path = state.local_path(queue), state.local_path(consumer)
    with state.lock, state.storage.transaction() as conn:
        conn.execute(
            "DELETE FROM registrations WHERE queue_cluster = ? AND queue_path = ? AND consumer_cluster = ? "
            "AND consumer_path = ?",
            (state.cluster_name, queue_path, state.cluster_name, consumer_path),
        )
        state.registrations = [
            r for r in state.registrations if (r.queue_path, r.consumer_path) != (queue_path, consumer_path)
        ]


def list_registrations(state: State, queue: RichPath | None, consumer: RichPath | None) -> list[dict[str, Any]]:
    """``list_queue_consumer_registrations``: paths come back as ``<cluster=...>"//path"``."""
    queue_path = state.local_path(queue) if queue is not None else None
    consumer_path = state.local_path(consumer) if consumer is not None else None
    with state.lock:
        return [
            {
                "queue_path": _rich(r.queue_cluster, r.queue_path),
                "consumer_path": _rich(r.consumer_cluster, r.consumer_path),
                "vital": r.vital,
                "partitions": r.partitions,
            }
            for r in state.registrations
            if (queue_path is None or r.queue_path == queue_path)
            and (consumer_path is None or r.consumer_path == consumer_path)
        ]


def check_registered(state: State, queue_path: str, consumer_path: str, partition_index: int | None) -> None:
    """Error 901 unless the consumer is registered for the queue (and partition)."""
    for registration in state.registrations:
        if registration.queue_path == queue_path and registration.consumer_path == consumer_path:
            if partition_index is None or registration.partitions is None or partition_index in registration.partitions:
                return
            raise YtError(
                f"Consumer {_ref(state.cluster_name, consumer_path)} is not registered for partition "
                f"{partition_index} of queue {_ref(state.cluster_name, queue_path)}",
                code=AUTHORIZATION_ERROR,
            )
    raise YtError(
        f"Consumer {_ref(state.cluster_name, consumer_path)} is not registered for queue "
        f"{_ref(state.cluster_name, queue_path)}",
        code=AUTHORIZATION_ERROR,
        attributes={"queue_path": queue_path, "consumer_path": consumer_path},
    )


# --------------------------------------------------------------------------------------------------------------
# Pull


def pull(
    state: State,
    queue: RichPath,
    offset: int | None,
    partition_index: int,
    max_row_count: int | None,
    max_data_weight: int | None,
    data_weight_per_row_hint: int | None,
    fmt: Format,
    consumer: RichPath | None = None,
) -> tuple[Iterator[bytes], dict[str, Any]]:
    """Rows of one partition from ``offset`` (inclusive).

    ``pull_consumer`` reads through the tablet node, which clamps a trimmed offset to the first kept row and reads
    ``max_row_count`` rows from there. ``pull_queue`` selects ``$row_index between offset and offset + n - 1`` and
    only when that window is empty retries with ``$row_index >= offset limit n`` (``DoPullQueueViaSelectRows``), so a
    partly trimmed window returns just its kept rows.
    """
    queue_path = state.local_path(queue)
    with state.lock:
        node = state.dynamic_table(queue_path)
        table = node.table
        assert table is not None
        if consumer is not None:
            consumer_path = state.local_path(consumer)
            consumer_node = state.dynamic_table(consumer_path)
            check_registered(state, queue_path, consumer_path, partition_index)
            if offset is None:
                offset = stored_offset(state, consumer_node, queue, queue_path, partition_index, None)
        if offset is None:
            raise YtError('Missing required parameter "offset"')
        if not table.ordered:
            raise YtError(f"Table {node.path} is not ordered")
        if offset < 0:
            raise YtError(f"Cannot read table {node.path} at a negative offset {offset}", attributes={"offset": offset})
        tablet = state._tablet(node, partition_index)
        state.validate_mounted(node, tablet, write=False)
        count = DEFAULT_MAX_ROW_COUNT if max_row_count is None else int(max_row_count)
        if count <= 0:
            raise YtError(f'"max_row_count" must be positive, got {count}')
        if data_weight_per_row_hint:
            weight = DEFAULT_MAX_DATA_WEIGHT if max_data_weight is None else int(max_data_weight)
            count = min(count, max(1, weight // max(1, int(data_weight_per_row_hint))))
        begin = max(int(offset), tablet.trimmed_row_count)
        window_end = int(offset) + count
        if consumer is None and begin < window_end:
            end = min(window_end, tablet.total_row_count)  # the select window keeps its bounds
        else:
            end = min(begin + count, tablet.total_row_count)
        table_id = node.id
        index = tablet.index
        names = [c.bname for c in table.schema.data_columns]
        weighers = table.schema.weighers
    if consumer is not None and begin < end:
        # pull_consumer reads through the tablet node API, which stops once max_data_weight is reached
        # (at least one row); pull_queue applies it only with data_weight_per_row_hint.
        limit = DEFAULT_MAX_DATA_WEIGHT if max_data_weight is None else int(max_data_weight)
        end = _data_weight_end(state, table_id, index, begin, end, limit, names, weighers)
    parameters = {"start_row_index": begin if begin < end else int(offset)}
    return _encode_slices(state, table_id, index, begin, end, fmt), parameters


def _data_weight_end(
    state: State,
    table_id: str,
    tablet: int,
    begin: int,
    end: int,
    limit: int,
    names: list[bytes],
    weighers: dict[bytes, Any] | None = None,
) -> int:
    """The end of the prefix of ``[begin, end)`` whose data weight first reaches ``limit`` (at least one row).

    A row's data weight never exceeds twice its stored binary YSON size, so small ranges skip the per-row work.
    """
    stored = sum(len(data) for _, _, data in state.storage.read_chunks(table_id, tablet, begin, end))
    if 2 * stored < limit:
        return end
    remaining = limit
    position = begin
    for row in ordered.read_rows(state.storage, table_id, tablet, begin, end):
        remaining -= row_data_weight(row, names, weighers)
        position += 1
        if remaining <= 0:
            break
    return position


def _encode_slices(state: State, table_id: str, tablet: int, begin: int, end: int, fmt: Format) -> Iterator[bytes]:
    binary = fmt.is_binary_yson
    for data, rows in ordered.read_slices(state.storage, table_id, tablet, begin, end):
        if data is not None and binary:
            yield data
        elif data is not None:
            from spyt_queue.local.formats import loads_fragment

            yield dumps_rows(loads_fragment(data), fmt)
        elif rows:
            yield dumps_rows(rows, fmt)


# --------------------------------------------------------------------------------------------------------------
# Consumers


def consumer_schema_kind(node: Node) -> bool:
    """Whether the consumer table has the ``meta`` column; error unless it is a valid consumer table."""
    table = node.table
    assert table is not None
    if not table.schema.unique_keys:
        raise YtError(
            "Consumer schema must have unique keys, schema does not",
            attributes={"actual_schema": table.schema.to_yson()},
        )
    if same_schema(table.schema, CONSUMER_SCHEMA):
        return True
    if same_schema(table.schema, CONSUMER_SCHEMA_WITHOUT_META):
        return False
    raise YtError(
        "Table schema is not recognized as a valid consumer schema",
        attributes={"expected_schema": CONSUMER_SCHEMA.to_yson(), "actual_schema": table.schema.to_yson()},
    )


def _consumer_key(state: State, queue: RichPath, queue_path: str, partition_index: int) -> dict[bytes, Any]:
    return {
        b"queue_cluster": (queue.cluster or state.cluster_name).encode("utf-8"),
        b"queue_path": queue_path.encode("utf-8"),
        b"partition_index": yson.YsonUint64(partition_index),
    }


def stored_offset(
    state: State, consumer: Node, queue: RichPath, queue_path: str, partition_index: int, tx: Transaction | None
) -> int:
    """The consumer's committed offset of a partition (a missing row or null offset counts as 0)."""
    consumer_schema_kind(consumer)
    key = _consumer_key(state, queue, queue_path, partition_index)
    assert consumer.table is not None
    row = sorted_tables.lookup(
        state.storage, consumer.id, sorted_tables.key_of(consumer.table.schema, key), state.read_timestamp(tx)
    )
    if row is None or row.get(b"offset") is None:
        return 0
    return int(row[b"offset"])


def advance(
    state: State,
    consumer: RichPath,
    queue: RichPath,
    partition_index: int,
    old_offset: int | None,
    new_offset: int,
    client_side: bool,
    tx: Transaction | None,
) -> None:
    """``advance_consumer``: optional compare-and-set on ``old_offset`` (error 3100), then an upsert."""
    consumer_path = state.local_path(consumer)
    queue_path = normalize(queue)
    if new_offset < 0:
        raise YtError(f"Queue consumer offset {new_offset} cannot be negative", attributes={"offset": new_offset})
    if partition_index < 0:
        raise YtError(f"Invalid partition index {partition_index}")

    def apply(target: Transaction) -> None:
        node = state.dynamic_table(consumer_path)
        has_meta = consumer_schema_kind(node)
        if not client_side:
            check_registered(state, queue_path, consumer_path, None)
        snapshot = tx if tx is not None else target
        if old_offset is not None:
            key = _consumer_key(state, queue, queue_path, partition_index)
            assert node.table is not None
            row_key = sorted_tables.key_of(node.table.schema, key)
            version = state.storage.latest_version(node.id, row_key, snapshot.start_ts)
            current = 0
            current_ts = 0
            if version is not None and version[1] is not None:
                current_ts = version[0]
                row = sorted_tables.decode_row(version[1])
                if row.get(b"offset") is not None:
                    current = int(row[b"offset"])
            elif version is not None:
                current_ts = version[0]
            if current != old_offset:
                raise YtError(
                    f"Offset conflict at partition {partition_index} of consumer {consumer_path}: "
                    f"expected offset {old_offset}, found offset {current}",
                    code=CONSUMER_OFFSET_CONFLICT,
                    attributes={
                        "partition": partition_index,
                        "consumer": consumer_path,
                        "expected_offset": old_offset,
                        "current_offset": current,
                        "current_offset_timestamp": yson.YsonUint64(current_ts),
                    },
                )
        row = _consumer_key(state, queue, queue_path, partition_index)
        row[b"offset"] = yson.YsonUint64(new_offset)
        if has_meta:
            row[b"meta"] = _consumer_meta(state, queue, queue_path, partition_index, new_offset)
        state.buffer_sorted(target, node, [row], delete=False, update=False)

    state.write(tx, apply)


def normalize(queue: RichPath) -> str:
    """The queue path as stored in consumer rows (attributes stripped)."""
    from spyt_queue.local.state import normalize_path

    return normalize_path(queue.path)


def _consumer_meta(state: State, queue: RichPath, queue_path: str, partition_index: int, offset: int) -> Any:
    """``{offset_timestamp, cumulative_data_weight}`` of the rows at ``offset`` / ``offset - 1`` (when known)."""
    meta: dict[bytes, Any] = {}
    if queue.cluster not in (None, state.cluster_name):
        return meta
    node = state.cypress.find(queue_path)
    if node is None or node.table is None or not node.table.ordered or not node.table.dynamic:
        return meta
    schema = node.table.schema
    if not (schema.has_timestamp or schema.has_cumulative_data_weight):
        return meta
    if partition_index >= len(node.table.tablets):
        return meta
    tablet = node.table.tablets[partition_index]
    if schema.has_timestamp:
        rows = list(ordered.read_rows(state.storage, node.id, tablet.index, offset, offset + 1))
        if rows and offset >= tablet.trimmed_row_count:
            meta[b"offset_timestamp"] = rows[0].get(b"$timestamp")
    if schema.has_cumulative_data_weight and offset > 0:
        rows = list(ordered.read_rows(state.storage, node.id, tablet.index, offset - 1, offset))
        if rows and offset - 1 >= tablet.trimmed_row_count:
            meta[b"cumulative_data_weight"] = rows[0].get(b"$cumulative_data_weight")
    return meta
