"""The ``copy`` command: where a copy may go, and copies of map, scalar, list, document and link nodes (tables are
copied by ``static_tables.copy``).

As YTsaurus's ``CopyCore`` (``cypress_server/node_proxy_detail.cpp``) checks: ``ignore_existing`` and ``force``
exclude each other, a destination path names a node (no ``@attribute``), a node cannot be copied into itself or
below itself, and a copy of a map node copies its whole subtree with each node's attributes.
"""

from __future__ import annotations

import copy as _copy
from typing import TYPE_CHECKING, Any

from spyt_queue.local import static_tables
from spyt_queue.local.errors import YtError
from spyt_queue.local.ypath import split_path

if TYPE_CHECKING:
    from spyt_queue.local.cypress import Node
    from spyt_queue.local.state import State


def copy(
    state: State,
    source: str,
    destination: str,
    recursive: bool,
    force: bool,
    ignore_existing: bool,
    preserve_expiration_time: bool = False,
    preserve_expiration_timeout: bool = False,
    preserve_times: tuple[str, ...] = (),
) -> str:
    """``copy``: the id of the copy (of the existing node with ``ignore_existing``). A copy keeps
    ``@expiration_time``/``@expiration_timeout`` only when asked to (``preserve_expiration_time``,
    ``preserve_expiration_timeout``), as ``TCopyNodeOptions`` has it; ``preserve_times`` names the times it keeps
    (``creation_time``, ``modification_time``: ``preserve_creation_time``, ``preserve_modification_time``). A copy of a
    consumer table is not a consumer: ``@treat_as_queue_consumer`` is not carried over, as on a cluster."""
    dropped = {
        name
        for name, keep in (
            ("expiration_time", preserve_expiration_time),
            ("expiration_timeout", preserve_expiration_timeout),
        )
        if not keep
    } | {"treat_as_queue_consumer"}  # a copy is no consumer (test_object_watchlist.py::test_copy)
    if ignore_existing and force:
        raise YtError('Cannot specify both "ignore_existing" and "force" options simultaneously')
    _check_source(source)
    components, attribute = split_path(destination)
    if attribute is not None:
        raise YtError('Expected "literal" in YPath but found "at" token "@"', attributes={"path": destination})
    with state.lock:
        node = state.cypress.resolve(source)
        _check_placement(state, node, components, destination)
        if node.table is not None:
            attributes = _copied_attributes(node, dropped)
            copied_id = static_tables.copy(state, source, destination, recursive, force, ignore_existing, attributes)
            _keep_times(state, node, state.cypress.by_id[copied_id], preserve_times)
            return copied_id
        tables = [n.path for n in _subtree(node) if n.table is not None]
        if tables:
            raise YtError(
                f"Copying map node {node.path} with tables inside ({tables[0]}) is not supported by ytqueue local; "
                "copy each table on its own"
            )
        with state.storage.transaction() as conn:
            copied, created = state.cypress.create(
                conn,
                node.type,
                destination,
                recursive=recursive,
                ignore_existing=ignore_existing,
                force=force,
                attributes=_copied_attributes(node, dropped),
                value=_copy.deepcopy(node.sys.get("value")),
            )
            if created:
                _copy_contents(state, conn, node, copied, dropped)
        _keep_times(state, node, copied, preserve_times if created else ())
        return copied.id


def _check_source(source: str) -> None:
    """A copy source names a node: nothing may follow it, neither an empty component, a trailing slash nor an
    attribute (test_malformed_clone_src: ``... has unexpected suffix``)."""
    start = 2 if source.startswith("//") else 0
    suffix = None
    if source.find("//", start) != -1:
        suffix = source[source.find("//", start) :]
    elif len(source) > start and source.endswith("/") and not source.endswith("\\/"):
        suffix = "/"
    elif split_path(source)[1] is not None:
        suffix = source[source.find("/@") :]
    if suffix is not None:
        raise YtError(f"Path {source} has unexpected suffix {suffix}", attributes={"path": source})


def _check_placement(state: State, node: Node, components: list[str], destination: str) -> None:
    """A node is not copied onto itself (``Cannot copy or move a node to itself``: the destination or its parent
    is the node) nor below itself (``... to its descendant``)."""
    if not components:  # the root
        raise YtError("Node / cannot be replaced", attributes={"path": destination})
    parent = state.cypress.find(destination.rsplit("/", 1)[0] or "/")
    target = parent.children.get(components[-1]) if parent is not None and parent.type == "map_node" else None
    if target is node or parent is node:
        raise YtError("Cannot copy or move a node to itself", attributes={"path": destination})
    if parent is not None and parent.path.startswith(node.path.rstrip("/") + "/"):
        raise YtError("Cannot copy or move a node to its descendant", attributes={"path": destination})


def _subtree(node: Node) -> list[Node]:
    nodes, stack = [], [node]
    while stack:
        current = stack.pop()
        nodes.append(current)
        stack.extend(current.children.values())
    return nodes


def _keep_times(state: State, source: Node, copied: Node, names: tuple[str, ...]) -> None:
    """The source's ``creation_time``/``modification_time`` on the copy, as asked."""
    if not names or copied is source:
        return
    for name in names:
        copied.sys[name] = source.sys.get(name)
    with state.storage.transaction() as conn:
        state.cypress.persist(conn, copied)


def _copied_attributes(node: Node, dropped: set[str]) -> dict[str, Any]:
    return {name: _copy.deepcopy(value) for name, value in node.attrs.items() if name not in dropped}


def _copy_contents(state: State, conn: Any, source: Node, copied: Node, dropped: set[str]) -> None:
    """A link's target and a map node's children (each with its attributes and value), into ``copied``."""
    if source.type == "link":
        copied.sys["target_path"] = source.sys.get("target_path")
        state.cypress.persist(conn, copied)
    for name, child in source.children.items():
        child_copy, _ = state.cypress.create(
            conn,
            child.type,
            f"{copied.path}/{name}",
            recursive=False,
            ignore_existing=False,
            force=False,
            attributes=_copied_attributes(child, dropped),
            value=_copy.deepcopy(child.sys.get("value")),
        )
        _copy_contents(state, conn, child, child_copy, dropped)


__all__ = ["copy"]
