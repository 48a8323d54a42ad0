"""A small Python client for Apache Kudu over the official Java client (``org.apache.kudu:kudu-client``) via JPype.

Why this route: ``kudu-python`` has no wheels and its sdist needs the Kudu C++ headers, which no package registry
serves; the Java client is one shaded jar from Maven Central, and JPype1 has wheels. The JVM starts once per Python
process (driver, each Spark Python worker) with the client jars on its class path, found in this order:

1. ``jars=`` given to :func:`start_jvm` (the sink's ``kudu.jars`` option reaches executors this way);
2. the environment variable ``SPYT_KUDU_JARS``: a directory of jars, or jar paths separated by ``os.pathsep``
   (on a cluster: ``spark.executorEnv.SPYT_KUDU_JARS``);
3. ``integration/target/kudu-client-libs/`` of a source checkout (what ``integration/install.sh`` fills).

Types: every Kudu column type maps to one Python type, both ways, and NULL is read and written in any nullable
column (a NULL never stops reading the rest of the row):

=================  ====================================================================================
Kudu               Python
=================  ====================================================================================
BOOL               ``bool``
INT8/16/32/64      ``int``
FLOAT, DOUBLE      ``float``
DECIMAL(p, s)      ``decimal.Decimal``, exact to 38 digits (written with the column's scale; more decimal places, or
                   more digits than the precision, is an error)
STRING, VARCHAR    ``str`` (VARCHAR(n): more than n characters, i.e. code points, is an error, never truncated)
BINARY             ``bytes`` (``bytearray``/``memoryview`` accepted)
UNIXTIME_MICROS    UTC microseconds since the epoch. Read as an aware UTC ``datetime.datetime``; written from an aware
                   ``datetime`` (its instant), a naive one (its wall clock taken as UTC) or an ``int`` (micros).
                   The process's time zone never takes part.
DATE               ``datetime.date``
=================  ====================================================================================
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spyt_queue.errors import BadRecordError, UnreachableError

from .cells import Column, boxed, cell_writer, get_cell, set_cell
from .errors import KuduError, KuduTableNotFoundError, KuduUnavailableError, KuduWriteError, RowError
from .jvm import KUDU_JARS_ENV, JavaTypes, java_error, java_types, kudu_error, kudu_jars, start_jvm, status_transient
from .mutations import Mutation, MutationKind, format_key

__all__ = [
    "KUDU_JARS_ENV",
    "ColumnSpec",
    "KuduClient",
    "KuduError",
    "KuduTable",
    "KuduTableNotFoundError",
    "KuduUnavailableError",
    "KuduWriteError",
    "RowError",
    "WriteSession",
    "close_clients",
    "get_client",
    "kudu_jars",
    "start_jvm",
]




@dataclass(frozen=True)
class ColumnSpec:
    """A column of a table to create: ``type`` is a Kudu type name (``int64``, ``string``, ``unixtime_micros``,
    ``decimal``, ``varchar``...); ``precision``/``scale`` for DECIMAL, ``length`` for VARCHAR."""

    name: str
    type: str
    nullable: bool = True
    key: bool = False
    precision: int | None = None
    scale: int | None = None
    length: int | None = None


# -------------------------------------------------------------------------------------------- client

_CLIENTS: dict[str, KuduClient] = {}
_CLIENTS_LOCK = threading.Lock()


def get_client(masters: str, jars: str | Sequence[str] | None = None) -> KuduClient:
    """The process's shared :class:`KuduClient` for ``masters`` (created on first use)."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(masters)
        if client is None:
            client = _CLIENTS[masters] = KuduClient(masters, jars=jars)
        return client


def close_clients() -> None:
    """Close every shared client of this process (tests call it before stopping the cluster)."""
    with _CLIENTS_LOCK:
        clients = list(_CLIENTS.values())
        _CLIENTS.clear()
    for c in clients:
        c.close()


class KuduClient:
    """A connection to one Kudu cluster (``masters``: ``"host:port[,host:port...]"``)."""

    def __init__(self, masters: str, jars: str | Sequence[str] | None = None, timeout_ms: int = 30_000) -> None:
        self.masters = masters
        self._t = java_types(jars)
        builder = self._t.KuduClientBuilder(masters)
        builder.defaultAdminOperationTimeoutMs(timeout_ms)
        builder.defaultOperationTimeoutMs(timeout_ms)
        self._java = builder.build()
        self._tables: dict[str, KuduTable] = {}
        self._lock = threading.Lock()

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        _attach()
        try:
            return fn(*args)
        except self._t.KuduException as exc:
            error = kudu_error(what, exc)
            if error.transient and "leader" in str(error).lower():
                raise UnreachableError(f"Kudu masters {self.masters}: {what}: {java_error(exc)}") from None
            raise error from None

    def table_exists(self, name: str) -> bool:
        """Whether table ``name`` exists."""
        return bool(self._call(f"tableExists({name})", self._java.tableExists, name))

    def table(self, name: str) -> KuduTable:
        """Open table ``name`` (cached); :class:`KuduTableNotFoundError` when it does not exist."""
        with self._lock:
            cached = self._tables.get(name)
        if cached is not None:
            return cached
        if not self.table_exists(name):
            raise KuduTableNotFoundError(f"Kudu table {name!r} does not exist on {self.masters}")
        table = KuduTable(self, self._call(f"openTable({name})", self._java.openTable, name))
        with self._lock:
            self._tables[name] = table
        return table

    def create_table(
        self,
        name: str,
        columns: Sequence[ColumnSpec],
        hash_columns: Sequence[str] = (),
        hash_buckets: int = 2,
        range_columns: Sequence[str] = (),
        range_splits: Sequence[Sequence[Any]] = (),
        replicas: int | None = None,
        ignore_existing: bool = False,
    ) -> KuduTable:
        """Create a table: key columns first (as flagged in ``columns``), hash-partitioned on ``hash_columns``
        into ``hash_buckets`` and/or range-partitioned on ``range_columns`` split at ``range_splits``;
        ``replicas`` defaults to the master's setting."""
        t = self._t
        cols = t.ArrayList()
        specs = list(columns)
        specs.sort(key=lambda c: not c.key)  # Kudu wants the key columns first
        for spec in specs:
            kudu_type = t.Type.valueOf(spec.type.upper())
            b = t.ColumnSchemaBuilder(spec.name, kudu_type).key(spec.key).nullable(spec.nullable and not spec.key)
            if spec.type.upper() == "DECIMAL":
                attrs = t.ColumnTypeAttributesBuilder().precision(spec.precision or 18).scale(spec.scale or 0)
                b.typeAttributes(attrs.build())
            elif spec.type.upper() == "VARCHAR":
                b.typeAttributes(t.ColumnTypeAttributesBuilder().length(spec.length or 65535).build())
            cols.add(b.build())
        schema = t.Schema(cols)
        opts = t.CreateTableOptions()
        if replicas:  # else the master's --default_num_replicas
            opts.setNumReplicas(replicas)
        if hash_columns:
            opts.addHashPartitions(_jlist(t, list(hash_columns)), hash_buckets)
        opts.setRangePartitionColumns(_jlist(t, list(range_columns)))
        if range_columns and range_splits:
            by_name = {c.name: c for c in specs}
            for split in range_splits:
                row = schema.newPartialRow()
                for col_name, value in zip(range_columns, split, strict=True):
                    c = by_name[col_name]
                    probe = Column(
                        c.name, schema.getColumnIndex(c.name), c.type.upper(), False, True, c.scale or 0,
                        precision=c.precision or 18, length=c.length or 65535,
                    )  # fmt: skip
                    set_cell(t, row, probe, value)
                opts.addSplitRow(row)
        _attach()
        try:
            self._java.createTable(name, schema, opts)
        except t.KuduException as exc:
            if not (ignore_existing and "already exists" in java_error(exc).lower()):
                raise kudu_error(f"creating table {name!r}", exc) from None
        with self._lock:
            self._tables.pop(name, None)
        return self.table(name)

    def delete_table(self, name: str) -> None:
        """Drop table ``name``."""
        with self._lock:
            self._tables.pop(name, None)
        self._call(f"deleteTable({name})", self._java.deleteTable, name)

    def close(self) -> None:
        """Close the connection (sessions of it become unusable)."""
        _attach()
        try:
            self._java.close()
        except Exception:  # closing a client of a stopped cluster may complain; nothing to do about it
            pass


def _attach() -> None:
    jpype = java_types().jpype
    if not jpype.java.lang.Thread.isAttached():
        jpype.java.lang.Thread.attach()


def _jlist(t: JavaTypes, items: Iterable[Any]) -> Any:
    out = t.ArrayList()
    for item in items:
        out.add(item)
    return out


# --------------------------------------------------------------------------------------------- table


class KuduTable:
    """An open table: its schema, key scans, and write sessions."""

    def __init__(self, client: KuduClient, java_table: Any) -> None:
        self.client = client
        self._t = client._t
        self._java = java_table
        self.name = str(java_table.getName())
        schema = java_table.getSchema()
        self.columns: list[Column] = []
        for i, cs in enumerate(schema.getColumns()):
            attrs = cs.getTypeAttributes()
            scale = int(attrs.getScale()) if attrs is not None and attrs.hasScale() else 0
            precision = int(attrs.getPrecision()) if attrs is not None and attrs.hasPrecision() else 38
            length = int(attrs.getLength()) if attrs is not None and attrs.hasLength() else None
            name, ty = str(cs.getName()), str(cs.getType().name())
            nullable, key = bool(cs.isNullable()), bool(cs.isKey())
            self.columns.append(Column(name, i, ty, nullable, key, scale, cs, precision, length))
        self.by_name = {c.name: c for c in self.columns}
        self.primary_key = [c.name for c in self.columns if c.key]
        self.writers = {c.name: cell_writer(self._t, c) for c in self.columns}
        """Column name -> the writer of its cells (:func:`cell_writer`)."""

    @property
    def column_names(self) -> list[str]:
        """Every column, in schema order."""
        return [c.name for c in self.columns]

    def column_types(self) -> dict[str, str]:
        """Column name -> Kudu type name (``INT64``, ``STRING``, ``UNIXTIME_MICROS``...)."""
        return {c.name: c.type for c in self.columns}

    def _col(self, name: str) -> Column:
        try:
            return self.by_name[name]
        except KeyError:
            raise BadRecordError(
                f"Kudu table {self.name!r} has no column {name!r} (columns: {', '.join(self.column_names)})"
            ) from None

    # -------------------------------------------------------------------------------------- reads

    def scan(
        self,
        equal: Mapping[str, Any] | None = None,
        in_lists: Mapping[str, Sequence[Any]] | None = None,
        columns: Sequence[str] | None = None,
        at_least: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows matching every predicate: ``equal`` (column == value), ``in_lists`` (column IN values), ``at_least``
        (column >= value); ``columns`` projects (default: all). Reads the whole result (one scanner)."""
        t = self._t
        _attach()
        builder = self.client._java.newScannerBuilder(self._java)
        proj = [self._col(c) for c in (columns or self.column_names)]
        builder.setProjectedColumnNames(_jlist(t, [c.name for c in proj]))
        for name, value in (equal or {}).items():
            c = self._col(name)
            if value is None:
                builder.addPredicate(t.KuduPredicate.newIsNullPredicate(c.schema))
            else:
                builder.addPredicate(t.KuduPredicate.newInListPredicate(c.schema, _jlist(t, [boxed(t, c, value)])))
        for name, values in (in_lists or {}).items():
            c = self._col(name)
            builder.addPredicate(
                t.KuduPredicate.newInListPredicate(c.schema, _jlist(t, [boxed(t, c, v) for v in values]))
            )
        for name, value in (at_least or {}).items():
            c = self._col(name)
            builder.addPredicate(
                t.KuduPredicate.newComparisonPredicate(c.schema, t.ComparisonOp.GREATER_EQUAL, boxed(t, c, value))
            )
        # Result columns are indexed by projection position.
        out_cols = [
            Column(c.name, i, c.type, c.nullable, c.key, c.scale, precision=c.precision, length=c.length)
            for i, c in enumerate(proj)
        ]
        rows: list[dict[str, Any]] = []
        try:
            scanner = builder.build()
            while scanner.hasMoreRows():
                it = scanner.nextRows()
                while it.hasNext():
                    res = it.next()
                    rows.append({c.name: get_cell(t, res, c) for c in out_cols})
            scanner.close()
        except t.KuduException as exc:
            raise kudu_error(f"scan of table {self.name!r}", exc) from None
        return rows

    def rows_for_keys(
        self, key_columns: Sequence[str], keys: Iterable[tuple[Any, ...]], batch: int = 1000
    ) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
        """Existing rows grouped by their value of ``key_columns``, for the given ``keys`` only: one scan per
        ``batch`` keys, with an IN-list predicate on each key column (a composite key over-fetches the cross product
        of the lists; those rows are dropped here). Keys with no rows map to ``[]``."""
        wanted = list(dict.fromkeys(keys))
        found: dict[tuple[Any, ...], list[dict[str, Any]]] = {k: [] for k in wanted}
        for start in range(0, len(wanted), batch):
            chunk = wanted[start : start + batch]
            in_lists = {c: list(dict.fromkeys(k[i] for k in chunk)) for i, c in enumerate(key_columns)}
            if any(None in v for v in in_lists.values()):
                raise BadRecordError(f"a key of Kudu table {self.name!r} has NULL in one of {list(key_columns)}")
            for row in self.scan(in_lists=in_lists):
                k = tuple(row[c] for c in key_columns)
                if k in found:
                    found[k].append(row)
        return found

    def read_all(self) -> list[dict[str, Any]]:
        """Every row (tests, small tables)."""
        return self.scan()

    # -------------------------------------------------------------------------------------- writes

    def session(self, buffer_ops: int = 10_000, track: bool = False) -> WriteSession:
        """A write session (AUTO_FLUSH_BACKGROUND); call ``flush()`` and check its errors before trusting it.
        ``track``: remember the applied operations (see :meth:`WriteSession.refused`)."""
        return WriteSession(self, buffer_ops, track)

    def apply(self, mutations: Iterable[Mutation]) -> int:
        """Apply ``mutations`` in one session and flush; :class:`KuduWriteError` if Kudu refused any of them."""
        with self.session() as s:
            n = s.apply_all(mutations)
            s.flush()
        return n


class WriteSession:
    """Operations on one table, sent in the background and confirmed by :meth:`flush`, which raises
    :class:`KuduWriteError` for every refused row (none is ever dropped silently)."""

    def __init__(self, table: KuduTable, buffer_ops: int = 10_000, track: bool = False) -> None:
        """``track``: keep every applied operation, so :meth:`refused` can name the mutations of a failed flush."""
        self.table = table
        t = table._t
        self._t = t
        _attach()
        self._java = table.client._java.newSession()
        self._java.setFlushMode(t.FlushMode.AUTO_FLUSH_BACKGROUND)
        self._java.setMutationBufferSpace(buffer_ops)
        self._java.setIgnoreAllDuplicateRows(False)
        jt = table._java
        self._new = {  # by the kind's value: an enum member's own hash runs in Python, once per row
            MutationKind.INSERT.value: jt.newInsert,
            MutationKind.UPDATE.value: jt.newUpdate,
            MutationKind.UPSERT.value: jt.newUpsert,
            MutationKind.DELETE.value: jt.newDelete,
        }
        self._send = self._java.apply
        self.applied = 0
        self._tracked: list[tuple[Any, Mutation]] | None = [] if track else None
        if track:  # room for every refused row of a buffer (the default collector holds 1000, then overflows)
            self._java.setErrorCollectorSpace(buffer_ops)

    def apply(self, mutation: Mutation) -> None:
        """Queue one mutation (columns absent from its row are left unset)."""
        op = self._new[mutation.kind._value_]()
        row = op.getRow()
        writers = self.table.writers
        for name, value in mutation.row.items():
            write = writers.get(name)
            if write is None:
                self.table._col(name)  # raises, naming the table and its columns
                continue
            try:
                write(row, value)
            except BadRecordError as error:  # name the record: its primary key
                key = [c for c in self.table.primary_key if c in mutation.row]
                raise BadRecordError(f"{error} ({format_key(key, tuple(mutation.row[c] for c in key))})") from None
        try:
            self._send(op)
        except self._t.KuduException as exc:
            raise kudu_error(f"apply on table {self.table.name!r}", exc) from None
        self.applied += 1
        if self._tracked is not None:
            self._tracked.append((op, mutation))

    def refused(self, errors: Sequence[RowError]) -> list[tuple[RowError, Mutation | None]]:
        """The applied mutation of each refused operation (matched by its row key; a tracking session only, else
        None for each)."""
        if self._tracked is None:
            return [(e, None) for e in errors]
        _attach()
        by_key: dict[str, Mutation] = {}
        for op, mutation in self._tracked:
            by_key[str(op.getRow().stringifyRowKey())] = mutation
        return [(e, by_key.get(e.key)) for e in errors]

    def apply_all(self, mutations: Iterable[Mutation]) -> int:
        """Queue every mutation; returns how many."""
        n = 0
        for m in mutations:
            self.apply(m)
            n += 1
        return n

    def flush(self) -> None:
        """Send what is buffered and wait; then fail with :class:`KuduWriteError` if any operation of this session
        was refused since the last flush."""
        _attach()
        try:
            self._java.flush()
        except self._t.KuduException as exc:
            raise kudu_error(f"flush on table {self.table.name!r}", exc) from None
        if self._java.countPendingErrors() == 0:
            return
        pending = self._java.getPendingErrors()
        errors = [_row_error(e) for e in pending.getRowErrors()]
        overflowed = bool(pending.isOverflowed())
        shown = "; ".join(str(e) for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        lost = " (the error buffer overflowed: more rows failed)" if overflowed else ""
        raise KuduWriteError(
            f"Kudu refused {len(errors)} operation(s) on table {self.table.name!r}: {shown}{more}{lost}",
            errors,
            overflowed,
        )

    def close(self) -> None:
        """Close the session (buffered operations are flushed by Kudu; call :meth:`flush` first to see errors)."""
        _attach()
        try:
            self._java.close()
        except Exception:  # errors of a close after a failed flush were reported by flush()
            pass

    def __enter__(self) -> WriteSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _row_error(e: Any) -> RowError:
    status = e.getErrorStatus()
    op = e.getOperation()
    kind = str(type(op).__name__) if not hasattr(op, "getClass") else str(op.getClass().getSimpleName())
    try:
        key = str(op.getRow().stringifyRowKey())
    except Exception:
        key = "?"
    return RowError(
        kind=kind.upper(),
        key=key,
        status=str(status.getCodeName()) if hasattr(status, "getCodeName") else "",
        message=str(status.toString()),
        already_present=bool(status.isAlreadyPresent()),
        not_found=bool(status.isNotFound()),
        transient=status_transient(status),
    )


def iter_chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size``."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
