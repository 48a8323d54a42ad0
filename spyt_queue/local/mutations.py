"""The response keeper: ``mutation_id`` / ``retry`` of mutating commands, as YTsaurus answers them.

A mutating command sent with a ``mutation_id`` is answered once; the answer is kept (for ``EXPIRATION_SECONDS``,
in memory and in the database, so a restart keeps it too), and a later request with the same id and
``retry=%true`` gets the kept answer without running the command again. A duplicate without ``retry`` fails with
"Duplicate request is not marked as "retry"" (``TResponseKeeper::TryBeginRequest``). A retry that arrives while the
first request still runs waits for its answer. Only successful answers are kept: a failed request may be run again,
as the failure left nothing behind.

This is what makes ``yt.wrapper``'s retries safe: it resends a volatile command with the same mutation id and
``retry=%true`` after a dropped connection, so a ``commit_transaction`` or ``create_queue_producer_session`` whose
answer was lost is not applied twice.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import yt.yson as yson

from spyt_queue.local.errors import YtError

#: How long an answer is kept (the master's ``TResponseKeeperConfig::ExpirationTime`` default is 5 minutes).
EXPIRATION_SECONDS = 300.0

_TABLE = (
    "CREATE TABLE IF NOT EXISTS kept_responses (mutation_id TEXT PRIMARY KEY, command TEXT NOT NULL, "
    "response BLOB NOT NULL, kept_at REAL NOT NULL)"
)


class ResponseKeeper:
    """Kept answers of one server's state, by mutation id."""

    def __init__(self, storage: Any) -> None:
        self._storage = storage
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        with storage.transaction() as conn:
            conn.execute(_TABLE)
            conn.execute("DELETE FROM kept_responses WHERE kept_at < ?", (time.time() - EXPIRATION_SECONDS,))
            rows = conn.execute("SELECT mutation_id, command, response, kept_at FROM kept_responses").fetchall()
        self._kept: dict[str, tuple[str, Any, float]] = {
            mutation_id: (command, yson.loads(response), kept_at) for mutation_id, command, response, kept_at in rows
        }
        self._last_sweep = time.time()

    def run(self, mutation_id: str, retry: bool, command: str, execute: Callable[[], Any]) -> Any:
        """The answer of ``execute()`` for ``mutation_id``: the kept one for a retry, a fresh one otherwise."""
        while True:
            with self._lock:
                kept = self._kept.get(mutation_id)
                if kept is not None and time.time() - kept[2] < EXPIRATION_SECONDS:
                    _require_retry(mutation_id, retry)
                    return kept[1]
                pending = self._pending.get(mutation_id)
                if pending is None:
                    mine = self._pending[mutation_id] = _Pending()
                    break
                _require_retry(mutation_id, retry)
            pending.done.wait()
            if pending.error is not None:
                raise pending.error
        try:
            value = execute()
        except BaseException as error:
            mine.error = error if isinstance(error, YtError) else YtError(f"Request failed: {error}")
            with self._lock:
                self._pending.pop(mutation_id, None)
            mine.done.set()
            raise
        now = time.time()
        try:
            with self._storage.transaction() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO kept_responses (mutation_id, command, response, kept_at) "
                    "VALUES (?, ?, ?, ?)",
                    (mutation_id, command, yson.dumps(value, yson_format="binary"), now),
                )
                if now - self._last_sweep > EXPIRATION_SECONDS:
                    conn.execute("DELETE FROM kept_responses WHERE kept_at < ?", (now - EXPIRATION_SECONDS,))
        finally:
            with self._lock:
                self._kept[mutation_id] = (command, value, now)
                if now - self._last_sweep > EXPIRATION_SECONDS:
                    self._kept = {k: v for k, v in self._kept.items() if now - v[2] < EXPIRATION_SECONDS}
                    self._last_sweep = now
                self._pending.pop(mutation_id, None)
            mine.done.set()
        return value


class _Pending:
    """A request in flight: retries of it wait for ``done`` and share its answer or ``error``."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None


def _require_retry(mutation_id: str, retry: bool) -> None:
    if not retry:
        raise YtError('Duplicate request is not marked as "retry"', attributes={"mutation_id": mutation_id})


_KEEPERS: weakref.WeakKeyDictionary[Any, ResponseKeeper] = weakref.WeakKeyDictionary()
_KEEPERS_LOCK = threading.Lock()


def keeper_of(state: Any) -> ResponseKeeper:
    """The response keeper of a server state (created with its table on first use)."""
    with _KEEPERS_LOCK:
        keeper = _KEEPERS.get(state)
        if keeper is None:
            keeper = _KEEPERS[state] = ResponseKeeper(state.storage)
        return keeper
