"""The two Thrift gateways of HBase, behind one shape chosen once per task: :class:`Thrift1Gateway` (the classic
gateway, through ``happybase``) and :class:`Thrift2Gateway` (``thrift_api=2``). Each opens its connection, checks and
creates the table, builds the puts of a batch of rows and sends them; :class:`Sender` takes the gateway of the
sink's settings once. Connections are cached per Python process and reopened after a transport error."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol

from spyt_queue.errors import SpytQueueError, UnreachableError
from spyt_queue.sinks.hbase.thrift2 import Thrift2Client


class GatewaySettings(Protocol):
    """What the gateways read of the sink's settings (:class:`~spyt_queue.sinks.hbase.sink.HBaseWriteTask`)."""

    api: int
    host: str
    port: int
    timeout_ms: int
    transport: str
    protocol: str
    idl: str | None
    table: str
    families: tuple[str, ...]
    create_table: bool
    cells: tuple[tuple[str, bytes], ...]

    def describe(self) -> str: ...


_connections: dict[tuple, Any] = {}
_lock = threading.Lock()


def _thrift() -> Any:
    # lazy: happybase/thriftpy2 (the hbase extra) load only where the HBase sink runs
    import happybase  # noqa: F401 - loads the Thrift1 IDL as the module Hbase_thrift
    import Hbase_thrift

    return Hbase_thrift


def _key(settings: GatewaySettings) -> tuple:
    return (settings.api, settings.host, settings.port, settings.timeout_ms, settings.transport, settings.protocol)


def error_text(error: Exception) -> str:
    """A Thrift exception's own message (``IOError``/``TIOError``/``TIllegalArgument`` carry it in ``message``)."""
    return str(getattr(error, "message", None) or error)


def connection(settings: GatewaySettings) -> Any:
    """A cached connection of this Python process to the settings' gateway: a ``happybase.Connection`` (Thrift1)
    or a :class:`~spyt_queue.sinks.hbase.thrift2.Thrift2Client` (``thrift_api=2``); both have ``.client``."""
    key = _key(settings)
    with _lock:
        conn = _connections.get(key)
        if conn is None:
            conn = gateway(settings).connect(settings)
            _connections[key] = conn
        return conn


def drop_connection(settings: GatewaySettings) -> None:
    """Forget (and close) the cached connection after an error: the next use reconnects."""
    with _lock:
        conn = _connections.pop(_key(settings), None)
    if conn is not None:
        try:
            conn.close()
        except Exception:  # already broken
            pass


def _missing_table(settings: GatewaySettings) -> SpytQueueError:
    return SpytQueueError(
        f"{settings.describe()} does not exist; create it with families {list(settings.families)} or set "
        "create_table=true"
    )


def reconnecting(settings: GatewaySettings, call: Callable[[], Any]) -> Any:
    """``call()``, and once more on a new connection if the cached one was closed or broken: the gateways close
    connections idle longer than ``hbase.thrift.server.socket.read.timeout`` (60 s by default), so a Python
    worker's cached connection is often closed when the next batch comes. Only for idempotent calls (puts of the
    same cells, with ``timestamp_column`` the same versions; table checks)."""
    # lazy: happybase/thriftpy2 (the hbase extra) load only where the HBase sink runs
    from thriftpy2.transport import TTransportException  # installed with happybase (the hbase extra)

    try:
        return call()
    except (TTransportException, OSError):
        drop_connection(settings)
        return call()


def check_table(settings: GatewaySettings) -> None:
    """On the driver, before any task: the table and every family the mapping uses exist (``create_table=true``
    creates the table with them, one version each, no TTL), and so does the dead-letter target (``deadLetter.*``).
    Errors name the table, family or option."""
    if settings.dead_letters is not None:
        settings.dead_letters.target.check()
    try:
        present = reconnecting(settings, lambda: gateway(settings).table_families(connection(settings), settings))
    except SpytQueueError:
        raise
    except Exception as error:
        drop_connection(settings)
        hint = ""
        if "Invalid method name" in error_text(error) or "unknown method" in error_text(error).lower():
            other = gateway(settings).other_api
            hint = f"; is it a Thrift{'' if other == 1 else '2'} gateway? then set thrift_api={other}"
        raise UnreachableError(f"{settings.describe()}: {type(error).__name__}: {error_text(error)}{hint}") from None
    missing = [f for f in settings.families if f not in present]
    if missing:
        raise SpytQueueError(
            f"{settings.describe()} has no column family {', '.join(map(repr, missing))} "
            f"(families: {sorted(present)}); add it (alter) or map the columns elsewhere with family / column_mapping"
        )


class Gateway(ABC):
    """One kind of Thrift gateway: its connection, its table calls and its mutations."""

    #: ``thrift_api`` of this gateway, and of the other one (named in the hint of a wrong-gateway error).
    api: int
    other_api: int

    @abstractmethod
    def connect(self, settings: GatewaySettings) -> Any:
        """A new connection to the settings' gateway (it has ``.client``, ``.close()``)."""

    @abstractmethod
    def table_families(self, conn: Any, settings: GatewaySettings) -> set[str]:
        """The table's families, creating the table first if it is missing and ``create_table`` is set."""

    @abstractmethod
    def prepare(self, conn: Any) -> None:
        """Bind the classes :meth:`build` makes (from the connection's IDL or happybase's)."""

    @abstractmethod
    def build(
        self, cells: list[tuple[bytes, bytes, bytes]], keys: list[bytes], values: list[list[bytes | None]],
        stamps: list[int] | None,
    ) -> list[Any]:  # fmt: skip
        """The batch's mutations (rows whose every cell is null are left out: they would write nothing)."""

    @abstractmethod
    def send(self, conn: Any, table: bytes, mutations: list[Any]) -> None:
        """Send the mutations in as few calls as the gateway allows."""

    @abstractmethod
    def row_of(self, mutation: Any) -> bytes:
        """The row key of one mutation."""

    @abstractmethod
    def cells_of(self, mutation: Any) -> int:
        """How many cells one mutation puts."""

    @abstractmethod
    def timestamp_of(self, mutation: Any) -> int | None:
        """The HBase timestamp (ms) of one mutation, None for server time."""


class Thrift1Gateway(Gateway):
    """The classic Thrift gateway through ``happybase``: one timestamp per call, so rows are grouped by timestamp."""

    api, other_api = 1, 2

    def connect(self, settings: GatewaySettings) -> Any:
        """A ``happybase.Connection``."""
        # lazy: happybase/thriftpy2 (the hbase extra) load only where the HBase sink runs
        import happybase

        try:
            return happybase.Connection(
                settings.host,
                settings.port,
                timeout=settings.timeout_ms,
                transport=settings.transport,
                protocol=settings.protocol,
            )
        except Exception as error:
            raise UnreachableError(
                f"HBase Thrift gateway {settings.host}:{settings.port} did not answer ({error}); check the "
                "'thrift' option and that the gateway runs (hbase thrift start)"
            ) from None

    def table_families(self, conn: Any, settings: GatewaySettings) -> set[str]:
        """The families through ``happybase``; ``create_table`` creates one version each, no TTL."""
        tables = {t.decode() for t in conn.tables()}
        if settings.table not in tables:
            if not settings.create_table:
                raise _missing_table(settings)
            try:
                conn.create_table(settings.table, {f: {"max_versions": 1} for f in settings.families})
            except _thrift().AlreadyExists:
                pass
        return {name.decode() for name in conn.table(settings.table).families()}

    def prepare(self, conn: Any) -> None:
        """``Mutation`` and ``BatchMutation`` of happybase's Thrift1 IDL."""
        thrift = _thrift()
        self.Mutation, self.BatchMutation = thrift.Mutation, thrift.BatchMutation

    def build(
        self, cells: list[tuple[bytes, bytes, bytes]], keys: list[bytes], values: list[list[bytes | None]],
        stamps: list[int] | None,
    ) -> list[Any]:  # fmt: skip
        """``(timestamp, BatchMutation)`` per row with a cell."""
        Mutation, BatchMutation = self.Mutation, self.BatchMutation
        columns = [q for q, _, _ in cells]
        out: list[Any] = []
        for r, (key, *row) in enumerate(zip(keys, *values, strict=True)):
            mutations = [Mutation(False, q, v) for q, v in zip(columns, row, strict=True) if v is not None]
            if mutations:
                out.append((None if stamps is None else stamps[r], BatchMutation(key, mutations)))
        return out

    def send(self, conn: Any, table: bytes, mutations: list[Any]) -> None:
        """One ``mutateRows``/``mutateRowsTs`` per distinct timestamp."""
        groups: dict[int | None, list[Any]] = {}
        for ts, mutation in mutations:
            groups.setdefault(ts, []).append(mutation)
        for ts, group in groups.items():
            if ts is None:
                conn.client.mutateRows(table, group, {})
            else:
                conn.client.mutateRowsTs(table, group, ts, {})

    def row_of(self, mutation: Any) -> bytes:
        """The ``BatchMutation``'s row."""
        return mutation[1].row

    def cells_of(self, mutation: Any) -> int:
        """The ``BatchMutation``'s mutations."""
        return len(mutation[1].mutations)

    def timestamp_of(self, mutation: Any) -> int | None:
        """The timestamp it is sent with."""
        return mutation[0]


class Thrift2Gateway(Gateway):
    """The Thrift2 gateway (:class:`~spyt_queue.sinks.hbase.thrift2.Thrift2Client`): one ``putMultiple`` per batch."""

    api, other_api = 2, 1

    def connect(self, settings: GatewaySettings) -> Any:
        """A :class:`Thrift2Client`."""
        return Thrift2Client(
            settings.host, settings.port, settings.timeout_ms, settings.transport, settings.protocol, settings.idl
        )

    def table_families(self, conn: Any, settings: GatewaySettings) -> set[str]:
        """The families through Thrift2; ``create_table`` creates the table with them."""
        if not conn.table_exists(settings.table):
            if not settings.create_table:
                raise _missing_table(settings)
            try:
                conn.create_table(settings.table, settings.families)
            except conn.idl.TIOError as error:
                if "TableExistsException" not in error_text(error):
                    raise
        return set(conn.families(settings.table))

    def prepare(self, conn: Any) -> None:
        """``TPut`` and ``TColumnValue`` of the gateway's IDL."""
        self.TPut, self.TColumnValue = conn.idl.TPut, conn.idl.TColumnValue

    def build(
        self, cells: list[tuple[bytes, bytes, bytes]], keys: list[bytes], values: list[list[bytes | None]],
        stamps: list[int] | None,
    ) -> list[Any]:  # fmt: skip
        """A ``TPut`` per row with a cell."""
        TPut, TColumnValue = self.TPut, self.TColumnValue
        names = [(family, qualifier) for _, family, qualifier in cells]
        out: list[Any] = []
        for r, (key, *row) in enumerate(zip(keys, *values, strict=True)):
            columns = [TColumnValue(f, q, v) for (f, q), v in zip(names, row, strict=True) if v is not None]
            if columns:
                out.append(TPut(key, columns, None if stamps is None else stamps[r]))
        return out

    def send(self, conn: Any, table: bytes, mutations: list[Any]) -> None:
        """One ``putMultiple``."""
        conn.client.putMultiple(table, mutations)

    def row_of(self, mutation: Any) -> bytes:
        """The ``TPut``'s row."""
        return mutation.row

    def cells_of(self, mutation: Any) -> int:
        """The ``TPut``'s column values."""
        return len(mutation.columnValues)

    def timestamp_of(self, mutation: Any) -> int | None:
        """The ``TPut``'s timestamp."""
        return mutation.timestamp


def gateway(settings: GatewaySettings) -> Gateway:
    """The gateway of ``thrift_api`` (a new instance: :meth:`Gateway.prepare` binds a connection's classes)."""
    return Thrift2Gateway() if settings.api == 2 else Thrift1Gateway()


class Sender:
    """Builds one gateway's mutations for a batch of rows and sends them; the gateway is chosen once, here."""

    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings
        self.table = settings.table.encode()
        self.cells = [(q, *q.split(b":", 1)) for _, q in settings.cells]
        self.gateway = gateway(settings)
        self.gateway.prepare(connection(settings))

    def build(self, keys: list[bytes], values: list[list[bytes | None]], stamps: list[int] | None) -> list[Any]:
        """The batch's mutations (rows whose every cell is null are left out: they would write nothing)."""
        return self.gateway.build(self.cells, keys, values, stamps)

    def send(self, mutations: list[Any]) -> None:
        """Send them on this process's connection."""
        self.gateway.send(connection(self.settings), self.table, mutations)

    def first_row(self, mutations: list[Any]) -> bytes:
        """The row key of the first mutation."""
        return self.gateway.row_of(mutations[0])

    def row_of(self, mutation: Any) -> bytes:
        """The row key of one mutation."""
        return self.gateway.row_of(mutation)

    def cells_of(self, mutation: Any) -> int:
        """How many cells one mutation puts."""
        return self.gateway.cells_of(mutation)

    def timestamp_of(self, mutation: Any) -> int | None:
        """The HBase timestamp (ms) of one mutation, None for server time."""
        return self.gateway.timestamp_of(mutation)
