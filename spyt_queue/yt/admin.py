"""Creating queues, consumers and output tables: what the demo, the benchmarks and users' setup scripts need."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def column(name: str, type_: str, required: bool = False, sort_order: str | None = None) -> dict[str, Any]:
    """One schema column in ``yt.wrapper``'s dict form."""
    entry: dict[str, Any] = {"name": name, "type": type_, "required": required}
    if sort_order:
        entry["sort_order"] = sort_order
    return entry


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


def create_consumer(client: Any, path: str, queue_path: str | None = None, vital: bool = False) -> None:
    """Create and mount a consumer table and register it for ``queue_path``."""
    client.create("queue_consumer", path, recursive=True)
    client.mount_table(path, sync=True)
    if queue_path:
        client.register_queue_consumer(queue_path, path, vital=vital)


def create_producer(client: Any, path: str) -> None:
    """Create and mount a queue producer table (for exactly-once appends)."""
    client.create("queue_producer", path, recursive=True)
    client.mount_table(path, sync=True)
