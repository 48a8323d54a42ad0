"""Paths inside a stored list or document value: ``//tmp/list/3``, ``/-1``, ``/end``, ``/begin``, ``/before:N``,
``/after:N`` and map keys below them (``//tmp/map/list/2/some``).

A list node (and a document) is stored as one value here. YTsaurus makes each list item a node of its own, and
addresses them as ``TListNodeMixin`` does (``yt/yt/core/ytree/node_detail.cpp``): an index (negative from the
end) names an item, and ``set`` also takes ``end``/``begin`` (append/prepend) and ``before:N``/``after:N``
(insert). These functions apply those rules to the stored value; the caller stores the result.
"""

from __future__ import annotations

import copy
from typing import Any

from spyt_queue.local.errors import RESOLVE_ERROR, YtError, resolve_error


class IntoValue(YtError):
    """Raised by path resolution when a path goes below a list or document node: the rest of the path addresses
    the node's stored value. Carries the node and the remaining components; as an error it is a resolve error
    (a caller that does not address values reads it as "no such node")."""

    def __init__(self, node: Any, rest: list[str], full_path: str) -> None:
        super().__init__(
            f"Error resolving path {full_path}",
            code=RESOLVE_ERROR,
            attributes={"path": full_path},
            inner_errors=[YtError(f"Cannot resolve {'/'.join(rest)} below node {node.path}", code=RESOLVE_ERROR)],
        )
        self.node = node
        self.rest = rest
        self.full_path = full_path


def _index(items: list[Any], token: str) -> int | None:
    """The position ``token`` names in ``items`` (negative from the end), ``None`` when out of range or not an
    integer."""
    try:
        index = int(token)
    except ValueError:
        return None
    if str(index) != token.lstrip("+"):
        return None
    if -len(items) <= index < len(items):
        return index % len(items)
    return None


def display_root(node: Any) -> str:
    """How errors name the node's value: a list node by its path; a document's value is a tree of its own, whose
    root YTsaurus calls ``Root node`` and whose items ``Node /a/b``."""
    return node.path if node.type == "list_node" else ""


def _no_child(display: str, value: Any, token: str, full_path: str) -> YtError:
    who = f"Node {display}" if display else "Root node"
    if isinstance(value, list):
        return resolve_error(full_path, f"{who} has no child with index {token}")
    if isinstance(value, dict):
        return resolve_error(full_path, f'{who} has no child with key "{token}"')
    return resolve_error(full_path, f"{who} cannot have children")


def _descend(value: Any, rest: list[str], display: str, full_path: str, recursive: bool = False) -> tuple[Any, str]:
    """The item at ``rest`` below ``value`` and its display path; resolve errors as YTsaurus words them. With
    ``recursive`` a missing map key becomes an empty map (``set`` with ``recursive``)."""
    for token in rest:
        if isinstance(value, list):
            index = _index(value, token)
            if index is None:
                raise _no_child(display, value, token, full_path)
            value = value[index]
        elif isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, dict) and recursive:
            value[token] = {}
            value = value[token]
        else:
            raise _no_child(display, value, token, full_path)
        display = f"{display}/{token}"
    return value, display


def get(value: Any, rest: list[str], display: str, full_path: str) -> Any:
    """``get`` of the item at ``rest`` inside ``value``."""
    return copy.deepcopy(_descend(value, rest, display, full_path)[0])


def exists(value: Any, rest: list[str]) -> bool:
    """``exists`` of the item at ``rest`` inside ``value``."""
    try:
        _descend(value, rest, "", "")
    except YtError:
        return False
    return True


def set_item(value: Any, rest: list[str], item: Any, display: str, full_path: str, recursive: bool = False) -> Any:
    """``value`` with the item at ``rest`` set to ``item`` (a list: replaced by index, or inserted by ``end``,
    ``begin``, ``before:N``, ``after:N``; a map: the key set; missing maps on the way made with ``recursive``)."""
    result = copy.deepcopy(value)
    parent, parent_display = _descend(result, rest[:-1], display, full_path, recursive)
    token = rest[-1]
    if isinstance(parent, list):
        if token == "end":
            parent.append(item)
        elif token == "begin":
            parent.insert(0, item)
        elif token.startswith(("before:", "after:")):
            where, _, number = token.partition(":")
            index = _index(parent, number)
            if index is None:
                raise _no_child(parent_display, parent, number, full_path)
            parent.insert(index if where == "before" else index + 1, item)
        else:
            index = _index(parent, token)
            if index is None:
                raise _no_child(parent_display, parent, token, full_path)
            parent[index] = item
    elif isinstance(parent, dict):
        parent[token] = item
    else:
        raise _no_child(parent_display, parent, token, full_path)
    return result


def remove_item(value: Any, rest: list[str], display: str, full_path: str, force: bool) -> Any:
    """``value`` without the item at ``rest``; a missing item is an error unless ``force``."""
    result = copy.deepcopy(value)
    try:
        parent, parent_display = _descend(result, rest[:-1], display, full_path)
    except YtError:
        if force:
            return result
        raise
    token = rest[-1]
    if isinstance(parent, list) and (index := _index(parent, token)) is not None:
        del parent[index]
    elif isinstance(parent, dict) and token in parent:
        del parent[token]
    elif not force:
        raise _no_child(parent_display, parent, token, full_path)
    return result


def refuse_attributes(node_path: str, rest: list[str]) -> YtError:
    """The error for attributes of an item inside a list or document value (items are not nodes here)."""
    return YtError(
        f"Attributes of {node_path}/{'/'.join(rest)}, an item inside a list or document node, are not supported by "
        "ytqueue local (the node's value is stored as a whole)"
    )
