"""Row mutations that the Kudu planners produce and the Kudu sink applies (pure Python, no Kudu import).

A :class:`Mutation` is one Kudu write operation on one row:

* ``INSERT``: the row must not exist yet (Kudu answers ``AlreadyPresent`` otherwise).
* ``UPDATE``: the row must exist (Kudu answers ``NotFound`` otherwise); only the columns present in ``row`` are set.
* ``UPSERT``: insert, or set the columns present in ``row`` on the existing row.
* ``DELETE``: remove the row; ``row`` needs only the primary-key columns.

``row`` always carries every primary-key column. A column absent from ``row`` is left unset (its default on insert,
unchanged on update); a column present with the value ``None`` is written as NULL. Planners emit at most one
mutation per primary key and task, so the order of mutations within a task does not matter for the result.

:func:`apply` computes the table state that a list of mutations produces from a given state, with Kudu's
per-operation rules; tests use it to check that a replayed batch is a no-op and to compute expected states
independently of a real Kudu.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from spyt_queue.errors import BadRecordError

Row = Mapping[str, Any]
"""One table row: column name -> Python value (``None`` = NULL)."""

Key = tuple[Any, ...]
"""The values of some key columns of one row, in the order of the column list."""


class MutationKind(str, enum.Enum):
    """The Kudu operation of a :class:`Mutation`; compares equal to its lower-case name (``"insert"``...)."""

    INSERT = "insert"
    UPDATE = "update"
    UPSERT = "upsert"
    DELETE = "delete"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Mutation:
    """One write operation on one row; ``row`` is copied into a read-only mapping."""

    kind: MutationKind
    row: Row

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", MutationKind(self.kind))
        object.__setattr__(self, "row", MappingProxyType(dict(self.row)))

    @classmethod
    def owned(cls, kind: MutationKind, row: dict[str, Any]) -> Mutation:
        """A mutation over ``row`` itself, not a copy: for a planner that built ``row`` and hands it over."""
        mutation = object.__new__(cls)
        object.__setattr__(mutation, "kind", kind)
        object.__setattr__(mutation, "row", MappingProxyType(row))
        return mutation

    def __repr__(self) -> str:
        return f"Mutation({self.kind.value}, {dict(self.row)!r})"


class KeyConflictError(BadRecordError):
    """A row conflicts with the table state (an insert of an existing key, an update of a missing one, or an
    ``append`` of a different value under an existing key); the message names the key."""


def key_of(row: Row, columns: Sequence[str]) -> Key:
    """The values of ``columns`` in ``row`` as a hashable tuple (``bytearray``, which Spark gives for BINARY, becomes
    ``bytes``); a missing column is a :class:`BadRecordError`."""
    try:
        if len(columns) == 1:  # the common case, without a generator per row
            v = row[columns[0]]
            return (bytes(v) if isinstance(v, bytearray) else v,)
        return tuple(bytes(v) if isinstance(v, bytearray) else v for v in (row[c] for c in columns))
    except KeyError as exc:
        raise BadRecordError(f"Row {dict(row)!r} has no key column {exc.args[0]!r}") from None


def format_key(columns: Sequence[str], key: Key) -> str:
    """``a=1, b='x'``: a key for error messages."""
    return ", ".join(f"{c}={v!r}" for c, v in zip(columns, key, strict=True))


def same_value(a: Any, b: Any) -> bool:
    """Equality for change detection: NULL equals NULL, NaN equals NaN, otherwise ``==``."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def apply(existing: Iterable[Row], mutations: Iterable[Mutation], primary_key: Sequence[str]) -> list[dict[str, Any]]:
    """The rows a table holds after applying ``mutations`` in order to ``existing``, sorted by primary key.

    Follows Kudu's rules: INSERT of a present key and UPDATE/DELETE of a missing key raise
    :class:`KeyConflictError`; UPDATE and UPSERT set only the columns present in the mutation. ``existing`` and the
    result are lists of plain dicts; the inputs are not modified.
    """
    table: dict[Key, dict[str, Any]] = {}
    for row in existing:
        table[key_of(row, primary_key)] = dict(row)
    for m in mutations:
        k = key_of(m.row, primary_key)
        where = format_key(primary_key, k)
        if m.kind is MutationKind.INSERT:
            if k in table:
                raise KeyConflictError(f"INSERT of an existing row ({where})")
            table[k] = dict(m.row)
        elif m.kind is MutationKind.UPDATE:
            if k not in table:
                raise KeyConflictError(f"UPDATE of a missing row ({where})")
            table[k].update(m.row)
        elif m.kind is MutationKind.UPSERT:
            table.setdefault(k, {}).update(m.row)
        else:
            if k not in table:
                raise KeyConflictError(f"DELETE of a missing row ({where})")
            del table[k]
    return [table[k] for k in sorted(table, key=_sort_key)]


def _sort_key(key: Key) -> tuple[tuple[bool, str, Any], ...]:
    # NULL-safe and type-safe ordering for the result of apply() (keys of mixed types sort by type name first).
    return tuple((v is not None, type(v).__name__, v if v is not None else 0) for v in key)
