"""``alter_table(schema=...)`` of dynamic tables: the checks of ``ValidateTableSchemaUpdateInternal``
(``yt/yt/client/table_client/schema_validation.cpp``) and the rewrite of stored rows a new column needs.

What a schema update may do, as YTsaurus allows it on a non-empty table: add value columns (not required), add key
columns at the end of the key of a sorted table (not required), widen a column's type (an integer type to a wider
one of the same signedness, a required type to its optional), drop ``sort_order`` of no column. Removing a column,
changing ``strict``/``unique_keys`` from false to true, moving a key column, turning sorted into ordered or back
are refused with YTsaurus's messages (316 ``Table schemas are incompatible`` wrapping the reason). Type changes
YTsaurus accepts beyond those widenings (``CheckTypeCompatibility`` of composite types: new struct members,
variant alternatives ...) are refused here with "not supported by ytqueue local".

Stored rows follow: a new column of an ordered table is written as null into every stored row (so pulls and
``select_rows`` return it as null, as a cluster's schemaful readers do); a new key column of a sorted table is
appended to every stored key as null (``encode_key`` of ``[k..., null]`` is the old key plus one byte).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from spyt_queue.local.errors import INVALID_TABLET_STATE, YtError
from spyt_queue.local.formats import dumps_fragment, loads_fragment
from spyt_queue.local.schema import SYSTEM_COLUMNS_ORDERED, Column, TableSchema

INCOMPATIBLE_SCHEMAS = 316
INVALID_SCHEMA_VALUE = 314

_WIDER = {
    "int8": ("int16", "int32", "int64"),
    "int16": ("int32", "int64"),
    "int32": ("int64",),
    "uint8": ("uint16", "uint32", "uint64"),
    "uint16": ("uint32", "uint64"),
    "uint32": ("uint64",),
}


def _quoted(column: Column) -> str:
    return f'"{column.name}"'


def _type_compatible(old: Any, new: Any) -> bool:
    """``CheckTypeCompatibility(old, new) == FullyCompatible`` for the types the server models."""
    if old == new:
        return True
    if isinstance(new, dict) and new.get("type_name") == "optional":
        inner = new.get("item")
        if _type_compatible(old, inner):  # T -> optional<T> (and a widened T)
            return True
        if isinstance(old, dict) and old.get("type_name") == "optional":
            return _type_compatible(old.get("item"), inner)
        return False
    if isinstance(old, str) and isinstance(new, str):
        return new in _WIDER.get(old, ())
    return False


def _incompatible(old: TableSchema, new: TableSchema, message: str, code: int = 1) -> YtError:
    return YtError(
        "Table schemas are incompatible",
        code=INCOMPATIBLE_SCHEMAS,
        attributes={"old_schema": old.to_yson(), "new_schema": new.to_yson()},
        inner_errors=[YtError(message, code=code)],
    )


def validate_update(old: TableSchema, new: TableSchema, empty: bool) -> None:
    """``ValidateTableSchemaUpdateInternal`` for a dynamic table (``new`` already passed ``TableSchema.parse``)."""
    if empty and old.sorted == new.sorted:
        return  # any valid schema may be set on an empty table
    if old.sorted != new.sorted:  # empty or not (test_disallowed_dynamic_table_alter)
        raise _incompatible(old, new, "Cannot change dynamic table type from sorted to ordered or vice versa")
    if not old.strict and new.strict:
        raise _incompatible(old, new, 'Changing "strict" from "false" to "true" is not allowed')
    if not old.unique_keys and new.unique_keys:
        raise _incompatible(old, new, 'Changing "unique_keys" from "false" to "true" is not allowed')
    for column in old.columns:
        if column.name not in new.by_name:
            raise _incompatible(old, new, f"Cannot remove column {_quoted(column)} from a strict schema")
    for index, column in enumerate(old.columns):
        updated = new.by_name[column.name]
        if not _type_compatible(column.type_v3, updated.type_v3):
            raise _incompatible(old, new, f"Type mismatch for column {_quoted(column)}", INCOMPATIBLE_SCHEMAS)
        if updated.sort_order and updated.sort_order != column.sort_order:
            raise _incompatible(
                old,
                new,
                f'Sort order mismatch for column {_quoted(column)}: old "{column.sort_order or "none"}", '
                f'new "{updated.sort_order}"',
                INCOMPATIBLE_SCHEMAS,
            )
        if column.sort_order and not updated.sort_order:
            raise YtError(f"Making key column {_quoted(column)} a value column is not supported by ytqueue local")
        if column.sort_order and new.columns.index(updated) != index:
            raise _incompatible(
                old,
                new,
                f"Cannot change position of a key column {_quoted(column)}: old {index}, new "
                f"{new.columns.index(updated)}",
            )
    for column in new.columns:
        if column.name not in old.by_name and column.required:
            message = f"Cannot insert a new required column {_quoted(column)} into a non-empty table"
            raise _incompatible(old, new, message)


def new_ordered_columns(old: TableSchema, new: TableSchema) -> list[bytes]:
    """Data columns of ``new`` an ordered table's stored rows do not have yet."""
    return [c.bname for c in new.data_columns if c.name not in old.by_name]


def add_null_columns(conn: sqlite3.Connection, table_id: str, names: list[bytes], order: list[bytes]) -> None:
    """Write ``names`` as null into every stored row of an ordered table, keeping the schema's column order
    (``order``: the new schema's data columns) before the system columns."""
    if not names:
        return
    system = [name.encode() for name in SYSTEM_COLUMNS_ORDERED]
    updates = []
    for tablet, first_row, data in conn.execute(
        "SELECT tablet, first_row, data FROM chunks WHERE table_id = ?", (table_id,)
    ).fetchall():
        rows = []
        for row in loads_fragment(bytes(data)):
            rebuilt = {k: v for k, v in row.items() if k.startswith(b"$") and k not in system}
            for name in order:
                rebuilt[name] = row.get(name)
            rebuilt.update({k: row[k] for k in system if k in row})
            rows.append(rebuilt)
        updates.append((dumps_fragment(rows), table_id, tablet, first_row))
    conn.executemany("UPDATE chunks SET data = ? WHERE table_id = ? AND tablet = ? AND first_row = ?", updates)


def extend_sorted_keys(conn: sqlite3.Connection, table_id: str, added_key_columns: int) -> None:
    """Append a null component per new key column to every stored key of a sorted table."""
    if not added_key_columns:
        return
    suffix = b"\x00" * added_key_columns
    rows = conn.execute("SELECT key, ts FROM versions WHERE table_id = ?", (table_id,)).fetchall()
    conn.executemany(
        "UPDATE versions SET key = ? WHERE table_id = ? AND key = ? AND ts = ?",
        [(bytes(key) + suffix, table_id, key, ts) for key, ts in rows],
    )


def require_unmounted(path: str, states: list[str]) -> None:
    """The master's check: a dynamic table's schema changes only with every tablet unmounted."""
    if any(state != "unmounted" for state in states):
        raise YtError(
            'Cannot change table schema since not all of its tablets are in "unmounted" state',
            code=INVALID_TABLET_STATE,
            attributes={"path": path},
        )


__all__ = ["add_null_columns", "extend_sorted_keys", "new_ordered_columns", "require_unmounted", "validate_update"]
