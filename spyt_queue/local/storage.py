"""Durable state in one SQLite database (WAL): Cypress nodes, ordered-table chunks, sorted-table versions.

One commit of the server (a tablet transaction, a Cypress mutation) is one SQLite transaction, so committed
data survives a restart and a SIGKILL (``synchronous=NORMAL`` in WAL mode loses nothing on a process crash;
only an OS crash or power loss may drop the last commits).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    path TEXT PRIMARY KEY, id TEXT NOT NULL, type TEXT NOT NULL, sys BLOB NOT NULL, attrs BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS tablets (
    table_id TEXT NOT NULL, tablet INTEGER NOT NULL, state TEXT NOT NULL,
    total_row_count INTEGER NOT NULL, trimmed_row_count INTEGER NOT NULL,
    last_write_ts INTEGER NOT NULL, cumulative_data_weight INTEGER NOT NULL,
    PRIMARY KEY (table_id, tablet)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks (
    table_id TEXT NOT NULL, tablet INTEGER NOT NULL, first_row INTEGER NOT NULL, row_count INTEGER NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY (table_id, tablet, first_row)
);
CREATE TABLE IF NOT EXISTS versions (
    table_id TEXT NOT NULL, key BLOB NOT NULL, ts INTEGER NOT NULL, value BLOB,
    PRIMARY KEY (table_id, key, ts)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS registrations (
    queue_cluster TEXT NOT NULL, queue_path TEXT NOT NULL, consumer_cluster TEXT NOT NULL,
    consumer_path TEXT NOT NULL, vital INTEGER NOT NULL, partitions BLOB,
    PRIMARY KEY (queue_cluster, queue_path, consumer_cluster, consumer_path)
);
"""


class Storage:
    """SQLite access: one write connection (serialised by the caller's commit lock), per-thread readers."""

    def __init__(self, data_dir: str | Path, synchronous: str = "NORMAL") -> None:
        self.path = Path(data_dir) / "ytqueue-local.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._synchronous = synchronous
        self._write = self._connect()
        self._write.executescript(_SCHEMA)
        self._local = threading.local()
        self._write_lock = threading.RLock()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=60)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.execute("PRAGMA cache_size=-65536")
        return conn

    @property
    def reader(self) -> sqlite3.Connection:
        """A connection for this thread's reads (sees committed data only)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic SQLite write transaction."""
        with self._write_lock:
            self._write.execute("BEGIN IMMEDIATE")
            try:
                yield self._write
            except BaseException:
                self._write.execute("ROLLBACK")
                raise
            self._write.execute("COMMIT")

    # ----------------------------------------------------------------------------------------------------------
    # Reads used at start-up and by commands

    def get_meta(self, key: str, default: int = 0) -> int:
        """An integer counter from ``meta``."""
        row = self.reader.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else default

    def load_nodes(self) -> list[tuple[str, str, str, bytes, bytes]]:
        """Every Cypress node, parents before children."""
        return list(self.reader.execute("SELECT path, id, type, sys, attrs FROM nodes ORDER BY length(path)"))

    def load_tablets(self) -> list[tuple[Any, ...]]:
        """Every tablet row."""
        return list(
            self.reader.execute(
                "SELECT table_id, tablet, state, total_row_count, trimmed_row_count, last_write_ts, "
                "cumulative_data_weight FROM tablets ORDER BY table_id, tablet"
            )
        )

    def load_registrations(self) -> list[tuple[Any, ...]]:
        """Every queue consumer registration."""
        return list(
            self.reader.execute(
                "SELECT queue_cluster, queue_path, consumer_cluster, consumer_path, vital, partitions "
                "FROM registrations"
            )
        )

    def last_chunk(self, table_id: str, tablet: int) -> tuple[int, int, bytes] | None:
        """The last chunk of a tablet: ``(first_row, row_count, data)``."""
        row = self.reader.execute(
            "SELECT first_row, row_count, data FROM chunks WHERE table_id = ? AND tablet = ? "
            "ORDER BY first_row DESC LIMIT 1",
            (table_id, tablet),
        ).fetchone()
        return (int(row[0]), int(row[1]), bytes(row[2])) if row else None

    def read_chunks(self, table_id: str, tablet: int, begin: int, end: int) -> Iterator[tuple[int, int, bytes]]:
        """Chunks of a tablet overlapping rows ``[begin, end)``, in row order."""
        conn = self.reader
        start = conn.execute(
            "SELECT max(first_row) FROM chunks WHERE table_id = ? AND tablet = ? AND first_row <= ?",
            (table_id, tablet, begin),
        ).fetchone()[0]
        if start is None:
            start = begin
        cursor = conn.execute(
            "SELECT first_row, row_count, data FROM chunks WHERE table_id = ? AND tablet = ? "
            "AND first_row >= ? AND first_row < ? ORDER BY first_row",
            (table_id, tablet, start, end),
        )
        while True:
            batch = cursor.fetchmany(64)
            if not batch:
                return
            for first_row, row_count, data in batch:
                if first_row + row_count > begin:
                    yield int(first_row), int(row_count), data

    def latest_version(self, table_id: str, key: bytes, ts: int) -> tuple[int, bytes | None] | None:
        """The newest version of a sorted-table key at or below ``ts``: ``(ts, value-or-None)``."""
        row = self.reader.execute(
            "SELECT ts, value FROM versions WHERE table_id = ? AND key = ? AND ts <= ? ORDER BY ts DESC LIMIT 1",
            (table_id, key, ts),
        ).fetchone()
        return (int(row[0]), row[1]) if row else None

    def latest_commit_ts(self, conn: sqlite3.Connection, table_id: str, key: bytes) -> int:
        """The commit timestamp of the newest version of a key (0 if none), on the write connection."""
        row = conn.execute("SELECT max(ts) FROM versions WHERE table_id = ? AND key = ?", (table_id, key)).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def scan_versions(
        self, table_id: str, ts: int, lower: bytes | None = None, upper: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        """Live rows of a sorted table at ``ts`` in key order: ``(key, value)``; streams in batches."""
        conn = self.reader
        sql = (
            "SELECT key, value FROM versions v WHERE table_id = ? AND ts = "
            "(SELECT max(ts) FROM versions w WHERE w.table_id = v.table_id AND w.key = v.key AND w.ts <= ?)"
        )
        args: list[Any] = [table_id, ts]
        if lower is not None:
            sql += " AND key >= ?"
            args.append(lower)
        if upper is not None:
            sql += " AND key < ?"
            args.append(upper)
        cursor = conn.execute(sql + " ORDER BY key", args)
        while True:
            batch = cursor.fetchmany(512)
            if not batch:
                return
            for key, value in batch:
                if value is not None:
                    yield key, value

    def count_live_keys(self, table_id: str) -> int:
        """An upper bound of live rows of a sorted table (distinct keys with any version)."""
        row = self.reader.execute("SELECT count(DISTINCT key) FROM versions WHERE table_id = ?", (table_id,)).fetchone()
        return int(row[0])
