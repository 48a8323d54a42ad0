"""The ``multiset_attributes`` command: several attributes of one node set by one request.

As ``TMultisetAttributesCommand`` and the master's ``MultisetAttributes`` verb do: the path names the node's
attributes (``//node/@``) or one attribute (``//node/@m``); each key of the input map (``a``, or ``m/y`` for a key
inside a map attribute) is set in turn, in sorted key order, and a failing key stops the request with the keys before
it already set (the request is not atomic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spyt_queue.local.errors import YtError
from spyt_queue.local.ypath import split_path

if TYPE_CHECKING:
    from spyt_queue.local.state import State


def multiset_attributes(state: State, path: str, values: Any) -> None:
    """Set every ``key: value`` of ``values`` below the attribute path ``path``."""
    if not isinstance(values, dict):
        raise YtError("Error parsing multiset_attributes input: expected a map of attribute names to values")
    _, attribute = split_path(path)
    if attribute is None:
        raise YtError('Expected "slash" in YPath but found end-of-string', attributes={"path": path})
    for key in sorted(values):
        if key == "":
            raise YtError("Empty attribute names are not allowed")
        names = [*attribute, *str(key).split("/")]
        with state.lock, state.storage.transaction() as conn:
            node = state.cypress.resolve(path)
            if len(names) > 1 and names[0] not in node.attrs:
                raise YtError(f'Custom attribute "{names[0]}" is not found', attributes={"path": path})
            state.cypress.set_attribute(conn, node, names, values[key], f"{path.rstrip('/')}/{key}")


__all__ = ["multiset_attributes"]
