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

import datetime as dt
import decimal
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spyt_queue.errors import BadRecordError, SpytQueueError, UnreachableError

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

KUDU_JARS_ENV = "SPYT_KUDU_JARS"
_REPO_JARS = Path(__file__).resolve().parents[2] / "integration" / "target" / "kudu-client-libs"


class KuduUnavailableError(SpytQueueError):
    """JPype1 or the Kudu Java client jars are missing; the message says how to get them."""

    code = "KUDU_UNAVAILABLE"


class KuduError(SpytQueueError):
    """A Kudu call failed (the Java exception's message is included); ``transient`` when worth retrying (timed
    out, service unavailable, network error)."""

    code = "KUDU_ERROR"

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class KuduTableNotFoundError(SpytQueueError):
    """A Kudu table does not exist (and was not to be created); the message names it."""

    code = "KUDU_TABLE_NOT_FOUND"


@dataclass(frozen=True)
class RowError:
    """One operation Kudu refused: its kind, the row's key, Kudu's status (``already_present``, ``not_found``...)."""

    kind: str
    key: str
    status: str
    message: str
    already_present: bool = False
    not_found: bool = False
    #: Timed out / service unavailable / network error: the operation may or may not have been applied.
    transient: bool = False

    def __str__(self) -> str:
        return f"{self.kind} ({self.key}): {self.message}"


class KuduWriteError(BadRecordError):
    """Kudu refused some operations of a flush; ``errors`` lists them (the message names the first ones)."""

    code = "KUDU_WRITE_FAILED"

    def __init__(self, message: str, errors: Sequence[RowError] = (), overflowed: bool = False) -> None:
        super().__init__(message)
        self.errors = list(errors)
        self.overflowed = overflowed
        #: Every refused operation failed for a transient reason (a retry may succeed).
        self.transient = bool(self.errors) and all(e.transient for e in self.errors)


# ------------------------------------------------------------------------------------------------- JVM


_JVM_LOCK = threading.Lock()


def kudu_jars(jars: str | Sequence[str] | None = None) -> list[str]:
    """The client jars: ``jars`` (a directory or paths), else ``$SPYT_KUDU_JARS``, else the checkout's install."""
    spec: str | Sequence[str] | None = jars or os.environ.get(KUDU_JARS_ENV) or None
    paths: list[Path]
    if spec is None:
        paths = [_REPO_JARS]
    elif isinstance(spec, str):
        paths = [Path(p) for p in spec.split(os.pathsep) if p]
    else:
        paths = [Path(p) for p in spec]
    found: list[str] = []
    for p in paths:
        if p.is_dir():
            found.extend(str(j) for j in sorted(p.glob("*.jar")))
        elif p.is_file():
            found.append(str(p))
    if not any(Path(j).name.startswith("kudu-client-") for j in found):
        where = ", ".join(str(p) for p in paths)
        raise KuduUnavailableError(
            f"no kudu-client jar found in {where}: run integration/install.sh --kudu-only, or point "
            f"{KUDU_JARS_ENV} (or the sink option kudu.jars) at a directory holding kudu-client and its dependencies"
        )
    return found


def start_jvm(jars: str | Sequence[str] | None = None) -> Any:
    """Start the in-process JVM with the Kudu client jars once per process; returns the ``jpype`` module.

    A JVM already started (by an earlier call, or by another JPype user of this process that put the jars on its
    class path) is reused."""
    try:
        # lazy: JPype (the kudu extra) and its JVM load only where Kudu is used
        import jpype
        import jpype.config
    except ImportError:
        raise KuduUnavailableError("JPype1 is not installed: pip install 'spyt-queue[kudu]'") from None
    with _JVM_LOCK:
        if not jpype.isJVMStarted():
            classpath = kudu_jars(jars)
            # The Kudu client keeps non-daemon threads (netty, reconnect timers): destroying the JVM at interpreter
            # exit would wait for them forever once the cluster is gone. Nothing needs flushing at exit (every
            # session is flushed before a task reports), so the process exits without destroying the JVM.
            jpype.config.destroy_jvm = False
            # -Xrs: leave SIGINT/SIGTERM to Python (Ctrl-C, Spark killing its workers).
            jpype.startJVM("-Xrs", "-Xmx512m", classpath=classpath, convertStrings=False)
        elif not jpype.JClass("java.lang.Thread").isAttached():
            jpype.java.lang.Thread.attach()
    try:
        jpype.JClass("org.apache.kudu.client.KuduClient")
    except Exception as exc:  # the JVM was started without our jars
        raise KuduUnavailableError(f"the JVM of this process has no Kudu client on its class path ({exc})") from None
    return jpype


def _java_error(exc: BaseException) -> str:
    msg = getattr(exc, "getMessage", None)
    return str(msg()) if callable(msg) else str(exc)


def _status_transient(status: Any) -> bool:
    try:
        return bool(
            status.isTimedOut() or status.isServiceUnavailable() or status.isNetworkError() or status.isAborted()
        )
    except Exception:
        return False


def _kudu_error(what: str, exc: Any) -> KuduError:
    """A :class:`KuduError` for a Java ``KuduException``, transient when its status says so."""
    status = exc.getStatus() if hasattr(exc, "getStatus") else None
    transient = _status_transient(status) if status is not None else False
    return KuduError(f"Kudu {what} failed: {_java_error(exc)}", transient=transient)


# --------------------------------------------------------------------------------------------- types


class _Types:
    """Java classes and per-type converters, resolved once the JVM runs."""

    def __init__(self, jpype: Any) -> None:
        J = jpype.JClass
        self.jpype = jpype
        self.Type = J("org.apache.kudu.Type")
        self.Schema = J("org.apache.kudu.Schema")
        self.ColumnSchemaBuilder = J("org.apache.kudu.ColumnSchema$ColumnSchemaBuilder")
        self.ColumnTypeAttributesBuilder = J("org.apache.kudu.ColumnTypeAttributes$ColumnTypeAttributesBuilder")
        self.CreateTableOptions = J("org.apache.kudu.client.CreateTableOptions")
        self.KuduClientBuilder = J("org.apache.kudu.client.KuduClient$KuduClientBuilder")
        self.KuduPredicate = J("org.apache.kudu.client.KuduPredicate")
        self.ComparisonOp = J("org.apache.kudu.client.KuduPredicate$ComparisonOp")
        self.FlushMode = J("org.apache.kudu.client.SessionConfiguration$FlushMode")
        self.KuduException = J("org.apache.kudu.client.KuduException")
        self.ArrayList = J("java.util.ArrayList")
        self.BigDecimal = J("java.math.BigDecimal")
        self.LocalDate = J("java.time.LocalDate")
        self.SqlDate = J("java.sql.Date")
        self.JLong, self.JInt, self.JShort, self.JByte = jpype.JLong, jpype.JInt, jpype.JShort, jpype.JByte
        self.JFloat, self.JDouble, self.JBoolean = jpype.JFloat, jpype.JDouble, jpype.JBoolean
        self.Long, self.Integer = J("java.lang.Long"), J("java.lang.Integer")
        self.Short, self.Byte = J("java.lang.Short"), J("java.lang.Byte")
        self.Float, self.Double, self.Boolean = J("java.lang.Float"), J("java.lang.Double"), J("java.lang.Boolean")
        self.String = J("java.lang.String")
        self.ByteArray = jpype.JArray(jpype.JByte)
        self.PartialRow = J("org.apache.kudu.client.PartialRow")
        add_var_length = self.PartialRow.class_.getDeclaredMethod(
            "addVarLengthData", jpype.JInt.class_, self.ByteArray.class_
        )
        add_var_length.setAccessible(True)
        self._add_var_length = add_var_length

    def add_var_length_data(self, row: Any, index: Any, data: Any) -> None:
        """``PartialRow.addVarLengthData`` (private): set a STRING/VARCHAR/BINARY cell to ``data`` as is."""
        self._add_var_length.invoke(row, index, data)


_TYPES: _Types | None = None


def _types(jars: str | Sequence[str] | None = None) -> _Types:
    global _TYPES
    if _TYPES is None:
        _TYPES = _Types(start_jvm(jars))
    return _TYPES


_EPOCH = dt.date(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICRO = dt.timedelta(microseconds=1)


def timestamp_micros(value: Any) -> int:
    """UTC microseconds since the epoch of an ``int`` (already micros) or a ``datetime``: an aware one is its
    instant, a naive one its wall clock taken as UTC. Exact integer arithmetic; the process's time zone is never
    consulted (a local-time conversion shifts values at DST changes and depends on the host)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        return (aware - _EPOCH_UTC) // _MICRO
    raise TypeError(f"expected a datetime or microseconds, got {type(value).__name__}")


def datetime_from_micros(micros: int) -> dt.datetime:
    """The aware UTC ``datetime`` of UTC microseconds since the epoch (exact, any process time zone)."""
    return _EPOCH_UTC + dt.timedelta(microseconds=micros)


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


@dataclass
class _Column:
    name: str
    index: int
    type: str  # Kudu type name, upper case: INT64, STRING, ...
    nullable: bool
    key: bool
    scale: int = 0
    schema: Any = field(default=None, repr=False)
    precision: int = 38  # DECIMAL
    length: int | None = None  # VARCHAR: the most characters (code points) a value may have


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
        self._t = _types(jars)
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
            error = _kudu_error(what, exc)
            if error.transient and "leader" in str(error).lower():
                raise UnreachableError(f"Kudu masters {self.masters}: {what}: {_java_error(exc)}") from None
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
                    probe = _Column(
                        c.name, schema.getColumnIndex(c.name), c.type.upper(), False, True, c.scale or 0,
                        precision=c.precision or 18, length=c.length or 65535,
                    )  # fmt: skip
                    _set_cell(t, row, probe, value)
                opts.addSplitRow(row)
        _attach()
        try:
            self._java.createTable(name, schema, opts)
        except t.KuduException as exc:
            if not (ignore_existing and "already exists" in _java_error(exc).lower()):
                raise _kudu_error(f"creating table {name!r}", exc) from None
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
    jpype = _types().jpype
    if not jpype.java.lang.Thread.isAttached():
        jpype.java.lang.Thread.attach()


def _jlist(t: _Types, items: Iterable[Any]) -> Any:
    out = t.ArrayList()
    for item in items:
        out.add(item)
    return out


# ----------------------------------------------------------------------------------------- cells


#: Widths of Kudu's integer types: a value outside their range is refused, never wrapped.
_INT_BITS = {"INT8": 8, "INT16": 16, "INT32": 32, "INT64": 64}


def _set_cell(t: _Types, row: Any, col: _Column, value: Any) -> None:
    """Write ``value`` into column ``col`` of a Java ``PartialRow`` (None = NULL)."""
    i = col.index
    if value is None:
        if not col.nullable:
            raise BadRecordError(f"column {col.name!r} is NOT NULL in Kudu but the row has NULL there")
        row.setNull(i)
        return
    ty = col.type
    bits = _INT_BITS.get(ty)
    if bits is not None and not isinstance(value, bool) and isinstance(value, int):
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if not low <= value <= high:  # JPype would wrap it silently (2**40 into an INT32 stores 0)
            raise BadRecordError(
                f"value {value!r} does not fit Kudu column {col.name!r} ({ty}): outside [{low}, {high}]"
            )
    try:
        if ty == "INT64":
            row.addLong(i, t.JLong(value))
        elif ty == "STRING":
            row.addString(i, str(value))
        elif ty == "INT32":
            row.addInt(i, t.JInt(value))
        elif ty == "DOUBLE":
            row.addDouble(i, t.JDouble(value))
        elif ty == "UNIXTIME_MICROS":
            row.addLong(i, t.JLong(timestamp_micros(value)))
        elif ty == "BOOL":
            row.addBoolean(i, t.JBoolean(bool(value)))
        elif ty == "INT16":
            row.addShort(i, t.JShort(value))
        elif ty == "INT8":
            row.addByte(i, t.JByte(value))
        elif ty == "FLOAT":
            row.addFloat(i, t.JFloat(value))
        elif ty == "BINARY":
            row.addBinary(i, t.ByteArray(bytes(value)))
        elif ty == "DECIMAL":
            row.addDecimal(i, t.BigDecimal(str(_decimal(value, col))))
        elif ty == "VARCHAR":
            text = value if isinstance(value, str) else str(value)
            if col.length is not None and len(text) > col.length:  # Kudu would truncate it, without a word
                raise BadRecordError(
                    f"value {_shown(text)} ({len(text)} characters) is longer than Kudu column {col.name!r} "
                    f"VARCHAR({col.length}) allows: shorten it, or widen the column"
                )
            if col.length is None or len(text.encode("utf-16-le")) <= 2 * col.length:
                row.addVarchar(i, text)
            else:  # addVarchar cuts at n UTF-16 units, splitting surrogate pairs: n characters above U+FFFF do not
                # pass it whole. The length was checked above in code points, as Kudu counts it.
                t.add_var_length_data(row, t.JInt(i), t.ByteArray(text.encode("utf-8")))
        elif ty == "DATE":
            days = (value - _EPOCH).days if isinstance(value, dt.date) else int(value)
            row.addDate(i, t.SqlDate.valueOf(t.LocalDate.ofEpochDay(days)))
        else:  # pragma: no cover - a type added to Kudu after 1.18
            raise BadRecordError(f"column {col.name!r} has Kudu type {ty}, which spyt-queue does not map")
    except (TypeError, OverflowError, ValueError, decimal.InvalidOperation) as exc:
        raise BadRecordError(
            f"value {_shown(value)} does not fit Kudu column {col.name!r} ({_type_name(col)}): {exc}"
        ) from None
    except t.jpype.JException as exc:
        raise BadRecordError(
            f"value {_shown(value)} does not fit Kudu column {col.name!r} ({_type_name(col)}): {_java_error(exc)}"
        ) from None


def _shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for an error message, cut after ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters of repr)"


def _type_name(col: _Column) -> str:
    """``INT32``, ``DECIMAL(38, 2)``, ``VARCHAR(5)``: a column's type for messages."""
    if col.type == "DECIMAL":
        return f"DECIMAL({col.precision}, {col.scale})"
    if col.type == "VARCHAR" and col.length is not None:
        return f"VARCHAR({col.length})"
    return col.type


def _cell_writer(t: _Types, col: _Column) -> Callable[[Any, Any], None]:
    """A writer of column ``col``'s cells into a Java ``PartialRow``: the column's common Python type (``int`` for
    INT64/INT32 within range, ``str`` for STRING, ``float`` for DOUBLE, ``bool`` for BOOL) goes straight to Kudu;
    anything else (None, another type, a value out of range, a failed call) goes through :func:`_set_cell`, which
    checks it and names the fault. The sink writes every cell through one of these."""
    i, ty = col.index, col.type

    def checked(row: Any, value: Any) -> None:
        _set_cell(t, row, col, value)

    if ty == "INT64" or ty == "INT32":
        box, low, high = (t.JLong, -(1 << 63), (1 << 63) - 1) if ty == "INT64" else (t.JInt, -(1 << 31), (1 << 31) - 1)
        add = t.PartialRow.addLong if ty == "INT64" else t.PartialRow.addInt  # unbound: no method lookup per cell

        def write_int(row: Any, value: Any) -> None:
            if type(value) is int and low <= value <= high:
                try:
                    add(row, i, box(value))
                    return
                except Exception:  # the checked path below names the fault
                    pass
            checked(row, value)

        return write_int
    p = t.PartialRow
    fast = {"STRING": (str, p.addString, None), "DOUBLE": (float, p.addDouble, t.JDouble),
            "BOOL": (bool, p.addBoolean, t.JBoolean)}.get(ty)  # fmt: skip
    if fast is None:
        return checked
    kind, method, boxer = fast

    def write(row: Any, value: Any) -> None:
        if type(value) is kind:
            try:
                method(row, i, value if boxer is None else boxer(value))
                return
            except Exception:  # the checked path below names the fault
                pass
        checked(row, value)

    return write


def _decimal(value: Any, col: _Column) -> decimal.Decimal:
    """``value`` as a Decimal with exactly the column's scale; a value the column cannot hold exactly (more decimal
    places than its scale, more integer digits than precision - scale) is a ValueError. Computed in a local context
    wide enough for any value that fits (the process's context, 28 digits by default, is neither used nor changed)."""
    d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
    if not d.is_finite():
        raise ValueError("not a finite number")
    integer_digits = max(d.adjusted() + 1, 0)
    if integer_digits > col.precision - col.scale:
        raise ValueError(
            f"{integer_digits} digits before the point, the column holds {col.precision - col.scale} "
            f"(DECIMAL({col.precision}, {col.scale}))"
        )
    context = decimal.Context(prec=col.precision + 2, traps=[decimal.InvalidOperation])
    q = d.quantize(decimal.Decimal(1).scaleb(-col.scale, context=context), context=context)
    if q != d:  # Decimal comparison is exact
        raise ValueError(f"more than {col.scale} decimal places")
    return q


def _get_cell(t: _Types, res: Any, col: _Column) -> Any:
    """Read column ``col`` of a Java ``RowResult`` (None for NULL)."""
    i = col.index
    if col.nullable and res.isNull(i):
        return None
    ty = col.type
    if ty in ("INT64", "INT32", "INT16", "INT8"):
        return int({"INT64": res.getLong, "INT32": res.getInt, "INT16": res.getShort, "INT8": res.getByte}[ty](i))
    if ty == "STRING":
        return str(res.getString(i))
    if ty == "UNIXTIME_MICROS":
        return datetime_from_micros(int(res.getLong(i)))
    if ty in ("DOUBLE", "FLOAT"):
        return float(res.getDouble(i) if ty == "DOUBLE" else res.getFloat(i))
    if ty == "BOOL":
        return bool(res.getBoolean(i))
    if ty == "BINARY":
        return bytes(res.getBinaryCopy(i))
    if ty == "DECIMAL":
        return decimal.Decimal(str(res.getDecimal(i).toPlainString()))
    if ty == "VARCHAR":
        return str(res.getVarchar(i))
    if ty == "DATE":
        return _EPOCH + dt.timedelta(days=int(res.getDate(i).toLocalDate().toEpochDay()))
    raise BadRecordError(f"column {col.name!r} has Kudu type {ty}, which spyt-queue does not map")  # pragma: no cover


def _boxed(t: _Types, col: _Column, value: Any) -> Any:
    """A boxed Java value for a predicate on ``col`` (the Java client's in-list takes boxed values)."""
    ty = col.type
    if ty in ("INT64", "UNIXTIME_MICROS"):
        return t.Long(t.JLong(timestamp_micros(value) if ty == "UNIXTIME_MICROS" else value))
    if ty == "INT32":
        return t.Integer(t.JInt(value))
    if ty == "INT16":
        return t.Short(t.JShort(value))
    if ty == "INT8":
        return t.Byte(t.JByte(value))
    if ty in ("STRING", "VARCHAR"):
        return t.String(str(value))
    if ty == "BOOL":
        return t.Boolean(t.JBoolean(bool(value)))
    if ty == "DOUBLE":
        return t.Double(t.JDouble(value))
    if ty == "FLOAT":
        return t.Float(t.JFloat(value))
    if ty == "BINARY":
        return t.ByteArray(bytes(value))
    if ty == "DECIMAL":
        return t.BigDecimal(str(_decimal(value, col)))
    if ty == "DATE":
        days = (value - _EPOCH).days if isinstance(value, dt.date) else int(value)
        return t.SqlDate.valueOf(t.LocalDate.ofEpochDay(days))
    raise BadRecordError(f"no predicate for Kudu type {ty} (column {col.name!r})")  # pragma: no cover


# --------------------------------------------------------------------------------------------- table


class KuduTable:
    """An open table: its schema, key scans, and write sessions."""

    def __init__(self, client: KuduClient, java_table: Any) -> None:
        self.client = client
        self._t = client._t
        self._java = java_table
        self.name = str(java_table.getName())
        schema = java_table.getSchema()
        self.columns: list[_Column] = []
        for i, cs in enumerate(schema.getColumns()):
            attrs = cs.getTypeAttributes()
            scale = int(attrs.getScale()) if attrs is not None and attrs.hasScale() else 0
            precision = int(attrs.getPrecision()) if attrs is not None and attrs.hasPrecision() else 38
            length = int(attrs.getLength()) if attrs is not None and attrs.hasLength() else None
            name, ty = str(cs.getName()), str(cs.getType().name())
            nullable, key = bool(cs.isNullable()), bool(cs.isKey())
            self.columns.append(_Column(name, i, ty, nullable, key, scale, cs, precision, length))
        self.by_name = {c.name: c for c in self.columns}
        self.primary_key = [c.name for c in self.columns if c.key]
        self.writers = {c.name: _cell_writer(self._t, c) for c in self.columns}
        """Column name -> the writer of its cells (:func:`_cell_writer`)."""

    @property
    def column_names(self) -> list[str]:
        """Every column, in schema order."""
        return [c.name for c in self.columns]

    def column_types(self) -> dict[str, str]:
        """Column name -> Kudu type name (``INT64``, ``STRING``, ``UNIXTIME_MICROS``...)."""
        return {c.name: c.type for c in self.columns}

    def _col(self, name: str) -> _Column:
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
                builder.addPredicate(t.KuduPredicate.newInListPredicate(c.schema, _jlist(t, [_boxed(t, c, value)])))
        for name, values in (in_lists or {}).items():
            c = self._col(name)
            builder.addPredicate(
                t.KuduPredicate.newInListPredicate(c.schema, _jlist(t, [_boxed(t, c, v) for v in values]))
            )
        for name, value in (at_least or {}).items():
            c = self._col(name)
            builder.addPredicate(
                t.KuduPredicate.newComparisonPredicate(c.schema, t.ComparisonOp.GREATER_EQUAL, _boxed(t, c, value))
            )
        # Result columns are indexed by projection position.
        out_cols = [
            _Column(c.name, i, c.type, c.nullable, c.key, c.scale, precision=c.precision, length=c.length)
            for i, c in enumerate(proj)
        ]
        rows: list[dict[str, Any]] = []
        try:
            scanner = builder.build()
            while scanner.hasMoreRows():
                it = scanner.nextRows()
                while it.hasNext():
                    res = it.next()
                    rows.append({c.name: _get_cell(t, res, c) for c in out_cols})
            scanner.close()
        except t.KuduException as exc:
            raise _kudu_error(f"scan of table {self.name!r}", exc) from None
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
            raise _kudu_error(f"apply on table {self.table.name!r}", exc) from None
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
            raise _kudu_error(f"flush on table {self.table.name!r}", exc) from None
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
        transient=_status_transient(status),
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
