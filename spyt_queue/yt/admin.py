"""Creating queues, consumers, producers and output tables: what the demo, the benchmarks, users' setup scripts
and the ``ytqueue create-*`` commands need.

Every helper takes a ``yt.wrapper.YtClient`` (``spyt_queue.yt.client.make_yt_client(proxy)`` builds one) and
creates a mounted, ready-to-use dynamic table:

========================================  ===========================================================
``ytqueue`` command                       Python
========================================  ===========================================================
``create-queue PATH --schema S``          ``create_queue(client, path, parse_schema(S), tablet_count)``
``create-consumer PATH --queue Q``        ``create_consumer(client, path, Q, exist_ok=True)``
``create-producer PATH``                  ``create_producer(client, path)``
``create-table PATH --schema S``          ``create_table(client, path, parse_schema(S), sorted_by=...)``
========================================  ===========================================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yt.yson as yson

from spyt_queue.errors import OptionError

# Column types that the compact schema form accepts (composite types need a schema file with ``type_v3``).
SIMPLE_TYPES = (
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float",
    "double",
    "boolean",
    "string",
    "utf8",
    "json",
    "yson",
    "any",
    "uuid",
    "date",
    "datetime",
    "timestamp",
    "interval",
    "date32",
    "datetime64",
    "timestamp64",
    "interval64",
    "null",
    "void",
)
_TYPE_ALIASES = {"bool": "boolean"}


def column(name: str, type_: str, required: bool = False, sort_order: str | None = None) -> dict[str, Any]:
    """One schema column in ``yt.wrapper``'s dict form."""
    entry: dict[str, Any] = {"name": name, "type": type_, "required": required}
    if sort_order:
        entry["sort_order"] = sort_order
    return entry


def parse_schema(spec: str) -> list[dict[str, Any]]:
    """A table schema from its compact form or from a schema file.

    The compact form lists ``name:type`` columns separated by commas, ``:required`` marking a column that may
    not be null: ``"id:int64:required,payload:string"``. Types are YT's simple types (:data:`SIMPLE_TYPES`).
    Anything else is read as the path of a file holding the schema as a JSON or YSON list of columns in
    ``yt.wrapper``'s form (``[{"name": "id", "type": "int64", "required": true}, ...]``, ``type_v3`` for
    composite types). Raises :class:`~spyt_queue.errors.OptionError` naming the column at fault.
    """
    if Path(spec).is_file():
        return _schema_file(Path(spec))
    if ":" not in spec:
        raise OptionError("schema", f"{spec!r} is neither a schema file nor columns like 'id:int64:required,v:string'")
    columns = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        parts = [p.strip() for p in item.split(":")]
        if len(parts) not in (2, 3) or not parts[0] or (len(parts) == 3 and parts[2] != "required"):
            raise OptionError("schema", f"column {item!r}: write it as name:type or name:type:required")
        name, type_ = parts[0], _TYPE_ALIASES.get(parts[1], parts[1])
        if type_ not in SIMPLE_TYPES:
            raise OptionError(
                "schema",
                f"column {name!r} has unknown type {parts[1]!r}: use one of {', '.join(SIMPLE_TYPES)} "
                "(composite types go in a schema file with type_v3)",
            )
        columns.append(column(name, type_, required=len(parts) == 3))
    return _check_columns(columns)


def _schema_file(path: Path) -> list[dict[str, Any]]:
    """A schema list read from a JSON or YSON file."""
    data = path.read_bytes()
    try:
        raw: Any = json.loads(data)
    except ValueError:
        try:
            raw = yson.loads(data)
        except Exception as error:
            raise OptionError("schema", f"{path} is neither JSON nor YSON: {error}") from None
    if not isinstance(raw, list) or not all(isinstance(c, Mapping) for c in raw):
        raise OptionError("schema", f"{path} must hold a list of columns like [{{'name': 'id', 'type': 'int64'}}]")
    return _check_columns([dict(c) for c in raw])


def _check_columns(columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not columns:
        raise OptionError("schema", "no columns given")
    seen: set[str] = set()
    for entry in columns:
        name = entry.get("name")
        if not name or not ("type" in entry or "type_v3" in entry):
            raise OptionError("schema", f"column {entry!r} needs a name and a type (or type_v3)")
        if name in seen:
            raise OptionError("schema", f"column {name!r} is given twice")
        seen.add(name)
    return columns


def sorted_schema(schema: Sequence[dict[str, Any]], sorted_by: Sequence[str]) -> list[dict[str, Any]]:
    """``schema`` with the ``sorted_by`` columns first, in that order, marked ``sort_order=ascending``."""
    by_name = {c["name"]: dict(c) for c in schema}
    missing = [key for key in sorted_by if key not in by_name]
    if missing:
        raise OptionError(
            "sorted_by", f"key column(s) {', '.join(missing)} are not in the schema ({', '.join(by_name)})"
        )
    if len(set(sorted_by)) != len(sorted_by):
        raise OptionError("sorted_by", f"a key column is given twice: {', '.join(sorted_by)}")
    keys = [dict(by_name[key], sort_order="ascending") for key in sorted_by]
    rest = [dict(c) for c in schema if c["name"] not in sorted_by]
    for entry in rest:
        entry.pop("sort_order", None)
    if not rest:
        raise OptionError("sorted_by", "a sorted table needs at least one column besides its keys")
    return keys + rest


def create_queue(client: Any, path: str, schema: Sequence[dict[str, Any]], tablet_count: int = 1) -> None:
    """Create and mount an ordered dynamic table (a queue) with ``tablet_count`` tablets."""
    client.create(
        "table",
        path,
        recursive=True,
        attributes={"dynamic": True, "schema": list(schema), "tablet_count": tablet_count},
    )
    client.mount_table(path, sync=True)


def create_sorted_table(client: Any, path: str, schema: Sequence[dict[str, Any]]) -> None:
    """Create and mount a sorted dynamic table (key columns carry ``sort_order``)."""
    client.create("table", path, recursive=True, attributes={"dynamic": True, "schema": list(schema)})
    client.mount_table(path, sync=True)


def create_table(
    client: Any,
    path: str,
    schema: Sequence[dict[str, Any]],
    sorted_by: Sequence[str] = (),
    tablet_count: int = 1,
) -> None:
    """Create and mount an output table: sorted by ``sorted_by`` (upserts) or, without keys, ordered (appends)."""
    if sorted_by:
        create_sorted_table(client, path, sorted_schema(schema, sorted_by))
    else:
        create_queue(client, path, schema, tablet_count)


def create_consumer(
    client: Any, path: str, queue_path: str | None = None, vital: bool = False, exist_ok: bool = False
) -> None:
    """Create and mount a consumer table and register it for ``queue_path``.

    With ``exist_ok`` an existing consumer is kept and only registered (also the way to register one consumer
    for a further queue).
    """
    if not (exist_ok and client.exists(path)):
        client.create("queue_consumer", path, recursive=True)
        client.mount_table(path, sync=True)
    if queue_path:
        client.register_queue_consumer(queue_path, path, vital=vital)


def create_producer(client: Any, path: str) -> None:
    """Create and mount a queue producer table (for exactly-once appends)."""
    client.create("queue_producer", path, recursive=True)
    client.mount_table(path, sync=True)


def consumer_registered(client: Any, queue_path: str, consumer_path: str) -> bool:
    """Whether ``consumer_path`` is registered for ``queue_path`` (``list_queue_consumer_registrations``)."""
    registrations = client.list_queue_consumer_registrations(queue_path=queue_path, consumer_path=consumer_path)
    return bool(registrations)
