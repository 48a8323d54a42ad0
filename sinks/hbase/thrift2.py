"""A client of HBase's Thrift2 gateway (``org.apache.hadoop.hbase.thrift2.ThriftServer``, ``hbase thrift2 start``).

Why: the Thrift1 gateway that ``happybase`` speaks takes one timestamp per ``mutateRows``/``mutateRowsTs`` call, so
rows with their own event times cost one call each; Thrift2's ``putMultiple`` carries a timestamp per put (and per
cell), so a whole batch of rows with event times is one call.

The interface definition (IDL) is not copied into this project: it is read at run time from the
``org/apache/hadoop/hbase/thrift2/hbase.thrift`` entry of the ``hbase-thrift`` jar that the gateway itself runs from
(or from a plain ``.thrift`` file) and compiled in memory by ``thriftpy2`` (installed with ``happybase``). The jar is
found in this order:

1. an explicit path (the sink's ``thrift2_idl`` option): the jar, a directory holding it, or the ``.thrift`` file;
2. the environment variable ``SPYT_HBASE_THRIFT_JAR`` (same forms; on a cluster set it for the executors too,
   ``spark.executorEnv.SPYT_HBASE_THRIFT_JAR``);
3. ``integration/target/hbase-libs/`` of a source checkout (what ``integration/install.sh`` fills).

The jar is ``org.apache.hbase:hbase-thrift`` from Maven Central, or ``lib/hbase-thrift-*.jar`` of an HBase install.
"""

from __future__ import annotations

import io
import os
import threading
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

from spyt_queue.errors import SpytQueueError, UnreachableError

__all__ = [
    "IDL_ENTRY",
    "THRIFT_JAR_ENV",
    "Thrift2Client",
    "Thrift2UnavailableError",
    "idl_path",
    "load_idl",
    "table_name",
]

THRIFT_JAR_ENV = "SPYT_HBASE_THRIFT_JAR"
#: Where the Thrift2 IDL sits inside the hbase-thrift jar.
IDL_ENTRY = "org/apache/hadoop/hbase/thrift2/hbase.thrift"
_REPO_LIBS = Path(__file__).resolve().parents[2] / "integration" / "target" / "hbase-libs"

_modules: dict[str, ModuleType] = {}
_lock = threading.Lock()


class Thrift2UnavailableError(SpytQueueError):
    """The Thrift2 IDL (inside the hbase-thrift jar) cannot be found or read; the message says how to get it."""

    code = "HBASE_THRIFT2_UNAVAILABLE"


def _jar_in(directory: Path) -> Path | None:
    jars = sorted(directory.glob("hbase-thrift-*.jar"))
    return jars[-1] if jars else None


def idl_path(explicit: str | None = None) -> Path:
    """The hbase-thrift jar (or ``.thrift`` file) holding the Thrift2 IDL (see the module docstring for the order)."""
    for where, value in (("thrift2_idl", explicit), (THRIFT_JAR_ENV, os.environ.get(THRIFT_JAR_ENV))):
        if not value:
            continue
        path = Path(value).expanduser()
        found = _jar_in(path) if path.is_dir() else (path if path.is_file() else None)
        if found is None:
            raise Thrift2UnavailableError(
                f"{where}={value!r} is neither the hbase-thrift jar, a directory holding hbase-thrift-*.jar, "
                "nor a .thrift file"
            )
        return found
    found = _jar_in(_REPO_LIBS) if _REPO_LIBS.is_dir() else None
    if found is None:
        raise Thrift2UnavailableError(
            "the HBase Thrift2 IDL is read from the hbase-thrift jar, which was not found: set the option "
            f"thrift2_idl or {THRIFT_JAR_ENV} to the jar (org.apache.hbase:hbase-thrift from Maven Central, or "
            "lib/hbase-thrift-*.jar of an HBase install), or run integration/install.sh in a source checkout"
        )
    return found


def load_idl(explicit: str | None = None) -> ModuleType:
    """The Thrift2 IDL compiled by thriftpy2 (``THBaseService``, ``TPut``, ``TColumnValue``...), once per process
    and path."""
    path = idl_path(explicit)
    key = str(path)
    with _lock:
        module = _modules.get(key)
        if module is not None:
            return module
        try:
            if path.suffix == ".thrift":
                text = path.read_text("utf-8")
            else:
                with zipfile.ZipFile(path) as jar:
                    text = jar.read(IDL_ENTRY).decode("utf-8")
        except (OSError, KeyError, zipfile.BadZipFile) as error:
            raise Thrift2UnavailableError(f"cannot read the Thrift2 IDL {IDL_ENTRY} from {path}: {error}") from None
        # lazy: thriftpy2 (the hbase extra) loads only where the HBase sink runs
        import thriftpy2

        module = thriftpy2.load_fp(io.StringIO(text), module_name="spyt_hbase2_thrift")
        _modules[key] = module
        return module


def table_name(idl: ModuleType, table: str) -> Any:
    """``TTableName`` of ``"table"`` or ``"namespace:table"``."""
    namespace, colon, qualifier = table.partition(":")
    if not colon:
        namespace, qualifier = "default", table
    return idl.TTableName(ns=namespace.encode(), qualifier=qualifier.encode())


class Thrift2Client:
    """One connection to a Thrift2 gateway: ``client`` is the raw ``THBaseService`` client, ``idl`` the compiled IDL,
    ``transport`` the connection's Thrift transport (as ``happybase.Connection.transport``)."""

    def __init__(
        self,
        host: str,
        port: int,
        timeout_ms: int = 30000,
        transport: str = "buffered",
        protocol: str = "binary",
        idl: str | None = None,
    ) -> None:
        # lazy: thriftpy2 (the hbase extra) loads only where the HBase sink runs
        from thriftpy2.protocol import TBinaryProtocol, TCompactProtocol
        from thriftpy2.thrift import TClient
        from thriftpy2.transport import TBufferedTransport, TFramedTransport, TSocket

        self.idl = load_idl(idl)
        self.host, self.port = host, port
        self.socket = TSocket(host, port, socket_timeout=timeout_ms, connect_timeout=timeout_ms)
        self.transport = (TFramedTransport if transport == "framed" else TBufferedTransport)(self.socket)
        protocol_class = TCompactProtocol if protocol == "compact" else TBinaryProtocol
        self.client = TClient(self.idl.THBaseService, protocol_class(self.transport, decode_response=False))
        try:
            self.transport.open()
        except Exception as error:
            raise UnreachableError(
                f"HBase Thrift2 gateway {host}:{port} did not answer ({error}); check the 'thrift' option and that "
                "the gateway runs (hbase thrift2 start)"
            ) from None

    def close(self) -> None:
        """Close the connection."""
        self.transport.close()

    def table_exists(self, table: str) -> bool:
        """Whether ``table`` exists."""
        return bool(self.client.tableExists(table_name(self.idl, table)))

    def families(self, table: str) -> list[str]:
        """The column family names of ``table``."""
        descriptor = self.client.getTableDescriptor(table_name(self.idl, table))
        return [column.name.decode() for column in descriptor.columns or ()]

    def create_table(self, table: str, families: list[str] | tuple[str, ...], max_versions: int = 1) -> None:
        """Create ``table`` with ``families`` (``max_versions`` each, no TTL)."""
        idl = self.idl
        columns = [idl.TColumnFamilyDescriptor(name=f.encode(), maxVersions=max_versions) for f in families]
        self.client.createTable(idl.TTableDescriptor(tableName=table_name(idl, table), columns=columns), None)
