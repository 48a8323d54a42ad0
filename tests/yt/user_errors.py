"""What a user sees of an error: its first line, how long it took, and a port where nothing listens."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

#: Slack added to a documented timeout when a test checks an error came back in time (two shared cores, a JVM).
SLACK_S = 25.0


def free_port() -> int:
    """A local TCP port nothing listens on (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def first_line(error: BaseException) -> str:
    """The first line of an error as a console or a notebook shows it (``Type: message``'s message part)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def failure(call: Callable[[], Any]) -> tuple[BaseException, float]:
    """Run ``call``, which must fail; the error and the seconds it took."""
    started = time.monotonic()
    try:
        call()
    except Exception as error:
        return error, time.monotonic() - started
    raise AssertionError("expected an error, the call succeeded")


def query_failure(query: Any, timeout: float = 120) -> BaseException:
    """Wait for a streaming query that must fail; its exception."""
    try:
        query.awaitTermination(timeout)
    except Exception as error:
        return error
    if query.isActive:
        query.stop()
        raise AssertionError(f"the query did not fail within {timeout} s")
    error = query.exception()
    if error is None:
        raise AssertionError("the query ended without an error")
    return error
