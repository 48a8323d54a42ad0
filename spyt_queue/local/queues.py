"""Queue API: consumer registrations, ``pull_queue``/``pull_consumer`` and ``advance_consumer``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yt.yson as yson

from spyt_queue.local import ordered, sorted_tables, tablet_checks
from spyt_queue.local.cypress import Node
from spyt_queue.local.errors import AUTHORIZATION_ERROR, CONSUMER_OFFSET_CONFLICT, YtError
from spyt_queue.local.formats import Format, dumps_rows, loads_fragment, web_json_stream
from spyt_queue.local.schema import (
    CONSUMER_SCHEMA,
    CONSUMER_SCHEMA_WITHOUT_META,
    ROW_INDEX,
    TABLET_INDEX,
    row_data_weight,
    same_schema,
)
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


def resolve_object(state: State, rich: RichPath, must_exist: bool = True) -> tuple[str, str]:
    """``(cluster, path)`` of a queue or consumer as registrations name it: on this cluster the path of the table
    itself, symbolic links resolved (YTsaurus registers and lists target paths); a path on another cluster is kept
    as given, and a missing local object is a resolve error only with ``must_exist``."""
    from spyt_queue.local.state import normalize_path

    cluster = normalize_cluster_name(rich.cluster or state.cluster_name)
    path = normalize_path(rich.path)
    if cluster != state.cluster_name:
        return cluster, path
    node = state.cypress.resolve_table(path) if must_exist else _find_table(state, path)
    return cluster, node.path if node is not None else path


def normalize_cluster_name(cluster: str) -> str:
    """A cluster name as the registration manager keys it (``NormalizeClusterName``: the ``.yt.yandex.net`` suffix
    chopped, so ``<cluster=hahn.yt.yandex.net>//q`` registers and lists as ``hahn``)."""
    return cluster.removesuffix(".yt.yandex.net")


def _find_table(state: State, path: str) -> Node | None:
    try:
        return state.cypress.find(path)
    except YtError:
        return None


def register(state: State, queue: RichPath, consumer: RichPath, vital: bool, partitions: list[int] | None) -> None:
    """``register_queue_consumer``: local objects must exist; re-registering updates vital/partitions."""
    with state.lock:
        queue_cluster, queue_path = resolve_object(state, queue)
        consumer_cluster, consumer_path = resolve_object(state, consumer)
        registration = Registration(
            queue_cluster,
            queue_path,
            consumer_cluster,
            consumer_path,
            bool(vital),
            [int(p) for p in partitions] if partitions is not None else None,
        )
        key = (queue_cluster, queue_path, consumer_cluster, consumer_path)
        with state.storage.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO registrations (queue_cluster, queue_path, consumer_cluster, consumer_path, "
                "vital, partitions) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    *key,
                    int(registration.vital),
                    yson.dumps(registration.partitions) if registration.partitions is not None else None,
                ),
            )
        state.registrations = [r for r in state.registrations if _key(r) != key]
        state.registrations.append(registration)


def _key(r: Registration) -> tuple[str, str, str, str]:
    return (r.queue_cluster, r.queue_path, r.consumer_cluster, r.consumer_path)


def unregister(state: State, queue: RichPath, consumer: RichPath) -> None:
    """``unregister_queue_consumer`` (deleting an absent registration is a no-op, as a row delete is)."""
    with state.lock:
        key = (*resolve_object(state, queue, False), *resolve_object(state, consumer, False))
        with state.storage.transaction() as conn:
            conn.execute(
                "DELETE FROM registrations WHERE queue_cluster = ? AND queue_path = ? AND consumer_cluster = ? "
                "AND consumer_path = ?",
                key,
            )
        state.registrations = [r for r in state.registrations if _key(r) != key]


def list_registrations(state: State, queue: RichPath | None, consumer: RichPath | None) -> list[dict[str, Any]]:
    """``list_queue_consumer_registrations``: paths come back as ``<cluster=...>"//path"`` (link targets)."""
    with state.lock:
        queue_key = resolve_object(state, queue, False) if queue is not None else None
        consumer_key = resolve_object(state, consumer, False) if consumer is not None else None
        return [
            {
                "queue_path": _rich(r.queue_cluster, r.queue_path),
                "consumer_path": _rich(r.consumer_cluster, r.consumer_path),
                "vital": r.vital,
                "partitions": r.partitions,
            }
            for r in state.registrations
            if (queue_key is None or (r.queue_cluster, r.queue_path) == queue_key)
            and (consumer_key is None or (r.consumer_cluster, r.consumer_path) == consumer_key)
        ]


def check_registered(state: State, queue: tuple[str, str], consumer: tuple[str, str]) -> None:
    """Error 901 unless the consumer is registered for the queue (``DoPullConsumer``: any registration will do;
    its ``partitions`` are not checked)."""
    for registration in state.registrations:
        if (registration.queue_cluster, registration.queue_path) == queue and (
            registration.consumer_cluster,
            registration.consumer_path,
        ) == consumer:
            return
    raise YtError(
        f"Consumer {_ref(*consumer)} is not registered for queue {_ref(*queue)}",
        code=AUTHORIZATION_ERROR,
        attributes={"queue_path": queue[1], "consumer_path": consumer[1]},
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

    Both commands read through the tablet node (``TPullQueueOptions::UseNativeTabletNodeApi`` is on by default;
    ``DoPullQueueViaTabletNodeApi``), which clamps a trimmed offset to the first kept row, reads ``max_row_count``
    rows from there (fewer with ``data_weight_per_row_hint``) and stops once ``max_data_weight`` is reached (at
    least one row). ``pull_consumer`` first resolves the consumer, checks the registration and the queue's
    cluster, and reads the consumer's offset when none is given (``DoPullConsumer``).
    """
    with state.lock:
        if consumer is None:
            state.local_path(queue)  # another cluster's queue cannot be read here
        queue_ref = resolve_object(state, queue, consumer is None)
        if consumer is not None:
            consumer_path = resolve_object(state, consumer)[1]
            consumer_node = state.dynamic_table(consumer_path)
            check_registered(state, queue_ref, (state.cluster_name, consumer_path))
            if queue_ref[0] != state.cluster_name:
                raise YtError(
                    f'Queue cluster "{queue_ref[0]}" was not found for path {queue_ref[0]}:{queue_ref[1]}',
                    attributes={"queue_path": queue_ref[1], "queue_cluster": queue_ref[0]},
                )
            if offset is None:
                offset = stored_offset(state, consumer_node, queue, queue_ref[1], partition_index, None)
        queue_path = queue_ref[1]
        node = state.dynamic_table(queue_path)
        table = node.table
        assert table is not None
        if offset is None:
            raise YtError('Missing required parameter "offset"')
        if not table.ordered:
            raise YtError(f"Table {node.path} is not ordered")
        tablet = tablet_checks.tablet_at(node, partition_index)
        if offset < 0:
            raise YtError(f"Cannot read table {node.path} at a negative offset {offset}", attributes={"offset": offset})
        tablet_checks.validate_mounted(node, tablet, write=False)
        count = DEFAULT_MAX_ROW_COUNT if max_row_count is None else int(max_row_count)
        if count <= 0:
            raise YtError(f'"max_row_count" must be positive, got {count}')
        if data_weight_per_row_hint:
            weight = DEFAULT_MAX_DATA_WEIGHT if max_data_weight is None else int(max_data_weight)
            count = min(count, max(1, weight // max(1, int(data_weight_per_row_hint))))
        begin = max(int(offset), tablet.trimmed_row_count)
        end = min(begin + count, tablet.total_row_count)
        table_id = node.id
        index = tablet.index
        names = [c.bname for c in table.schema.data_columns]
        weighers = table.schema.weighers
        extra = ordered.system_columns_weight(table.schema)
        any_columns = [c.bname for c in table.schema.columns if c.type == "any"]
        # The ordered store's read schema: $tablet_index, $row_index, then the table's columns in schema order.
        order = [TABLET_INDEX, ROW_INDEX, *(c.bname for c in table.schema.columns)]
    if begin < end:
        limit = DEFAULT_MAX_DATA_WEIGHT if max_data_weight is None else int(max_data_weight)
        end = _data_weight_end(state, table_id, index, begin, end, limit, names, weighers, extra)
    parameters = {"start_row_index": begin if begin < end else int(offset)}
    if fmt.name == "web_json":
        batches = (
            [
                {name: row.get(name) for name in order}
                for row in (loads_fragment(data) if data is not None else rows or [])
            ]
            for data, rows in ordered.read_slices(state.storage, table_id, index, begin, end)
        )
        return web_json_stream(batches, fmt, any_columns), parameters
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
    extra: int = 0,
) -> int:
    """The end of the prefix of ``[begin, end)`` whose data weight first reaches ``limit`` (at least one row).

    A row weighs as stored (``extra``: the system columns, see ``ordered.system_columns_weight``).

    A row's data weight never exceeds twice its stored binary YSON size, so small ranges skip the per-row work.
    """
    stored = sum(len(data) for _, _, data in state.storage.read_chunks(table_id, tablet, begin, end))
    if 2 * stored < limit:
        return end
    remaining = limit
    position = begin
    for row in ordered.read_rows(state.storage, table_id, tablet, begin, end):
        remaining -= row_data_weight(row, names, weighers) + extra
        position += 1
        if remaining <= 0:
            break
    return position


#: Rows a ``schemaful_dsv`` pull writes at once: its columnar writer pays a fixed cost per call, and stored chunks hold
#: about a thousand rows each. The lines are the same written in one call or several.
DSV_WRITE_ROWS = 16384


def _encode_slices(state: State, table_id: str, tablet: int, begin: int, end: int, fmt: Format) -> Iterator[bytes]:
    binary = fmt.is_binary_yson
    if fmt.name == "schemaful_dsv":
        yield from _encode_dsv_slices(state, table_id, tablet, begin, end, fmt)
        return
    for data, rows in ordered.read_slices(state.storage, table_id, tablet, begin, end):
        if data is not None and binary:
            yield data
        elif data is not None:
            yield dumps_rows(loads_fragment(data), fmt)
        elif rows:
            yield dumps_rows(rows, fmt)


def _encode_dsv_slices(state: State, table_id: str, tablet: int, begin: int, end: int, fmt: Format) -> Iterator[bytes]:
    """The rows ``[begin, end)`` in ``schemaful_dsv``, written :data:`DSV_WRITE_ROWS` rows or more at a time."""
    buffer: list[dict[bytes, Any]] = []
    for data, rows in ordered.read_slices(state.storage, table_id, tablet, begin, end):
        buffer.extend(loads_fragment(data) if data is not None else rows or [])
        if len(buffer) >= DSV_WRITE_ROWS:
            yield dumps_rows(buffer, fmt)
            buffer = []
    if buffer:
        yield dumps_rows(buffer, fmt)


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
    """``advance_consumer``: optional compare-and-set on ``old_offset`` (error 3100), then an upsert.

    Server-side (``client_side=%false``, ``TNativeTransaction::AdvanceConsumer``) first resolves the queue ("Failed
    to resolve queue path") and writes its resolved path (a link's target); no registration is required. The
    client-side form writes the queue path as given.
    """
    consumer_path = state.local_path(consumer)
    queue_path = normalize(queue)
    if not client_side and (queue.cluster or state.cluster_name) == state.cluster_name:
        with state.lock:
            try:
                queue_path = state.cypress.resolve_table(queue_path).path
            except YtError as exc:
                raise YtError("Failed to resolve queue path", inner_errors=[exc]) from None
    if new_offset < 0:
        raise YtError(f"Queue consumer offset {new_offset} cannot be negative", attributes={"offset": new_offset})
    if partition_index < 0:
        raise YtError(f"Invalid partition index {partition_index}")

    def apply(target: Transaction) -> None:
        node = state.dynamic_table(consumer_path)
        has_meta = consumer_schema_kind(node)
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
    """``{offset_timestamp, cumulative_data_weight}`` of the rows at ``offset`` / ``offset - 1`` (each when the
    row and its column exist), or null when the queue is unknown here or neither row exists
    (``TGenericConsumerClient::GetConsumerMeta``)."""
    if queue.cluster not in (None, state.cluster_name):
        return None
    node = _find_table(state, queue_path)
    if node is None or node.table is None or not node.table.ordered or not node.table.dynamic:
        return None
    if partition_index >= len(node.table.tablets):
        return None
    schema = node.table.schema
    tablet = node.table.tablets[partition_index]
    first = max(offset - 1, tablet.trimmed_row_count, 0)
    rows = {
        int(row[b"$row_index"]): row
        for row in ordered.read_rows(state.storage, node.id, tablet.index, first, offset + 1)
        if int(row[b"$row_index"]) >= first
    }
    if not rows:
        return None
    meta: dict[bytes, Any] = {}
    if schema.has_timestamp and offset in rows:
        meta[b"offset_timestamp"] = rows[offset].get(b"$timestamp")
    if schema.has_cumulative_data_weight and offset - 1 in rows:
        meta[b"cumulative_data_weight"] = rows[offset - 1].get(b"$cumulative_data_weight")
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
