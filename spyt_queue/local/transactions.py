"""Transactions: tablet transactions buffer writes until commit (as the native client does); master transactions
form YTsaurus's tree (nested transactions, prerequisites, leases and deadlines) but give Cypress no isolation.

Master transactions follow ``transaction_server/transaction_manager.cpp``: a nested transaction needs an active
master parent and at most ``max_transaction_depth`` (32) ancestors (11002 ``Transaction depth limit reached``);
the timeout is capped at ``max_transaction_timeout`` (one hour); committing or aborting a transaction aborts its
nested transactions first, and finishing one aborts every transaction that named it a prerequisite. A lease runs
out after ``timeout`` ms without a ping or at ``deadline``, and the transaction is then aborted as above;
``ping_ancestor_transactions`` renews the ancestors' leases too.

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

#: ``TDynamicTransactionManagerConfig``: ``max_transaction_depth`` (32) and ``max_transaction_timeout`` (60 min).
MAX_TRANSACTION_DEPTH = 32
MAX_TRANSACTION_TIMEOUT_MS = 60 * 60 * 1000
TRANSACTION_DEPTH_LIMIT_REACHED = 11002
PREREQUISITE_CHECK_FAILED = 1000  # NObjectClient::EErrorCode::PrerequisiteCheckFailed

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
    # Master transactions: the tree, prerequisites and the deadline (``time.time()`` seconds).
    parent_id: str | None = None
    depth: int = 0
    nested: list[str] = field(default_factory=list)
    prerequisite_ids: list[str] = field(default_factory=list)
    dependent_ids: list[str] = field(default_factory=list)
    deadline: float | None = None
    start_time: float = field(default_factory=time.time)

    @property
    def expired(self) -> bool:
        """Whether the lease ran out (no ping within ``timeout``) or the deadline passed."""
        if self.deadline is not None and time.time() >= self.deadline:
            return True
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
        self._lock = threading.RLock()

    def start(
        self,
        kind: str,
        timeout_ms: int | None,
        attributes: dict[str, Any],
        parent_id: str | None = None,
        prerequisite_ids: list[str] | None = None,
        deadline: float | None = None,
    ) -> Transaction:
        """Start a transaction of ``kind`` (``tablet`` or ``master``), nested in ``parent_id`` (a master one)."""
        if kind not in ("tablet", "master"):
            raise YtError(f"Error parsing ETransactionType value {kind!r}")
        timeout = DEFAULT_TIMEOUT_MS if timeout_ms is None else int(timeout_ms)
        if timeout <= 0:
            raise YtError(f"Invalid transaction timeout {timeout}")
        with self._lock:
            parent = None
            if parent_id is not None:
                parent = self.get(parent_id)
                if kind != "master" or parent.type != "master":
                    raise YtError("Only master transactions can be nested (in a master transaction)")
                if parent.depth >= MAX_TRANSACTION_DEPTH:
                    raise YtError(
                        "Transaction depth limit reached",
                        code=TRANSACTION_DEPTH_LIMIT_REACHED,
                        attributes={"limit": MAX_TRANSACTION_DEPTH},
                    )
            prerequisites = [self.prerequisite(p) for p in prerequisite_ids or []]
            start_ts = self._timestamps.generate()
            if kind == "tablet":
                object_type = ids.TYPE_ATOMIC_TABLET_TRANSACTION
            else:
                object_type = ids.TYPE_NESTED_TRANSACTION if parent is not None else ids.TYPE_TRANSACTION
                timeout = min(timeout, MAX_TRANSACTION_TIMEOUT_MS)
            tx_id = ids.format_id(start_ts, object_type)
            tx = Transaction(tx_id, kind, start_ts, timeout, dict(attributes), deadline=deadline)
            if parent is not None:
                tx.parent_id = parent.id
                tx.depth = parent.depth + 1
                parent.nested.append(tx_id)
            for prerequisite in prerequisites:
                tx.prerequisite_ids.append(prerequisite.id)
                prerequisite.dependent_ids.append(tx_id)
            self._transactions[tx_id] = tx
            return tx

    def _expire(self, tx: Transaction) -> bool:
        """Abort ``tx`` if its lease (or an ancestor's) ran out; whether it is gone."""
        chain = []
        current: Transaction | None = tx
        while current is not None:
            chain.append(current)
            current = self._transactions.get(current.parent_id) if current.parent_id else None
        for item in reversed(chain):  # the topmost expired ancestor takes its subtree with it
            if item.expired and item.busy == 0:
                self._abort_tree(item.id)
                return True
        return False

    def _abort_tree(self, tx_id: str) -> None:
        """Remove a transaction, its nested transactions and its dependents (as ``AbortTransaction`` with
        ``force`` and ``FinishTransaction`` do)."""
        tx = self._transactions.pop(tx_id, None)
        if tx is None:
            return
        self._detach(tx)
        for child in list(tx.nested):
            self._abort_tree(child)
        for dependent in list(tx.dependent_ids):
            self._abort_tree(dependent)

    def _detach(self, tx: Transaction) -> None:
        if tx.parent_id is not None:
            parent = self._transactions.get(tx.parent_id)
            if parent is not None and tx.id in parent.nested:
                parent.nested.remove(tx.id)
        for prerequisite_id in tx.prerequisite_ids:
            prerequisite = self._transactions.get(prerequisite_id)
            if prerequisite is not None and tx.id in prerequisite.dependent_ids:
                prerequisite.dependent_ids.remove(tx.id)

    def get(self, tx_id: str) -> Transaction:
        """A live transaction; error 11000 if unknown, finished or expired."""
        with self._lock:
            tx = self._transactions.get(tx_id)
            if tx is None or self._expire(tx):
                raise no_such_transaction(tx_id)
            return tx

    def find(self, tx_id: str) -> Transaction | None:
        """A live transaction or ``None``."""
        try:
            return self.get(tx_id)
        except YtError:
            return None

    def prerequisite(self, tx_id: str) -> Transaction:
        """A live prerequisite transaction; 1000 ``Prerequisite check failed`` if it is not
        (``GetAndValidatePrerequisiteTransaction``)."""
        parts = str(tx_id).split("-")
        try:
            cell_tag = int(parts[2], 16) >> 16 if len(parts) == 4 else None
        except ValueError:
            cell_tag = None
        if cell_tag is not None and cell_tag != ids.CELL_TAG:
            raise YtError(f"Unknown transaction cell tag {cell_tag}", attributes={"transaction_id": str(tx_id)})
        tx = self.find(str(tx_id))
        if tx is None:
            raise YtError(f"Prerequisite check failed: transaction {tx_id} is missing", code=PREREQUISITE_CHECK_FAILED)
        return tx

    def ping(self, tx_id: str, ping_ancestors: bool = False) -> None:
        """Renew the lease (and the ancestors' with ``ping_ancestors``)."""
        with self._lock:
            tx = self.get(tx_id)
            now = time.monotonic()
            tx.last_ping = now
            while ping_ancestors and tx.parent_id is not None:
                parent = self._transactions.get(tx.parent_id)
                if parent is None:
                    break
                parent.last_ping = now
                tx = parent

    def finish(self, tx_id: str) -> Transaction:
        """Remove a transaction for commit or abort (error 11000 if gone): its nested transactions and the
        transactions that depend on it are aborted."""
        with self._lock:
            tx = self.get(tx_id)
            self._abort_tree(tx_id)
            return tx

    def sweep(self) -> None:
        """Abort expired transactions (with their subtrees)."""
        with self._lock:
            for tx in list(self._transactions.values()):
                if tx.id in self._transactions:
                    self._expire(tx)

    def master_ids(self, topmost: bool = False) -> list[str]:
        """Live master transactions (``//sys/transactions``; ``//sys/topmost_transactions`` with ``topmost``)."""
        self.sweep()
        with self._lock:
            return [
                t.id for t in self._transactions.values() if t.type == "master" and (not topmost or t.parent_id is None)
            ]

    def min_active_start_ts(self) -> int | None:
        """The oldest snapshot still needed by a live tablet transaction."""
        with self._lock:
            starts = [t.start_ts for t in self._transactions.values() if t.type == "tablet"]
        return min(starts) if starts else None
