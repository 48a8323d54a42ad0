"""Ordered dynamic tables (queues): rows stored as pre-encoded binary YSON chunks per tablet.

Each stored row already carries ``$tablet_index`` and ``$row_index`` (plus ``$timestamp`` and
``$cumulative_data_weight`` when the schema has them), so a binary-YSON read of whole chunks is byte
concatenation; only a chunk cut by the requested range is decoded and re-encoded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import yt.yson as yson

from spyt_queue.local.cypress import Tablet
from spyt_queue.local.formats import dumps_fragment, loads_fragment
from spyt_queue.local.schema import ROW_INDEX, TABLET_INDEX, TableSchema, row_data_weight
from spyt_queue.local.storage import Storage

CHUNK_ROWS = 1024
CHUNK_BYTES = 1 << 20
TIMESTAMP = b"$timestamp"
CUMULATIVE_DATA_WEIGHT = b"$cumulative_data_weight"


def persist_tablet(conn: sqlite3.Connection, table_id: str, tablet: Tablet) -> None:
    """Write a tablet's counters and state."""
    conn.execute(
        "INSERT OR REPLACE INTO tablets (table_id, tablet, state, total_row_count, trimmed_row_count, "
        "last_write_ts, cumulative_data_weight) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            table_id,
            tablet.index,
            tablet.state,
            tablet.total_row_count,
            tablet.trimmed_row_count,
            tablet.last_write_ts,
            tablet.cumulative_data_weight,
        ),
    )


def append(
    conn: sqlite3.Connection,
    storage: Storage,
    table_id: str,
    tablet: Tablet,
    schema: TableSchema,
    rows: list[dict[bytes, Any]],
    commit_ts: int,
) -> None:
    """Append validated rows to a tablet at commit: assign row indexes, stamp system columns, store chunks."""
    if not rows:
        return
    names = [c.bname for c in schema.data_columns]
    if sum(map(len, rows)) != len(rows) * len(names) or any(n not in rows[0] for n in names):
        for row in rows:
            for name in names:
                if name not in row:
                    row[name] = None
    first = tablet.total_row_count
    index = tablet.index
    for offset, row in enumerate(rows):
        row[TABLET_INDEX] = index
        row[ROW_INDEX] = first + offset
    if schema.has_timestamp:
        stamp = yson.YsonUint64(commit_ts)
        for row in rows:
            row[TIMESTAMP] = stamp
    if schema.has_cumulative_data_weight:
        total = tablet.cumulative_data_weight
        extra = system_columns_weight(schema)
        for row in rows:
            total += row_data_weight(row, names, schema.weighers) + extra
            row[CUMULATIVE_DATA_WEIGHT] = total
        tablet.cumulative_data_weight = total
    position = 0
    last = tablet.last_chunk
    if last is None:
        last = storage.last_chunk(table_id, index) or ()
    if last and last[1] < CHUNK_ROWS and len(last[2]) < CHUNK_BYTES and last[0] + last[1] == first:
        take = min(CHUNK_ROWS - last[1], len(rows))
        data = last[2] + dumps_fragment(rows[:take])
        conn.execute(
            "UPDATE chunks SET row_count = ?, data = ? WHERE table_id = ? AND tablet = ? AND first_row = ?",
            (last[1] + take, data, table_id, index, last[0]),
        )
        last = (last[0], last[1] + take, data)
        position = take
    while position < len(rows):
        group = rows[position : position + CHUNK_ROWS]
        for chunk_first, chunk_rows, data in _encode(group, first + position):
            conn.execute(
                "INSERT INTO chunks (table_id, tablet, first_row, row_count, data) VALUES (?, ?, ?, ?, ?)",
                (table_id, index, chunk_first, chunk_rows, data),
            )
            last = (chunk_first, chunk_rows, data)
        position += len(group)
    tablet.last_chunk = last
    tablet.total_row_count = first + len(rows)
    tablet.last_write_ts = commit_ts
    persist_tablet(conn, table_id, tablet)


def _encode(rows: list[dict[bytes, Any]], first_row: int) -> Iterator[tuple[int, int, bytes]]:
    data = dumps_fragment(rows)
    if len(data) <= CHUNK_BYTES or len(rows) == 1:
        yield first_row, len(rows), data
        return
    half = len(rows) // 2
    yield from _encode(rows[:half], first_row)
    yield from _encode(rows[half:], first_row + half)


def read_slices(
    storage: Storage, table_id: str, tablet: int, begin: int, end: int
) -> Iterator[tuple[bytes | None, list[dict[bytes, Any]] | None]]:
    """Rows ``[begin, end)`` of a tablet as ``(whole_chunk_bytes, None)`` or ``(None, decoded_rows)``."""
    if begin >= end:
        return
    for first_row, row_count, data in storage.read_chunks(table_id, tablet, begin, end):
        if first_row >= begin and first_row + row_count <= end:
            yield bytes(data), None
        else:
            rows = loads_fragment(bytes(data))
            lo = max(begin - first_row, 0)
            hi = min(end - first_row, row_count)
            if lo < hi:
                yield None, rows[lo:hi]


def read_rows(storage: Storage, table_id: str, tablet: int, begin: int, end: int) -> Iterator[dict[bytes, Any]]:
    """Decoded rows ``[begin, end)`` of a tablet."""
    for data, rows in read_slices(storage, table_id, tablet, begin, end):
        yield from (loads_fragment(data) if data is not None else rows or [])


def first_available(storage: Storage, table_id: str, tablet: Tablet, begin: int) -> int:
    """The first row index at or after ``begin`` that is stored (trimmed rows are skipped)."""
    start = max(begin, tablet.trimmed_row_count)
    row = storage.reader.execute(
        "SELECT min(first_row) FROM chunks WHERE table_id = ? AND tablet = ? AND first_row + row_count > ?",
        (table_id, tablet.index, start),
    ).fetchone()
    if row is None or row[0] is None:
        return max(start, tablet.total_row_count) if start >= tablet.total_row_count else start
    return max(start, int(row[0]))


def system_columns_weight(schema: TableSchema) -> int:
    """The data weight the stored system columns add to each row: 8 for ``$timestamp`` and 8 for
    ``$cumulative_data_weight`` when the schema has them (``TOrderedDynamicStore::WriteRow`` weighs the stored row,
    with both filled in)."""
    return 8 * schema.has_timestamp + 8 * schema.has_cumulative_data_weight


def trim(conn: sqlite3.Connection, table_id: str, tablet: Tablet, trimmed_row_count: int) -> None:
    """Trim a tablet to ``trimmed_row_count`` rows and drop chunks entirely below it."""
    if trimmed_row_count <= tablet.trimmed_row_count:
        return
    tablet.trimmed_row_count = trimmed_row_count
    conn.execute(
        "DELETE FROM chunks WHERE table_id = ? AND tablet = ? AND first_row + row_count <= ?",
        (table_id, tablet.index, trimmed_row_count),
    )
    if tablet.last_chunk and tablet.last_chunk[0] + tablet.last_chunk[1] <= trimmed_row_count:
        tablet.last_chunk = ()
    persist_tablet(conn, table_id, tablet)
