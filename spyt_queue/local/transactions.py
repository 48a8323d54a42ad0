"""Transactions: tablet transactions buffer writes until commit (as the native client does), master ones are
placeholders that only live and die.

A tablet transaction reads a snapshot at its start timestamp and does not see its own buffered writes (YT has no
read-your-writes in tablet transactions). At commit the server checks row locks: a sorted-table key written by
this transaction that another transaction committed after this one's start timestamp fails the commit with
error 1700, as YT's tablet nodes do at prepare.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from spyt_queue.local import ids
from spyt_queue.local.errors import YtError, no_such_transaction

DEFAULT_TIMEOUT_MS = 15000
#: Rows one tablet transaction may write into one tablet: the native client's ``max_rows_per_transaction``
#: (connection config, default 100,000, at most 2,000,000), checked per tablet at commit ("Transaction affects too
#: many rows in tablet"), for explicit and implicit (single-request) transactions alike.
DEFAULT_MAX_ROWS_PER_TRANSACTION = 100_000
MAX_ROWS_PER_TRANSACTION_HARD_LIMIT = 2_000_000


@dataclass
class SortedWrite:
    """A buffered sorted-table write: an upsert (``row``; ``update`` keeps omitted columns) or a delete."""

    key: bytes
    row: dict[bytes, Any] | None
    update: bool = False


@dataclass
class Transaction:
    """A live transaction and its buffered writes."""

    id: str
    type: str  # "tablet" or "master"
    start_ts: int
    timeout_ms: int
    attributes: dict[str, Any]
    last_ping: float = field(default_factory=time.monotonic)
    # table id -> tablet index -> rows (ordered tables).
    ordered_writes: dict[str, dict[int, list[dict[bytes, Any]]]] = field(default_factory=dict)
    # table id -> key -> write (sorted tables); dict order = write order.
    sorted_writes: dict[str, dict[bytes, SortedWrite]] = field(default_factory=dict)
    table_paths: dict[str, str] = field(default_factory=dict)
    busy: int = 0

    @property
    def expired(self) -> bool:
        """Whether the lease ran out (no ping within ``timeout``)."""
        return time.monotonic() - self.last_ping > self.timeout_ms / 1000.0

    def has_writes(self) -> bool:
        """Whether commit has anything to apply."""
        return bool(self.ordered_writes or self.sorted_writes)

    def ordered_row_counts(self) -> dict[tuple[str, int], int]:
        """Rows buffered per (ordered table id, tablet index)."""
        return {
            (table_id, index): len(rows)
            for table_id, per_tablet in self.ordered_writes.items()
            for index, rows in per_tablet.items()
        }


class TransactionManager:
    """Live transactions by id; expiry aborts them (lazily and from a sweeper thread)."""

    def __init__(self, timestamps: ids.TimestampGenerator) -> None:
        self._timestamps = timestamps
        self._transactions: dict[str, Transaction] = {}
        self._lock = threading.Lock()

    def start(self, kind: str, timeout_ms: int | None, attributes: dict[str, Any]) -> Transaction:
        """Start a transaction of ``kind`` (``tablet`` or ``master``)."""
        if kind not in ("tablet", "master"):
            raise YtError(f"Error parsing ETransactionType value {kind!r}")
        start_ts = self._timestamps.generate()
        object_type = ids.TYPE_ATOMIC_TABLET_TRANSACTION if kind == "tablet" else ids.TYPE_TRANSACTION
        tx_id = ids.format_id(start_ts, object_type)
        timeout = DEFAULT_TIMEOUT_MS if timeout_ms is None else int(timeout_ms)
        if timeout <= 0:
            raise YtError(f"Invalid transaction timeout {timeout}")
        tx = Transaction(tx_id, kind, start_ts, timeout, dict(attributes))
        with self._lock:
            self._transactions[tx_id] = tx
        return tx

    def get(self, tx_id: str) -> Transaction:
        """A live transaction; error 11000 if unknown, finished or expired."""
        with self._lock:
            tx = self._transactions.get(tx_id)
            if tx is None:
                raise no_such_transaction(tx_id)
            if tx.expired and tx.busy == 0:
                del self._transactions[tx_id]
                raise no_such_transaction(tx_id)
            return tx

    def ping(self, tx_id: str) -> None:
        """Renew the lease."""
        self.get(tx_id).last_ping = time.monotonic()

    def finish(self, tx_id: str) -> Transaction:
        """Remove a transaction for commit or abort (error 11000 if gone)."""
        with self._lock:
            tx = self._transactions.get(tx_id)
            if tx is None or (tx.expired and tx.busy == 0):
                self._transactions.pop(tx_id, None)
                raise no_such_transaction(tx_id)
            del self._transactions[tx_id]
            return tx

    def sweep(self) -> None:
        """Drop expired transactions (they are aborted)."""
        with self._lock:
            for tx_id in [t.id for t in self._transactions.values() if t.expired and t.busy == 0]:
                del self._transactions[tx_id]

    def min_active_start_ts(self) -> int | None:
        """The oldest snapshot still needed by a live tablet transaction."""
        with self._lock:
            starts = [t.start_ts for t in self._transactions.values() if t.type == "tablet"]
        return min(starts) if starts else None
