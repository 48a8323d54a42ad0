"""How YTsaurus errors are told apart: transient (retrying may succeed) or carrying a given code.

Shared by the YT backend, the consumer-table store and the sinks; depends on ``yt.wrapper`` only, so any of them can
import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from yt.wrapper.errors import YtResponseError
from yt.wrapper.http_helpers import get_retriable_errors
from yt.yson.common import YsonError

#: ``advance_consumer(old_offset=...)`` found another offset than expected: a concurrent writer moved the consumer
#: (NQueueClient::EErrorCode::ConsumerOffsetConflict).
CONSUMER_OFFSET_CONFLICT = 3100

# yt.wrapper's own predicates (each checks the error codes of the whole error tree): retrying may succeed.
TRANSIENT_PREDICATES = (
    "is_tablet_transaction_lock_conflict",  # 1700
    "is_concurrent_transaction_lock_conflict",
    "is_tablet_in_intermediate_state",  # 1701
    "is_tablet_not_mounted",  # 1702
    "is_no_such_tablet",
    "is_no_such_cell",
    "is_no_such_transaction",  # 11000: a tablet transaction expired before its commit
    "is_row_is_blocked",
    "is_blocked_row_wait_timeout",
    "is_request_queue_size_limit_exceeded",  # 108
    "is_request_timed_out",  # 3: may have been applied; callers re-read before retrying a CAS
    "is_transport_error",  # 105
    "is_rpc_unavailable",
    "is_proxy_banned",
    "is_master_communication_error",
    "is_chunk_unavailable",
    "is_all_writes_disabled",
    "is_no_in_sync_replicas",
)


def is_transient_yt_error(error: BaseException) -> bool:
    """Whether a YT call that failed with ``error`` may succeed when retried (yt.wrapper's predicates and its own
    list of retriable transport errors)."""
    if isinstance(error, YtResponseError):
        if "Invalid tablet index" in str(error):  # NoSuchTablet for a row's $tablet_index: the row's fault
            return False
        return any(getattr(error, name)() for name in TRANSIENT_PREDICATES)
    if isinstance(error, get_retriable_errors()):
        return True
    if isinstance(error, YsonError):
        return is_empty_answer(error)
    return isinstance(error, (ConnectionError, TimeoutError, OSError))


def is_empty_answer(error: YsonError) -> bool:
    """Whether yt.wrapper failed parsing an empty answer: the server was cut off before the body (a lost connection,
    whose outcome is unknown, as ``ConnectionError``'s)."""
    stack: list[Any] = list(getattr(error, "inner_errors", None) or [])
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            attributes = item.get("attributes") or {}
            if "context" in attributes and len(attributes["context"]) == 0 and attributes.get("offset") == 0:
                return True
            stack.extend(item.get("inner_errors") or [])
    return False


def error_codes(error: Any) -> set[int]:
    """Every error code of a YT error tree (a ``YtResponseError``'s ``.error``)."""
    codes: set[int] = set()
    stack = [error]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if "code" in item:
                codes.add(int(item["code"]))
            stack.extend(item.get("inner_errors") or [])
    return codes


def has_code(error: BaseException, code: int) -> bool:
    """Whether a ``YtResponseError`` carries ``code`` anywhere in its error tree."""
    return isinstance(error, YtResponseError) and code in error_codes(error.error)


#: Cypress could not resolve a path: the node does not exist (NYTree::EErrorCode::ResolveError).
RESOLVE_ERROR = 500


def yt_message(error: BaseException) -> str:
    """``error`` as one line: the messages of a ``YtResponseError``'s tree from the outside in (each once), without
    yt.wrapper's request details; any other error's text with its whitespace folded."""
    if not isinstance(error, YtResponseError):
        return " ".join(str(error).split()) or type(error).__name__
    messages: list[str] = []
    node: Any = error.error
    while isinstance(node, Mapping):
        message = " ".join(str(node.get("message", "")).split())
        if message and message not in messages:
            messages.append(message)
        inner = node.get("inner_errors") or []
        node = inner[0] if inner else None
    return ": ".join(messages) or type(error).__name__
