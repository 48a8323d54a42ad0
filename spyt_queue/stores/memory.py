"""An in-memory offset store, for unit tests of the committer and of code built on :class:`OffsetStore`.

Positions live in a :class:`MemoryServer` (a dict guarded by a lock) that several store objects may share, the way
several queries share one ZooKeeper: each store sees only its own ``(group, source)``. Values are kept as decimal
text, the serialised form other stores use, so a test can plant garbage with :meth:`MemoryServer.put_raw`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from spyt_queue.errors import ConsumerConflictError, SpytQueueError
from spyt_queue.stores.base import OffsetStore


class MemoryStoreUnavailable(SpytQueueError):
    """A simulated transient failure (tests inject it); :meth:`MemoryStore.is_transient` is true for it."""


class MemoryServer:
    """The shared "server": raw values by ``(group, source, partition)``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: dict[tuple[str, str, str], str] = {}
        self.writers: dict[tuple[str, str, str], str | None] = {}

    def put_raw(self, group: str, source: str, partition: str, text: str) -> None:
        """Store ``text`` as is (tests use it to plant unreadable content)."""
        with self.lock:
            self.values[(group, source, partition)] = text


class MemoryStore(OffsetStore):
    """Committed positions of one ``source`` for one ``group`` in a :class:`MemoryServer` (a fresh one by default)."""

    def __init__(self, source: str, group: str = "", server: MemoryServer | None = None) -> None:
        self.source = source
        self.group = group
        self.server = server if server is not None else MemoryServer()

    def _parse(self, partition: str, text: str) -> int:
        if not text.isascii() or not text.strip().isdigit():
            raise SpytQueueError(
                f"{self.describe()}: the position of partition {partition!r} is {text!r}, not a decimal offset"
            )
        return int(text)

    def _read(self) -> dict[str, int]:
        """Every stored position of this store; the caller holds the lock."""
        return {
            key: self._parse(key, text)
            for (group, source, key), text in self.server.values.items()
            if group == self.group and source == self.source
        }

    def committed(self) -> dict[str, int | None]:
        """The stored position of every partition committed so far."""
        with self.server.lock:
            return dict(self._read())

    KEEPS_WRITER = True

    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None = None) -> None:
        """Compare every partition of ``new`` with ``old`` and write them all with ``writer``, under one lock."""
        with self.server.lock:
            current = self._read()
            stale = {key: current.get(key) for key in new if current.get(key) != old.get(key)}
            if stale:
                expected = {k: old.get(k) for k in stale}
                raise ConsumerConflictError(
                    f"{self.describe()}: expected {expected}, found {stale}: another query moved these positions"
                )
            for key, value in new.items():
                self.server.values[(self.group, self.source, key)] = str(int(value))
                self.server.writers[(self.group, self.source, key)] = writer

    def written_by(self, writer: str, positions: Mapping[str, int]) -> bool | None:
        """Whether every partition of ``positions`` was last written by ``writer`` (``None``: written without one)."""
        with self.server.lock:
            found = {self.server.writers.get((self.group, self.source, key)) for key in positions}
        if None in found:
            return None
        return found == {writer}

    def is_transient(self, error: BaseException) -> bool:
        """Only the simulated :class:`MemoryStoreUnavailable` is transient."""
        return isinstance(error, MemoryStoreUnavailable)

    def describe(self) -> str:
        """``memory://<group>/<source>``."""
        return f"memory://{self.group}/{self.source}"
