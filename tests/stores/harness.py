"""Store factories for the offset-store conformance suite (``test_store_conformance.py``).

Adding a store is a few lines: subclass :class:`StoreFactory`, implement :meth:`~StoreFactory.store` (a fresh store
object for ``(source, group)`` on the one server of the test, as a new query would build it),
:meth:`~StoreFactory.write_garbage` and :meth:`~StoreFactory.lost_reply_error`, and add the factory to the
``factory`` fixture of the suite. Override :meth:`~StoreFactory.interleave` if the store reads before it writes
(so the suite can slip a concurrent writer into that window), and :meth:`~StoreFactory.key` if the store only
accepts partition keys of some shape.
"""

from __future__ import annotations

import contextlib
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from spyt_queue.stores.base import OffsetStore
from spyt_queue.stores.memory import MemoryServer, MemoryStore, MemoryStoreUnavailable


class StoreFactory(ABC):
    """Fresh stores on one server, isolated from other tests, plus the hooks the suite needs."""

    #: Whether stores for two sources in one group are isolated (Kafka-layout stores key by topic instead).
    isolates_sources = True

    def __init__(self) -> None:
        self.opened: list[OffsetStore] = []

    @abstractmethod
    def _make(self, source: str, group: str) -> OffsetStore:
        """A new store object for ``source`` and ``group``."""

    def store(self, source: str, group: str = "g") -> OffsetStore:
        """A new store object (closed by :meth:`close`)."""
        store = self._make(source, group)
        self.opened.append(store)
        return store

    def key(self, index: int) -> str:
        """The partition key of partition number ``index`` for this store."""
        return str(index)

    def colon_keys(self) -> list[str]:
        """Partition keys containing ':' (Kafka's ``topic:partition`` shape and worse)."""
        return ["events:0", "events:12", "a:b:3"]

    @abstractmethod
    def write_garbage(self, store: OffsetStore, key: str) -> str:
        """Put unreadable content where ``store`` keeps ``key``; return the place the error must name."""

    @abstractmethod
    def lost_reply_error(self) -> BaseException:
        """An error the store classifies as transient, as raised when a reply is lost on the way back."""

    @contextlib.contextmanager
    def interleave(self, store: OffsetStore, writer: Callable[[], None]) -> Iterator[None]:
        """Within the block, ``store``'s next :meth:`advance` runs ``writer`` after reading the current positions
        and before writing. A store that reads and writes in one atomic step runs ``writer`` first."""
        original = store.advance

        def advance(old: Mapping[str, int | None], new: Mapping[str, int]) -> None:
            store.advance = original  # type: ignore[method-assign]
            writer()
            original(old, new)

        store.advance = advance  # type: ignore[method-assign]
        try:
            yield
        finally:
            store.advance = original  # type: ignore[method-assign]

    def close(self) -> None:
        for store in self.opened:
            with contextlib.suppress(Exception):
                store.close()


class LostReply(OffsetStore):
    """Wraps a store: the first :meth:`advance` is applied, then fails with ``error`` as if the reply was lost."""

    def __init__(self, store: OffsetStore, error: BaseException) -> None:
        self.store, self.error, self.lost = store, error, 0

    def committed(self) -> dict[str, int | None]:
        return self.store.committed()

    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int]) -> None:
        self.store.advance(old, new)
        if not self.lost:
            self.lost += 1
            raise self.error

    def is_transient(self, error: BaseException) -> bool:
        return self.store.is_transient(error)

    def describe(self) -> str:
        return self.store.describe()


class MemoryFactory(StoreFactory):
    """:class:`MemoryStore` objects sharing one :class:`MemoryServer`."""

    def __init__(self) -> None:
        super().__init__()
        self.server = MemoryServer()

    def _make(self, source: str, group: str) -> OffsetStore:
        return MemoryStore(source, group, self.server)

    def write_garbage(self, store: OffsetStore, key: str) -> str:
        assert isinstance(store, MemoryStore)
        self.server.put_raw(store.group, store.source, key, "12abc")
        return store.describe()

    def lost_reply_error(self) -> BaseException:
        return MemoryStoreUnavailable("reply lost (simulated)")


class ZooKeeperFactory(StoreFactory):
    """:class:`ZooKeeperStore` objects on the session's real ZooKeeper, under a root unique to the test."""

    def __init__(self, hosts: str, layout: str = "source") -> None:
        super().__init__()
        self.hosts, self.layout = hosts, layout
        self.root = f"/spyt-tests/{uuid.uuid4().hex[:10]}/consumers"
        self.isolates_sources = layout == "source"

    def _make(self, source: str, group: str) -> OffsetStore:
        from spyt_queue.stores.zookeeper import ZooKeeperStore

        return ZooKeeperStore(self.hosts, self.root, source, group, layout=self.layout, timeout=15)

    def key(self, index: int) -> str:
        return f"topic.x:{index}" if self.layout == "kafka" else str(index)

    def write_garbage(self, store: OffsetStore, key: str) -> str:
        from spyt_queue.stores.zookeeper import ZooKeeperStore

        assert isinstance(store, ZooKeeperStore)
        path = store.path_of(key)
        zk = store.client()
        zk.ensure_path(path)
        zk.set(path, b"not a number\n")
        return path

    def lost_reply_error(self) -> BaseException:
        from kazoo.exceptions import ConnectionLoss

        return ConnectionLoss()

    @contextlib.contextmanager
    def interleave(self, store: OffsetStore, writer: Callable[[], None]) -> Iterator[None]:
        """The writer runs right after the store read the znodes' versions, before its ``multi``."""
        original: Any = store._read  # type: ignore[attr-defined]

        def read(paths: Mapping[str, str]) -> Any:
            store._read = original  # type: ignore[attr-defined]
            result = original(paths)
            writer()
            return result

        store._read = read  # type: ignore[attr-defined]
        try:
            yield
        finally:
            store._read = original  # type: ignore[attr-defined]
