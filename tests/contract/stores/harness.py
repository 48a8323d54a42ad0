"""Store factories for the offset-store conformance suite (``test_store_conformance.py``).

Adding a store is a few lines: subclass :class:`StoreFactory`, implement :meth:`~StoreFactory.store` (a fresh store
object for ``(source, group)`` on the one server of the test, as a new query would build it),
:meth:`~StoreFactory.write_garbage` and :meth:`~StoreFactory.lost_reply_error`, and add the factory to the
``factory`` fixture of the suite. Override :meth:`~StoreFactory.interleave` if the store reads before it writes
(so the suite can slip a concurrent writer into that window for real), and :meth:`~StoreFactory.key` /
:meth:`~StoreFactory.unusual_keys` if the store only accepts partition keys of some shape.

Where a promise cannot hold for a store by its nature, the factory says so with a capability attribute and the
suite asserts what the store does instead (never a skip): ``isolates_sources`` (Kafka-layout stores key by
topic), ``compare_and_set`` (a Kafka group has none: a writer inside the advance's read-then-commit window is
overwritten), ``garbage_error`` / ``garbage_blocks_advance`` (what foreign content the store refuses, and where).
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from spyt_queue.kafka.group_store import KafkaGroupStore
from spyt_queue.stores.base import OffsetStore
from spyt_queue.stores.memory import MemoryServer, MemoryStore, MemoryStoreUnavailable
from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.consumer_store import YtConsumerStore


class StoreFactory(ABC):
    """Fresh stores on one server, isolated from other tests, plus the hooks the suite needs."""

    #: Whether stores for two sources in one group are isolated (Kafka-layout stores key by topic instead).
    isolates_sources = True
    #: Whether an advance is a compare-and-set even against a writer slipping in between its read and its write
    #: (Kafka: no; it only sees writers that came before its read).
    compare_and_set = True
    #: What the error for content written by someone else (``write_garbage``) says; ``None``: the store cannot
    #: hold unreadable content and reads back what was written (``FOREIGN_OFFSET``).
    garbage_error: str | None = "not a decimal offset"
    #: Whether that content also makes an advance fail (rather than only reading the positions).
    garbage_blocks_advance = True
    #: The offset a ``write_garbage`` leaves when ``garbage_error`` is ``None``.
    FOREIGN_OFFSET = 0
    #: Whether the store keeps the writer token with the positions (a YT consumer row has no place for one: its
    #: lost replies are proven by the failed attempt itself, and a restart can not tell whose positions it finds).
    keeps_writer = True

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

    def unusual_keys(self) -> list[str]:
        """The oddest partition keys the store accepts: with ':' (Kafka's ``topic:partition`` shape and worse)
        for stores taking any string, and a large partition number."""
        return ["events:0", "events:12", "a:b:3"]

    @abstractmethod
    def write_garbage(self, store: OffsetStore, key: str) -> str:
        """Put content ``store`` cannot use where it keeps ``key`` (as another tool might); return the place the
        error must name (see ``garbage_error``)."""

    @abstractmethod
    def lost_reply_error(self) -> BaseException:
        """An error the store classifies as transient, as raised when a reply is lost on the way back."""

    def interleave(self, store: OffsetStore, writer: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """Within the block, ``store``'s next :meth:`advance` runs ``writer`` after reading the current positions
        and before writing. A store that reads and writes in one atomic step runs ``writer`` first."""
        return hook_once(store, "advance", writer_first(writer))

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

    @property
    def KEEPS_WRITER(self) -> bool:  # mirrors the wrapped store's class attribute
        return self.store.KEEPS_WRITER

    def written_by(self, writer: str, positions: Mapping[str, int]) -> bool | None:
        return self.store.written_by(writer, positions)

    def outcome_unknown(self, error: BaseException) -> bool:
        return self.store.outcome_unknown(error)

    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None = None) -> None:
        self.store.advance(old, new, writer)
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
        from spyt_queue.zookeeper.store import ZooKeeperStore

        return ZooKeeperStore(self.hosts, self.root, source, group, layout=self.layout, timeout=15)

    def key(self, index: int) -> str:
        return f"topic.x:{index}" if self.layout == "kafka" else str(index)

    def write_garbage(self, store: OffsetStore, key: str) -> str:
        from spyt_queue.zookeeper.store import ZooKeeperStore

        assert isinstance(store, ZooKeeperStore)
        path = store.path_of(key)
        zk = store.client()
        zk.ensure_path(path)
        zk.set(path, b"not a number\n")
        return path

    def lost_reply_error(self) -> BaseException:
        from kazoo.exceptions import ConnectionLoss

        return ConnectionLoss()

    def interleave(self, store: OffsetStore, writer: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """The writer runs right after the store read the znodes' versions, before its ``multi``."""
        return hook_once(store, "_read", writer_after(writer))


class YtConsumerFactory(StoreFactory):
    """:class:`YtConsumerStore` objects on the session's embedded YT server.

    Each distinct source of a test is a fresh queue with :attr:`TABLETS` tablets (partition keys are tablet
    indexes), each group a consumer table registered for every queue it is used with.
    """

    keeps_writer = False
    #: Enough tablets for the largest partition index the suite uses (``unusual_keys``).
    TABLETS = 13
    #: An int64 offset column cannot hold garbage; what the store refuses is rows of the same queue path from two
    #: clusters (it cannot tell which is its own). Its advance is a server-side CAS on its own cluster's rows.
    garbage_error = "from several clusters"
    garbage_blocks_advance = False

    def __init__(self, yt: Any, proxy: str, root: str) -> None:
        super().__init__()
        self.yt, self.proxy, self.root = yt, proxy, root
        self.queues: dict[str, str] = {}
        self.consumers: dict[str, str] = {}
        self.registered: set[tuple[str, str]] = set()

    def queue(self, source: str) -> str:
        """The queue standing for ``source`` (created on first use)."""
        if source not in self.queues:
            path = f"{self.root}/queue-{len(self.queues)}"
            create_queue(self.yt, path, [column("id", "int64")], tablet_count=self.TABLETS)
            self.queues[source] = path
        return self.queues[source]

    def _make(self, source: str, group: str) -> OffsetStore:
        from spyt_queue.yt.backend import YtConnection

        queue = self.queue(source)
        consumer = self.consumers.setdefault(group, f"{self.root}/consumer-{len(self.consumers)}")
        if (queue, consumer) not in self.registered:
            create_consumer(self.yt, consumer, queue, exist_ok=True)
            self.registered.add((queue, consumer))
        return YtConsumerStore(YtConnection(self.proxy), queue, consumer)

    def unusual_keys(self) -> list[str]:
        return ["0", "12", "3"]  # tablet indexes only; the widest one the queues have

    def write_garbage(self, store: OffsetStore, key: str) -> str:
        """Rows for partition ``key`` of the store's queue path from its own cluster (offset 1) and another one."""
        assert isinstance(store, YtConsumerStore)
        own = self.cluster_of(store)
        rows = [
            {"queue_cluster": cluster, "queue_path": store.queue_path, "partition_index": int(key), "offset": offset}
            for cluster, offset in ((own, 1), (f"{own}-elsewhere", 99))
        ]
        self.yt.insert_rows(store.consumer_path, rows)
        return store.consumer_path

    def cluster_of(self, store: YtConsumerStore) -> str:
        """The cluster name the server writes into the store's rows (``local`` on the embedded server)."""
        rows = list(self.yt.select_rows(f"queue_cluster from [{store.consumer_path}] limit 1"))
        assert rows, "write_garbage needs one committed row to learn the cluster name"
        return str(rows[0]["queue_cluster"])

    def lost_reply_error(self) -> BaseException:
        from yt.packages.requests.exceptions import ReadTimeout

        return ReadTimeout("read timed out: the advance may have been applied")

    def interleave(self, store: OffsetStore, writer: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """The writer commits (from another thread) after the store's tablet transaction started and before its
        first ``advance_consumer``: the CAS reads at the transaction's start timestamp, so only the commit can
        notice the writer."""
        assert isinstance(store, YtConsumerStore)
        client = store.connection.thread_client()  # the one the store's advance uses in this thread
        fired: list[bool] = []

        def once() -> None:
            if not fired:
                fired.append(True)
                run_in_thread(writer)

        stack = contextlib.ExitStack()  # one partition: advance_consumer; several: one execute_batch
        stack.enter_context(hook_once(client, "advance_consumer", writer_first(once)))
        stack.enter_context(hook_once(client, "execute_batch", writer_first(once)))
        return stack


class KafkaGroupFactory(StoreFactory):
    """:class:`KafkaGroupStore` objects on the session's real broker.

    Every source of a test is a subscription of the one topic ``topic`` (created once per module with
    ``partitions`` partitions): a Kafka group keys offsets by topic, so a source is isolated from another only
    through its topic, and subscriptions of one topic in one group share positions, as in ZooKeeper's Kafka
    layout. Groups are group ids unique to the factory.

    Limit (documented in the README): Kafka has no compare-and-set on group offsets. The store reads the group's
    offsets and then commits; a writer that commits in between is overwritten, not detected.
    """

    isolates_sources = False
    compare_and_set = False
    #: Group offsets are integers: nothing unreadable can be stored (see ``write_garbage``).
    garbage_error = None
    #: A foreign commit the store reads back as written (an offset far beyond the log, with metadata).
    FOREIGN_OFFSET = 10**12

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__()
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.prefix = f"store-conformance-{uuid.uuid4().hex[:8]}"

    def group_id(self, group: str) -> str:
        return f"{self.prefix}-{group}"

    def _make(self, source: str, group: str) -> OffsetStore:
        from spyt_queue.kafka.group_store import KafkaGroupStore

        keys = [self.key(i) for i in range(self.partitions)]
        return KafkaGroupStore({"bootstrap.servers": self.bootstrap}, self.group_id(group), lambda: keys, 30.0)

    def key(self, index: int) -> str:
        return f"{self.topic}:{index}"

    def unusual_keys(self) -> list[str]:
        return [self.key(0), self.key(12), self.key(3)]  # Kafka topic names cannot hold ':'

    def write_garbage(self, store: OffsetStore, key: str) -> str:
        """What a foreign consumer of the group can commit: an offset far beyond the log, with metadata."""
        from confluent_kafka import Consumer, TopicPartition

        from spyt_queue.kafka.subscription import split_key

        assert isinstance(store, KafkaGroupStore)
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": store.group_id, "enable.auto.commit": False}
        )
        try:
            topic, partition = split_key(key)
            offsets = [TopicPartition(topic, partition, self.FOREIGN_OFFSET, "written by another tool")]
            consumer.commit(offsets=offsets, asynchronous=False)
        finally:
            consumer.close()
        return store.group_id

    def lost_reply_error(self) -> BaseException:
        from confluent_kafka import KafkaError, KafkaException

        return KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT, "OffsetCommit timed out (reply lost)"))

    def interleave(self, store: OffsetStore, writer: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """The writer runs after the store's advance read the group's offsets, before it commits."""

        def advance(
            original: Callable[..., None],
            old: Mapping[str, int | None],
            new: Mapping[str, int],
            token: str | None = None,
        ) -> None:
            with hook_once(store, "committed", writer_after(writer)):
                original(old, new, token)

        return hook_once(store, "advance", advance)


class HBaseFactory(StoreFactory):
    """:class:`HBaseStore` objects on the session's real HBase (through its Thrift1 gateway), in a table unique to
    the factory: every (group, source) is a row prefix in it."""

    garbage_error = "not a commit of positions"

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.host, self.port = host, port
        self.table = f"offsets_{uuid.uuid4().hex[:10]}"

    def _make(self, source: str, group: str) -> OffsetStore:
        from spyt_queue.sinks.hbase.store import HBaseStore

        return HBaseStore(self.host, self.port, self.table, source, group, timeout=30)

    def write_garbage(self, store: OffsetStore, key: str) -> str:
        """Another tool's value in the cell of the newest commit row (Cloudera's layout writes bare numbers)."""
        from spyt_queue.sinks.hbase.store import HBaseStore, commit_row_key

        assert isinstance(store, HBaseStore)
        row = commit_row_key(store.prefix, store.newest()[0])
        store.connection().table(self.table).put(row, {store.column: b"120"})
        return row.decode()

    def lost_reply_error(self) -> BaseException:
        from thriftpy2.transport import TTransportException

        return TTransportException(TTransportException.TIMED_OUT, "TSocket read 0 bytes (reply lost)")

    def interleave(self, store: OffsetStore, writer: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """The writer runs right after the store read the newest commit, before its ``checkAndPut``."""
        return hook_once(store, "newest", writer_after(writer))



class KuduFactory(StoreFactory):
    """:class:`KuduStore` objects on the session's real Kudu, in a table unique to the factory: every (group,
    source) is a key prefix (group_id, source) of its insert-only commit log."""

    garbage_error = "not a commit of positions"

    def __init__(self, masters: str) -> None:
        super().__init__()
        self.masters = masters
        self.table = f"offsets_{uuid.uuid4().hex[:10]}"

    def _make(self, source: str, group: str) -> OffsetStore:
        from spyt_queue.sinks.kudu.store import KuduStore

        return KuduStore(self.masters, self.table, source, group)

    def write_garbage(self, store: OffsetStore, key: str) -> str:
        """Another tool's row as the newest generation: a bare number where the commit document belongs."""
        from spyt_queue.sinks.kudu.mutations import Mutation
        from spyt_queue.sinks.kudu.store import KuduStore

        assert isinstance(store, KuduStore)
        generation, _ = store.newest()
        row = {"group_id": store.group, "source": store.source, "generation": generation + 1, "positions": "120"}
        store._open(create=True).apply([Mutation("insert", row)])
        return f"generation={generation + 1}"

    def lost_reply_error(self) -> BaseException:
        from spyt_queue.sinks.kudu.client import KuduError

        return KuduError("Kudu flush on table 'offsets' failed: Timed out: cannot complete before timeout", True)

    def interleave(self, store: OffsetStore, writer: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """The writer runs right after the store read the newest generation, before its ``INSERT``."""
        return hook_once(store, "newest", writer_after(writer))

@contextlib.contextmanager
def hook_once(target: Any, name: str, hook: Callable[..., Any]) -> Iterator[None]:
    """Within the block, the next call of ``target.<name>(...)`` runs ``hook(original, ...)`` instead; the
    attribute is restored first, so the hook (and anything it calls) reaches the original."""
    original, own = getattr(target, name), name in vars(target)

    def restore() -> None:
        if own:
            setattr(target, name, original)
        else:
            vars(target).pop(name, None)

    def once(*args: Any, **kwargs: Any) -> Any:
        restore()
        return hook(original, *args, **kwargs)

    setattr(target, name, once)
    try:
        yield
    finally:
        restore()


def writer_first(writer: Callable[[], None]) -> Callable[..., Any]:
    """A :func:`hook_once` hook running ``writer`` before the original call."""

    def hook(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        writer()
        return original(*args, **kwargs)

    return hook


def writer_after(writer: Callable[[], None]) -> Callable[..., Any]:
    """A :func:`hook_once` hook running ``writer`` after the original call, before handing back its result."""

    def hook(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        writer()
        return result

    return hook


def run_in_thread(call: Callable[[], None]) -> None:
    """Run ``call`` in another thread (outside this thread's client transactions) and re-raise its error."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:  # handed to the caller
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
