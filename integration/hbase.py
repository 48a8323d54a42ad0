"""A real, standalone Apache HBase 2.6.1 with its Thrift gateway, for tests and local use.

The jars come from Maven Central through ``integration/install.sh`` (into ``integration/target/hbase-libs``).
Two JVMs run on 127.0.0.1, each a :class:`~integration.java_server.JavaServer`:

* :class:`HBaseMaster`: ``org.apache.hadoop.hbase.master.HMaster start`` with ``hbase.cluster.distributed=false``:
  an embedded ZooKeeper, the master and one region server in one JVM, data on the local filesystem.
* :class:`HBaseThrift`: the Thrift1 gateway (``org.apache.hadoop.hbase.thrift.ThriftServer``), which ``happybase``
  (and so the ``hbase://`` offset store and the ``spyt_hbase`` sink) talks to.
* :class:`HBaseThrift2`: the Thrift2 gateway (``org.apache.hadoop.hbase.thrift2.ThriftServer``), whose
  ``putMultiple`` carries a timestamp per row (the sink's ``thrift_api=2``; client: thriftpy2 with the IDL read from
  the hbase-thrift jar, :mod:`spyt_queue.sinks.hbase.thrift2`).

:class:`HBase` starts all three (``thrift2=False``: no Thrift2 gateway) and stops them::

    from integration.hbase import HBase

    with HBase() as hbase:                   # free loopback ports, temp dir removed on exit
        hbase.thrift_address                 # "127.0.0.1:PORT" (the sink's `thrift` option)
        hbase.thrift2_address                # "127.0.0.1:PORT" (`thrift` with `thrift_api=2`)
        hbase.uri("offsets")                 # "hbase://127.0.0.1:PORT/offsets" (an offsets.store URI)

From a shell (foreground, Ctrl-C to stop)::

    python -m integration.hbase --port 9090 --thrift2-port 9091

Traps that fail quietly, handled here (see integration/README.md): the local filesystem has no hflush/hsync, so
``hbase.unsafe.stream.capability.enforce=false`` (else the region server aborts writing its WAL); the web UIs are
off (``*.info.port=-1``, they would take 16010/16030/9095); Java 17 needs ``--add-opens`` for HBase's netty and
its off-heap buffers; ``hbase-site.xml`` is only read from the classpath (the config directory comes first on it).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

if __package__ in (None, ""):  # run as `python integration/hbase.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.java_server import (
    INTEGRATION_DIR,
    JavaServer,
    JavaServerError,
    JavaServerUnavailableError,
    ServerOptions,
    java_command,
    run_in_foreground,
    server_argument_parser,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "HBASE_LIBS_DIR",
    "HBASE_VERSION",
    "HBase",
    "HBaseError",
    "HBaseMaster",
    "HBaseThrift",
    "HBaseThrift2",
    "HBaseUnavailableError",
    "missing_requirements",
]

#: Must match ``hbase.version`` in integration/pom.xml.
HBASE_VERSION = "2.6.1"
HBASE_LIBS_DIR = INTEGRATION_DIR / "target" / "hbase-libs"
MASTER_MAIN = "org.apache.hadoop.hbase.master.HMaster"
THRIFT_MAIN = "org.apache.hadoop.hbase.thrift.ThriftServer"
THRIFT2_MAIN = "org.apache.hadoop.hbase.thrift2.ThriftServer"
#: The master's log line once meta is assigned and tables can be created (logged at INFO by HMaster).
READY_LINE = "Master has completed initialization"

log = logging.getLogger(__name__)

_ADD_OPENS = [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
    for pkg in (
        "java.lang",
        "java.lang.reflect",
        "java.nio",
        "sun.nio.ch",
        "jdk.internal.ref",
        "java.util",
        "java.util.concurrent",
        "java.io",
        "java.net",
    )
] + [
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
]

_LOG4J = """\
log4j.rootLogger={level},console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{{ISO8601}} %p [%t] %c{{2}}: %m%n
log4j.logger.org.apache.hadoop.hbase.master.HMaster=INFO
log4j.logger.org.apache.hadoop.hbase.thrift.ThriftServer=INFO
log4j.logger.org.apache.hadoop.hbase.thrift.ThriftServerRunner=INFO
log4j.logger.org.apache.hadoop.hbase.thrift2.ThriftServer=INFO
log4j.logger.org.apache.zookeeper=ERROR
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.metrics2=ERROR
"""


class HBaseUnavailableError(JavaServerUnavailableError):
    """Java 17+, the HBase jars or happybase are missing: the machine lacks a piece, nothing is wrong with the code."""


class HBaseError(JavaServerError):
    """HBase or its Thrift gateway failed to start or died."""


def missing_requirements(libs_dir: Path | str | None = None) -> str | None:
    """Why HBase cannot be started here (for ``pytest.skip``), or None when it can."""
    return HBaseMaster.unmet_requirements(libs_dir)


def _site_xml(props: Mapping[str, object]) -> str:
    def fmt(v: object) -> str:
        return ("true" if v else "false") if isinstance(v, bool) else str(v)

    body = "".join(
        f"  <property><name>{escape(str(k))}</name><value>{escape(fmt(v))}</value></property>\n"
        for k, v in props.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


class _HBaseJvm(JavaServer):
    """What both HBase JVMs share: the jars, the Java 17 flags, a ``conf/`` directory first on the classpath."""

    LIBS_DIR = HBASE_LIBS_DIR
    CORE_JAR = (f"hbase-server-{HBASE_VERSION}.jar", "hbase-server-")
    RUNTIME_JARS = ("hbase-thrift-", "reload4j-")
    JARS_DESCRIPTION = f"HBase {HBASE_VERSION} jars (hbase-server, hbase-thrift)"
    HEAP = "768m"
    #: A clean shutdown takes about 20 s; nothing of a test server is worth waiting for.
    STOP_TIMEOUT = 5.0
    Error = HBaseError
    UnavailableError = HBaseUnavailableError

    @classmethod
    def unmet_requirements(cls, libs_dir: Path | str | None = None) -> str | None:
        """Java, the jars and the Python client happybase (used to judge readiness)."""
        reason = super().unmet_requirements(libs_dir)
        if reason:
            return reason
        try:
            import happybase  # noqa: F401
        except ImportError:
            return "the Python client happybase is not installed (pip install -e '.[hbase]')"
        return None

    @property
    def conf_dir(self) -> Path:
        assert self.work_dir is not None
        return self.work_dir / "conf"

    def _jvm_flags(self, heap: str) -> list[str]:
        return [
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # start-up time over peak throughput
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            *_ADD_OPENS,
        ]

    def _hbase_command(self, main_class: str, *args: str) -> list[str]:
        """``java ... -cp conf:<jars> main_class args`` (hbase-site.xml is only read from the classpath)."""
        return java_command(
            [self.conf_dir, *self.classpath(self.libs_dir)],
            main_class,
            *args,
            heap=self.heap,
            flags=[*self._jvm_flags(self.heap), *self.jvm_options],
            java=self.java,
        )


class HBaseMaster(_HBaseJvm):
    """HBase standalone (``HMaster start``): embedded ZooKeeper, master and region server in one JVM on 127.0.0.1.

    Ports: ``zookeeper_port`` (the client port, ``hbase.zookeeper.quorum=127.0.0.1:<port>``), ``master_port``,
    ``regionserver_port``; 0 or None picks free ones. ``config``: extra or overriding ``hbase-site.xml`` entries.
    """

    NAME = "HBase"
    PORTS = ("zookeeper_port", "master_port", "regionserver_port")
    #: The master's clean shutdown takes about 20 s and never finished within the 5 s it was given: SIGKILL at once.
    STOP_TIMEOUT = 0.0
    LOG_FILE = "hbase-master.log"
    WORK_DIR_PREFIX = "spyt-hbase-"

    #: hbase-site.xml entries besides ports and directories; ``config=`` overrides any of them.
    DEFAULT_CONFIG: Mapping[str, object] = {
        "hbase.cluster.distributed": False,
        # The local filesystem has no hflush/hsync: without this the region server refuses to write its WAL.
        "hbase.unsafe.stream.capability.enforce": False,
        "hbase.master.info.port": -1,
        "hbase.regionserver.info.port": -1,
        "hbase.thrift.info.port": -1,
        # Fast start: do not wait for more region servers than the one we have.
        "hbase.master.wait.on.regionservers.maxtostart": 1,
        "hbase.master.wait.on.regionservers.mintostart": 1,
        "hbase.master.wait.on.regionservers.interval": 100,
        "hbase.master.wait.on.regionservers.timeout": 1000,
        "hbase.regionserver.msginterval": 500,
        "hbase.balancer.period": 3600000,
        "hbase.master.hfilecleaner.ttl": 60000,
        "hbase.zookeeper.property.maxClientCnxns": 0,
    }

    zookeeper_port: int
    master_port: int
    regionserver_port: int

    def __init__(
        self,
        zookeeper_port: int | None = None,
        master_port: int | None = None,
        regionserver_port: int | None = None,
        **options: Unpack[ServerOptions],
    ) -> None:
        options.setdefault("start_timeout", 120.0)
        super().__init__(
            {"zookeeper_port": zookeeper_port, "master_port": master_port, "regionserver_port": regionserver_port},
            **options,
        )

    def site_config(self) -> dict[str, object]:
        """The ``hbase-site.xml`` entries (ports picked by now)."""
        assert self.data_dir is not None
        return self._merged_config(
            {
                "hbase.rootdir": (self.data_dir / "hbase").as_uri(),
                "hbase.tmp.dir": str(self.data_dir / "tmp"),
                "hbase.zookeeper.property.dataDir": str(self.data_dir / "zookeeper"),
                "hbase.zookeeper.property.clientPort": self.zookeeper_port,
                "hbase.zookeeper.quorum": self.host,
                "hbase.master.port": self.master_port,
                "hbase.regionserver.port": self.regionserver_port,
                "hbase.master.ipc.address": self.host,
                "hbase.regionserver.ipc.address": self.host,
                "hbase.master.hostname": self.host,
                "hbase.regionserver.hostname": self.host,
            }
        )

    def write_conf(self, conf_dir: Path, log_level: str) -> None:
        """``hbase-site.xml`` and ``log4j.properties`` into ``conf_dir`` (the Thrift gateway uses the same)."""
        conf_dir.mkdir(parents=True, exist_ok=True)
        (conf_dir / "hbase-site.xml").write_text(_site_xml(self.site_config()))
        level = "WARN" if log_level.upper() == "INFO" else log_level.upper()
        (conf_dir / "log4j.properties").write_text(_LOG4J.format(level=level))

    def _write_configs(self) -> None:
        self.write_conf(self.conf_dir, self.log_level)

    def _command(self) -> list[str]:
        return self._hbase_command(MASTER_MAIN, "start")

    def _readiness_probe(self) -> Callable[[float], str | None]:
        """The master's "completed initialization" line (meta is online, tables can be created)."""

        def probe(remaining: float) -> str | None:
            return None if READY_LINE in self._log_since_launch() else "master not initialized yet"

        return probe


class HBaseThrift(_HBaseJvm):
    """The Thrift1 gateway of an :class:`HBaseMaster` (``thrift.ThriftServer``, binary protocol, buffered transport:
    what ``happybase.Connection`` speaks by default). Ready once happybase lists the tables through it."""

    NAME = "HBase Thrift"
    PORTS = ("port",)
    LOG_FILE = "hbase-thrift.log"
    WORK_DIR_PREFIX = "spyt-hbase-thrift-"
    HEAP = "384m"

    port: int

    def __init__(self, master: HBaseMaster, port: int | None = None, **options: Unpack[ServerOptions]) -> None:
        super().__init__({"port": port}, **options)
        self.master = master

    def _write_configs(self) -> None:
        self.master.write_conf(self.conf_dir, self.log_level)

    def _command(self) -> list[str]:
        return self._hbase_command(THRIFT_MAIN, "-b", self.host, "-p", str(self.port), "--infoport", "-1", "start")

    def _readiness_probe(self) -> Callable[[float], str | None]:
        import happybase

        def probe(remaining: float) -> str | None:
            try:
                conn = happybase.Connection(self.host, self.port, timeout=int(min(5.0, remaining) * 1000))
            except Exception as err:  # connection refused while the JVM starts
                return f"connect: {err!r}"
            try:
                conn.tables()
                return None
            except Exception as err:  # the gateway's first calls fail while it reaches ZooKeeper and the master
                return f"list tables: {err!r}"
            finally:
                with contextlib.suppress(Exception):
                    conn.close()

        return probe


class HBaseThrift2(HBaseThrift):
    """The Thrift2 gateway of an :class:`HBaseMaster` (``thrift2.ThriftServer``, binary protocol, buffered transport).
    Ready once a Thrift2 client (thriftpy2, IDL from the hbase-thrift jar) gets an answer from ``tableExists``."""

    NAME = "HBase Thrift2"
    LOG_FILE = "hbase-thrift2.log"
    WORK_DIR_PREFIX = "spyt-hbase-thrift2-"

    def _command(self) -> list[str]:
        return self._hbase_command(THRIFT2_MAIN, "-b", self.host, "-p", str(self.port), "--infoport", "-1", "start")

    def _readiness_probe(self) -> Callable[[float], str | None]:
        from spyt_queue.sinks.hbase.thrift2 import Thrift2Client

        def probe(remaining: float) -> str | None:
            try:
                client = Thrift2Client(self.host, self.port, timeout_ms=int(min(5.0, remaining) * 1000))
            except Exception as err:  # connection refused while the JVM starts
                return f"connect: {err!r}"
            try:
                client.table_exists("hbase:meta")
                return None
            except Exception as err:  # the gateway's first calls fail while it reaches ZooKeeper and the master
                return f"tableExists: {err!r}"
            finally:
                with contextlib.suppress(Exception):
                    client.close()

        return probe


class HBase:
    """HBase standalone plus its Thrift1 and Thrift2 gateways, started and stopped together.

    ``thrift_port`` / ``thrift2_port``: the gateways' ports (0 or None: free ones); ``thrift2=False`` starts no
    Thrift2 gateway. ``options`` go to the master (``work_dir``, ``heap``, ``config``, ...); the gateways share its
    log level, Java and jars.
    """

    NAME = "HBase"

    def __init__(
        self,
        thrift_port: int | None = None,
        thrift2_port: int | None = None,
        thrift2: bool = True,
        **options: Unpack[ServerOptions],
    ) -> None:
        self.master = HBaseMaster(**options)
        shared = {k: v for k, v in options.items() if k in ("host", "libs_dir", "java", "log_level")}
        self.thrift = HBaseThrift(self.master, thrift_port, **shared)  # type: ignore[arg-type]
        self.thrift2 = HBaseThrift2(self.master, thrift2_port, **shared) if thrift2 else None  # type: ignore[arg-type]
        self.startup_seconds: float | None = None

    @staticmethod
    def unmet_requirements(libs_dir: Path | str | None = None) -> str | None:
        """Why HBase cannot be started here, or None."""
        return missing_requirements(libs_dir)

    @property
    def libs_dir(self) -> Path | None:
        return self.master.libs_dir

    @property
    def thrift_host(self) -> str:
        return self.thrift.host

    @property
    def thrift_port(self) -> int:
        return self.thrift.port

    @property
    def thrift_address(self) -> str:
        """``"127.0.0.1:PORT"`` of the Thrift gateway (the sink's ``thrift`` option)."""
        return self.thrift.address

    @property
    def thrift2_address(self) -> str:
        """``"127.0.0.1:PORT"`` of the Thrift2 gateway (the sink's ``thrift`` option with ``thrift_api=2``)."""
        if self.thrift2 is None:
            raise HBaseError("this HBase was started without its Thrift2 gateway (thrift2=False)")
        return self.thrift2.address

    @property
    def address(self) -> str:
        return self.thrift_address

    @property
    def log_path(self) -> Path | None:
        return self.master.log_path

    @property
    def is_running(self) -> bool:
        return all(s.is_running for s in self._servers())

    def _servers(self) -> list[_HBaseJvm]:
        return [self.master, self.thrift, *([self.thrift2] if self.thrift2 is not None else [])]

    def uri(self, table: str) -> str:
        """An ``hbase://`` offset-store URI for ``table`` on this server."""
        return f"hbase://{self.thrift_address}/{table}"

    def connection(self, **kwargs: object):
        """A new ``happybase.Connection`` to the gateway (the caller closes it)."""
        import happybase

        return happybase.Connection(self.thrift_host, self.thrift_port, **kwargs)

    def log_tail(self, lines: int | None = None) -> str:
        tails = [self.master.log_tail(lines), f"--- thrift ---\n{self.thrift.log_tail(lines)}"]
        if self.thrift2 is not None:
            tails.append(f"--- thrift2 ---\n{self.thrift2.log_tail(lines)}")
        return "\n".join(tails)

    def start(self) -> HBase:
        """Start the master, then the gateways (about 10-25 s in all on a 2-core machine)."""
        t0 = time.monotonic()
        self.master.start()
        try:
            self.thrift.start()
            if self.thrift2 is not None:
                self.thrift2.start()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        log.info("HBase up: Thrift at %s in %.1fs", self.thrift_address, self.startup_seconds)
        return self

    def stop(self) -> None:
        """Stop the gateways, then the master (SIGKILL after 5 s each), and remove the temporary directories."""
        try:
            if self.thrift2 is not None:
                self.thrift2.stop()
        finally:
            try:
                self.thrift.stop()
            finally:
                self.master.stop()

    def __enter__(self) -> HBase:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Foreground(HBase):
    """:func:`run_in_foreground` drives one server object: this one's ``Error`` is the master's."""

    Error = HBaseError


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m integration.hbase``: HBase and its Thrift gateway in the foreground until Ctrl-C."""
    description = (
        f"Run Apache HBase {HBASE_VERSION} standalone with its Thrift1 and Thrift2 gateways on 127.0.0.1 until Ctrl-C."
    )
    parser = server_argument_parser("python -m integration.hbase", description, port=9090, heap="768m")
    parser.add_argument("--thrift2-port", type=int, default=9091, help="Thrift2 gateway port (default: 9091)")
    parser.add_argument("--no-thrift2", action="store_true", help="start no Thrift2 gateway")
    parser.add_argument("--zookeeper-port", type=int, default=0, help="embedded ZooKeeper port (default: free)")
    args = parser.parse_args(argv)
    server = _Foreground(
        args.port,
        args.thrift2_port,
        not args.no_thrift2,
        zookeeper_port=args.zookeeper_port,  # type: ignore[call-arg]
        heap=args.heap,
        work_dir=args.data_dir,
        start_timeout=args.timeout,
    )

    def describe() -> str:
        return (
            f"  thrift    = {server.thrift_address}   (sink option thrift=..., happybase.Connection)\n"
            + (
                f"  thrift2   = {server.thrift2_address}   (sink options thrift=..., thrift_api=2)\n"
                if server.thrift2 is not None
                else ""
            )
            + f"  store URI = {server.uri('spyt_offsets')}\n"
            f"  zookeeper = {server.master.host}:{server.master.zookeeper_port}\n"
            f"  logs      = {', '.join(str(s.log_path) for s in server._servers())}"
        )

    banner = f"Starting Apache HBase {HBASE_VERSION} (standalone) with its Thrift gateways ..."
    return run_in_foreground(server, banner, describe)  # type: ignore[arg-type]


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
