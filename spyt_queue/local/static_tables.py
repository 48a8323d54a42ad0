"""Static-table data: ``write_table``, ``read_table``, ``alter_table`` (dynamic <-> static), ``concatenate``, ``copy``.

A static table's rows are stored like one ordered tablet (index 0, ``TableMeta.static_tablet``), so making an
unsorted static table dynamic keeps its rows in place. Its chunks are listed as ``[chunk_id, row_count]``
(one per ``write_table``; ``concatenate`` joins the sources' lists, so a table concatenated with itself lists one
chunk twice and cannot be mounted once dynamic, as in YTsaurus). A dynamic ordered table's tablets list their
flushed chunks (``Tablet.chunks``); a conversion to static keeps every chunk not fully trimmed, whole, as the
master keeps a chunk until all its rows are trimmed. Sorted static tables are not stored.
"""

from __future__ import annotations

from typing import Any

from spyt_queue.local import ordered, schema_update
from spyt_queue.local.cypress import Node, TableMeta, Tablet
from spyt_queue.local.errors import YtError
from spyt_queue.local.schema import ROW_INDEX, TABLET_INDEX, TableSchema
from spyt_queue.local.state import State

SYSTEM = (TABLET_INDEX, ROW_INDEX)


def _static_table(state: State, path: str) -> Node:
    node = state.cypress.resolve_table(path)
    table = node.table
    assert table is not None
    if table.dynamic:
        raise YtError(
            f"Cannot write to dynamic table {node.path} with write_table; use insert_rows (or alter it to static)",
            attributes={"path": node.path},
        )
    if table.schema.sorted:
        raise YtError(
            f"Table {node.path} has a sorted schema: the local server stores static tables with unsorted schemas only",
            attributes={"path": node.path},
        )
    return node


def _storage_tablet(table: TableMeta) -> Tablet:
    if table.static_tablet is None:
        table.static_tablet = Tablet(0, "", last_chunk=())
    return table.static_tablet


def _store(state: State, conn: Any, node: Node, rows: list[dict[bytes, Any]], chunks: list[list[Any]]) -> None:
    """Replace a static table's rows and chunk list (rows renumbered from 0)."""
    table = node.table
    assert table is not None
    conn.execute("DELETE FROM chunks WHERE table_id = ?", (node.id,))
    conn.execute("DELETE FROM tablets WHERE table_id = ?", (node.id,))
    table.static_tablet = Tablet(0, "", last_chunk=())
    table.chunks = chunks
    cleaned = [{k: v for k, v in row.items() if k not in SYSTEM} for row in rows]
    if cleaned:
        ordered.append(conn, state.storage, node.id, table.static_tablet, table.schema, cleaned, 0)
    else:
        ordered.persist_tablet(conn, node.id, table.static_tablet)
    state.cypress.persist(conn, node)


def _static_rows(state: State, node: Node) -> list[dict[bytes, Any]]:
    table = node.table
    assert table is not None
    tablet = table.static_tablet
    if tablet is None:
        return []
    return list(ordered.read_rows(state.storage, node.id, 0, 0, tablet.total_row_count))


def write_table(state: State, path: str, rows: list[dict[bytes, Any]], append: bool, complex_type_mode: str) -> None:
    """``write_table`` (``<append=%true>`` appends; otherwise the table's rows are replaced). One chunk per call."""
    with state.lock:
        node = _static_table(state, path)
        table = node.table
        assert table is not None
        if table.schema.columns or table.schema.strict:
            table.schema.validate_rows(rows, node.path, ordered=True, complex_type_mode=complex_type_mode)
        with state.storage.transaction() as conn:
            if not append:
                _store(state, conn, node, [], [])
            if rows:
                tablet = _storage_tablet(table)
                ordered.append(conn, state.storage, node.id, tablet, table.schema, rows, 0)
                table.chunks.append([state.new_chunk_id(), len(rows)])
            state.cypress.persist(conn, node)


def read_table(state: State, path: str) -> list[dict[bytes, Any]]:
    """``read_table`` of a static table or of an ordered dynamic table (its tablets' kept rows, in tablet order)."""
    with state.lock:
        node = state.cypress.resolve_table(path)
        table = node.table
        assert table is not None
        if not table.dynamic:
            rows = _static_rows(state, node)
        elif table.ordered:
            rows = []
            for tablet in table.tablets:
                begin = ordered.first_available(state.storage, node.id, tablet, 0)
                rows.extend(ordered.read_rows(state.storage, node.id, tablet.index, begin, tablet.total_row_count))
        else:
            raise YtError(
                f"read_table of sorted dynamic table {node.path} is not supported by ytqueue local; use select_rows"
            )
        names = [c.bname for c in table.schema.columns]
        if names and table.schema.strict:
            return [{name: row.get(name) for name in names} for row in rows]
        return [{k: v for k, v in row.items() if k not in SYSTEM} for row in rows]


def alter_table(state: State, path: str, dynamic: bool | None, schema: Any = None) -> None:
    """``alter_table(dynamic=..., schema=...)``: an unmounted ordered dynamic table becomes static (chunks not fully
    trimmed kept whole), an unsorted static table with a strict schema becomes an unmounted one-tablet ordered
    table; ``schema`` changes the schema of an unmounted dynamic table (``schema_update``)."""
    with state.lock, state.storage.transaction() as conn:
        node = state.cypress.resolve_table(path)
        table = node.table
        assert table is not None
        if schema is not None:
            _alter_schema(state, conn, node, schema, dynamic)
        if dynamic is None or bool(dynamic) == table.dynamic:
            return
        if not dynamic:
            if not table.ordered:
                raise YtError(f"Converting sorted dynamic table {node.path} to static is not supported locally")
            mounted = [t for t in table.tablets if t.state != "unmounted"]
            if mounted:
                raise YtError(
                    f"Cannot switch table {node.path} to static mode since not all of its tablets are unmounted",
                    attributes={"tablet_id": mounted[0].tablet_id},
                )
            rows: list[dict[bytes, Any]] = []
            chunks: list[list[Any]] = []
            for tablet in table.tablets:
                kept = [c for c in tablet.chunks if int(c[1]) + int(c[2]) > tablet.trimmed_row_count]
                start = int(kept[0][1]) if kept else tablet.total_row_count
                stored = list(ordered.read_rows(state.storage, node.id, tablet.index, start, tablet.total_row_count))
                rows.extend(stored)
                chunks.extend([c[0], int(c[2])] for c in kept)
            table.dynamic = False
            table.tablets = []
            _store(state, conn, node, rows, chunks)
            return
        if table.schema.sorted:
            raise YtError(f"Converting sorted static table {node.path} to dynamic is not supported locally")
        TableSchema.parse(table.schema.to_yson(), dynamic=True)  # the checks a dynamic table's schema must pass
        tablet = table.static_tablet or Tablet(0, "", last_chunk=())
        tablet.index = 0
        tablet.tablet_id = state._tablet_id(node.id, 0)
        tablet.state = "unmounted"
        tablet.last_chunk = None
        first = 0
        tablet.chunks = []
        for chunk_id, count in table.chunks:
            tablet.chunks.append([chunk_id, first, int(count)])
            first += int(count)
        table.dynamic = True
        table.tablets = [tablet]
        table.static_tablet = None
        table.chunks = []
        ordered.persist_tablet(conn, node.id, tablet)
        state.cypress.persist(conn, node)


def _alter_schema(state: State, conn: Any, node: Node, schema: Any, dynamic: bool | None) -> None:
    table = node.table
    assert table is not None
    if not table.dynamic or dynamic is not None:
        raise YtError('alter_table "schema" of a static table is not supported by ytqueue local')
    new = TableSchema.parse(schema, dynamic=True)
    schema_update.require_unmounted(node.path, [t.state for t in table.tablets])
    old = table.schema
    if table.ordered:
        empty = all(t.total_row_count == 0 for t in table.tablets)
    else:
        empty = conn.execute("SELECT 1 FROM versions WHERE table_id = ? LIMIT 1", (node.id,)).fetchone() is None
    schema_update.validate_update(old, new, empty)
    if table.ordered:
        added = schema_update.new_ordered_columns(old, new)
        schema_update.add_null_columns(conn, node.id, added, [c.bname for c in new.data_columns])
        for tablet in table.tablets:
            tablet.last_chunk = None
    else:
        schema_update.extend_sorted_keys(conn, node.id, len(new.key_columns) - len(old.key_columns))
    table.schema = new
    state.cypress.persist(conn, node)


def concatenate(state: State, sources: list[str], destination: str, append: bool) -> None:
    """``concatenate``: the destination gets the sources' rows and chunks, in order (after its own with append)."""
    with state.lock:
        target = _static_table(state, destination)
        rows: list[dict[bytes, Any]] = []
        chunks: list[list[Any]] = []
        if append:
            rows.extend(_static_rows(state, target))
            chunks.extend(list(c) for c in target.table.chunks)  # type: ignore[union-attr]
        for source in sources:
            node = _static_table(state, source)
            rows.extend(_static_rows(state, node))
            chunks.extend(list(c) for c in node.table.chunks)  # type: ignore[union-attr]
        with state.storage.transaction() as conn:
            _store(state, conn, target, rows, chunks)


def copy(
    state: State,
    source: str,
    destination: str,
    recursive: bool,
    force: bool,
    ignore_existing: bool,
    attributes: dict[str, Any] | None = None,
) -> str:
    """``copy`` of a table: same schema, attributes (``attributes`` instead when given), rows, tablets (unmounted)
    and chunks. A dynamic table must be unmounted or frozen, as the master requires."""
    with state.lock:
        node = state.cypress.resolve(source)
        table = node.table
        if table is None:
            raise YtError(f"Copying {node.type} nodes is not supported by ytqueue local (only tables)")
        busy = [t for t in table.tablets if t.state not in ("unmounted", "frozen")]
        if table.dynamic and busy:
            raise YtError(
                f"Cannot copy dynamic table {node.path} since not all of its tablets are in either "
                '"unmounted" or "frozen" state',
                attributes={"tablet_id": busy[0].tablet_id},
            )
        meta = TableMeta(
            TableSchema.from_storage(table.schema.to_storage()),
            table.dynamic,
            pivot_keys=list(table.pivot_keys),
            chunks=[list(c) for c in table.chunks],
        )
        with state.storage.transaction() as conn:
            copied, created = state.cypress.create(
                conn,
                "table",
                destination,
                recursive=recursive,
                ignore_existing=ignore_existing,
                force=force,
                attributes=dict(node.attrs) if attributes is None else attributes,
                table=meta,
            )
            if not created:
                return copied.id
            conn.execute(
                "INSERT INTO chunks (table_id, tablet, first_row, row_count, data) "
                "SELECT ?, tablet, first_row, row_count, data FROM chunks WHERE table_id = ?",
                (copied.id, node.id),
            )
            if table.static_tablet is not None:
                meta.static_tablet = _clone(table.static_tablet, 0, "", "unmounted")
                ordered.persist_tablet(conn, copied.id, meta.static_tablet)
            for tablet in table.tablets:
                clone = _clone(tablet, tablet.index, state._tablet_id(copied.id, tablet.index), "unmounted")
                meta.tablets.append(clone)
                ordered.persist_tablet(conn, copied.id, clone)
            state.cypress.persist(conn, copied)
            return copied.id


def _clone(tablet: Tablet, index: int, tablet_id: str, tablet_state: str) -> Tablet:
    return Tablet(
        index,
        tablet_id,
        tablet_state,
        tablet.total_row_count,
        tablet.trimmed_row_count,
        tablet.last_write_ts,
        tablet.cumulative_data_weight,
        None,
        [list(c) for c in tablet.chunks],
    )


__all__ = ["alter_table", "concatenate", "copy", "read_table", "write_table"]
