"""Node expiration by ``@expiration_time``: the value's check when it is set, and which nodes are due.

As YTsaurus's Cypress (``TCypressNodeProxyBase`` builtin attribute ``expiration_time``, the expiration tracker): the
value is an instant (ISO 8601 text, or an integer of milliseconds since the epoch); anything else fails with
``Error setting builtin attribute "expiration_time"``; the root takes none (``Cannot set "expiration_time" for the
root``); a node whose instant has passed is removed with its subtree. ``@expiration_timeout`` (removal after a time
without access) is stored but never acted on: this server does not track accesses.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

from spyt_queue.local.errors import YtError

ATTRIBUTE = "expiration_time"


def parse_instant(value: Any) -> float:
    """``value`` as seconds since the epoch; ``YtError`` when it is not an instant."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, bool):
        raise ValueError(f"expected an instant, got {value!r}")
    if isinstance(value, int):
        return value / 1000.0
    if isinstance(value, str):
        moment = _dt.datetime.fromisoformat(value.strip())
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=_dt.timezone.utc)
        return moment.timestamp()
    raise ValueError(f"expected an instant, got {type(value).__name__}")


def check(value: Any, is_root: bool) -> None:
    """The checks of a ``set`` (or ``create``) of ``@expiration_time``."""
    if is_root:
        raise YtError(f'Cannot set "{ATTRIBUTE}" for the root')
    try:
        parse_instant(value)
    except ValueError as exc:
        raise YtError(
            f'Error setting builtin attribute "{ATTRIBUTE}"', inner_errors=[YtError(f"Error parsing instant: {exc}")]
        ) from None


def due(nodes: Iterable[Any], now: float) -> list[Any]:
    """The nodes among ``nodes`` whose ``@expiration_time`` has passed (a node below another due one included)."""
    result = []
    for node in nodes:
        value = node.attrs.get(ATTRIBUTE)
        if value is None:
            continue
        try:
            if parse_instant(value) <= now:
                result.append(node)
        except ValueError:
            continue
    return result


__all__ = ["ATTRIBUTE", "check", "due", "parse_instant"]
