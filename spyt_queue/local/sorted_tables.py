"""Sorted dynamic tables: multi-version rows keyed by an order-preserving key encoding.

Every committed write adds a version ``(key, commit_ts, row or tombstone)``; reads pick the newest version at or
below their timestamp, so a tablet transaction reads the snapshot at its start timestamp. Versions no live
transaction can see any more are garbage-collected on the next write of the key.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import yt.yson as yson

from spyt_queue.local.errors import SCHEMA_VIOLATION, TRANSACTION_LOCK_CONFLICT, YtError
from spyt_queue.local.formats import dumps_value
from spyt_queue.local.schema import TableSchema, coerce_key_value, encode_key
from spyt_queue.local.storage import Storage


def key_of(schema: TableSchema, row: dict[bytes, Any]) -> bytes:
    """The encoded key of a (validated) row."""
    return encode_key([row.get(c.bname) for c in schema.key_columns])


def normalize_key_row(schema: TableSchema, row: dict[bytes, Any]) -> list[Any]:
    """Key values of a lookup/delete row coerced to the key column types."""
    return [coerce_key_value(c, row.get(c.bname)) for c in schema.key_columns]


def decode_row(value: bytes) -> dict[bytes, Any]:
    """A stored row."""
    return yson.loads(value, encoding=None, always_create_attributes=False)


def lookup(storage: Storage, table_id: str, key: bytes, ts: int) -> dict[bytes, Any] | None:
    """The row with ``key`` visible at ``ts``."""
    version = storage.latest_version(table_id, key, ts)
    if version is None or version[1] is None:
        return None
    return decode_row(version[1])


def scan(storage: Storage, table_id: str, ts: int, prefix: bytes | None = None) -> Iterator[dict[bytes, Any]]:
    """Rows visible at ``ts`` in key order (optionally only keys starting with ``prefix``)."""
    upper = prefix + b"\xff" if prefix is not None else None
    for _key, value in storage.scan_versions(table_id, ts, prefix, upper):
        yield decode_row(value)


def check_conflict(
    conn: sqlite3.Connection, storage: Storage, table_id: str, path: str, key: bytes, start_ts: int, tx_id: str
) -> None:
    """Error 1700 if the key was committed by another transaction after ``start_ts``."""
    latest = storage.latest_commit_ts(conn, table_id, key)
    if latest > start_ts:
        raise YtError(
            "Row lock conflict due to concurrent write",
            code=TRANSACTION_LOCK_CONFLICT,
            attributes={
                "table_path": path,
                "conflicted_transaction_id": tx_id,
                "winner_transaction_commit_timestamp": latest,
                "transaction_start_timestamp": start_ts,
                "lock": "primary",
            },
        )


def apply_write(
    conn: sqlite3.Connection,
    table_id: str,
    path: str,
    schema: TableSchema,
    key: bytes,
    row: dict[bytes, Any] | None,
    update: bool,
    commit_ts: int,
    horizon: int,
) -> None:
    """Store a new version of ``key`` at ``commit_ts`` (``row=None`` deletes), then collect old versions.

    ``horizon``: the oldest snapshot a live transaction may read; versions hidden below it are dropped.
    """
    if row is None:
        value = None
    else:
        base: dict[bytes, Any] = {}
        if update:
            current = conn.execute(
                "SELECT value FROM versions WHERE table_id = ? AND key = ? ORDER BY ts DESC LIMIT 1", (table_id, key)
            ).fetchone()
            if current is not None and current[0] is not None:
                base = decode_row(current[0])
        full = {c.bname: base.get(c.bname) for c in schema.columns}
        full.update({k: v for k, v in row.items() if k in full})
        for column in schema.columns:
            if column.required and full.get(column.bname) is None:
                raise YtError(
                    f"Missing required column {column.name!r}",
                    code=SCHEMA_VIOLATION,
                    attributes={"table_path": path, "column": column.name},
                )
        value = dumps_value(full)
    conn.execute(
        "INSERT OR REPLACE INTO versions (table_id, key, ts, value) VALUES (?, ?, ?, ?)",
        (table_id, key, commit_ts, value),
    )
    conn.execute(
        "DELETE FROM versions WHERE table_id = ? AND key = ? AND ts < "
        "(SELECT max(ts) FROM versions WHERE table_id = ? AND key = ? AND ts <= ?)",
        (table_id, key, table_id, key, horizon),
    )
    if value is None and horizon >= commit_ts:
        conn.execute("DELETE FROM versions WHERE table_id = ? AND key = ?", (table_id, key))


def project(row: dict[bytes, Any], columns: list[bytes]) -> dict[bytes, Any]:
    """A row restricted to ``columns`` (in that order)."""
    return {name: row.get(name) for name in columns}
