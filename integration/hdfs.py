"""A real HDFS (one NameNode, one DataNode) on loopback, for tests and local use.

The jars come from Maven Central through ``integration/install.sh`` (into ``integration/target/hdfs-libs``): Hadoop's
shaded ``hadoop-client-minicluster``, whose ``org.apache.hadoop.test.MiniDFSClusterManager`` runs a real NameNode
and DataNode (RPC, block transfer, WebHDFS: the daemons of a production cluster, in one JVM) from the command line.
It runs as a child ``java`` process bound to 127.0.0.1, freshly formatted, with its metadata and blocks in a
temporary directory that ``stop()`` removes. Hadoop 3.5.0 is the version of the client PySpark ships, so Spark reads
and writes ``hdfs://`` URIs of this cluster with its own jars and no extra setting.

    from integration.hdfs import HdfsCluster

    with HdfsCluster() as hdfs:
        hdfs.uri("/checkpoints/q1")     # "hdfs://127.0.0.1:PORT/checkpoints/q1"
        hdfs.webhdfs("/")               # "http://127.0.0.1:HTTP_PORT/webhdfs/v1/"

From a shell (foreground, Ctrl-C to stop)::

    python -m integration.hdfs --port 8020 --http-port 9870
    python -m integration.hdfs --port 0                 # any free ports

Traps handled here (see integration/README.md): MiniDFSCluster finds its base directory through Hadoop's test
utilities, which load JUnit 5's ``Assertions`` (the ``hdfs`` Maven profile adds ``junit-jupiter-api``, else the JVM
exits at once with ``NoClassDefFoundError``); the base directory is set with ``-Dtest.build.data`` and
``hdfs.minidfs.basedir``, else it lands in ``./target/test/data`` of the working directory; readiness is judged by
the manager's details file (written once the DataNode has registered and safe mode is off) *and* a WebHDFS answer.
"""

from __future__ import annotations

import json
import logging
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as `python integration/hdfs.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.java_server import (
    INTEGRATION_DIR,
    JavaServer,
    JavaServerError,
    JavaServerUnavailableError,
    ServerOptions,
    run_in_foreground,
    server_argument_parser,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "HADOOP_VERSION",
    "HDFS_LIBS_DIR",
    "HdfsCluster",
    "HdfsError",
    "HdfsUnavailableError",
    "missing_requirements",
]

#: Must match ``hadoop.version`` in integration/pom.xml (and the hadoop-client jars of PySpark).
HADOOP_VERSION = "3.5.0"
HDFS_LIBS_DIR = INTEGRATION_DIR / "target" / "hdfs-libs"
MANAGER_MAIN = "org.apache.hadoop.test.MiniDFSClusterManager"
#: Written by the manager once the cluster is up (``-writeDetails``); holds ``{"namenode_port": N}``.
DETAILS_FILE = "details.json"

log = logging.getLogger(__name__)

_LOG4J = """\
log4j.rootLogger={level},console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{{ISO8601}} %p [%t] %c{{1}}: %m%n
log4j.logger.org.apache.hadoop.test.MiniDFSClusterManager=INFO
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.security.authentication.server.AuthenticationFilter=ERROR
log4j.logger.org.apache.hadoop.hdfs.server.datanode.fsdataset.impl.FsDatasetImpl=ERROR
log4j.logger.org.apache.hadoop.hdfs.server.datanode.web.DatanodeHttpServer=ERROR
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DirectoryScanner=ERROR
log4j.logger.org.apache.hadoop.metrics2=ERROR
"""


class HdfsUnavailableError(JavaServerUnavailableError):
    """Java 17+ or the HDFS jars are missing: nothing is wrong with the code, the machine lacks a piece."""


class HdfsError(JavaServerError):
    """The HDFS cluster failed to start or died."""


def missing_requirements(libs_dir: Path | str | None = None) -> str | None:
    """Why an HDFS cluster cannot be started here (for ``pytest.skip``), or None when it can."""
    return HdfsCluster.unmet_requirements(libs_dir)


class HdfsCluster(JavaServer):
    """One NameNode and one DataNode (``MiniDFSClusterManager -format``) in one JVM on 127.0.0.1.

    Ports: ``port`` (the NameNode's RPC port: ``hdfs://127.0.0.1:<port>``) and ``http_port`` (its web server and
    WebHDFS); 0 or None picks free ones. The DataNode's ports are chosen by the cluster (free loopback ports).
    ``config``: extra or overriding Hadoop settings, passed as ``-D key=value`` (e.g. ``{"dfs.blocksize": 1048576}``).
    """

    NAME = "HDFS"
    PORTS = ("port", "http_port")
    LIBS_DIR = HDFS_LIBS_DIR
    CORE_JAR = (f"hadoop-client-minicluster-{HADOOP_VERSION}.jar", "hadoop-client-minicluster-")
    #: hadoop-client-minicluster needs the client jars, JUnit 5's API (MiniDFSCluster's base directory comes from a
    #: test utility that calls ``Assertions``) and a log4j 1 implementation.
    RUNTIME_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "junit-jupiter-api-", "reload4j-")
    JARS_DESCRIPTION = f"Hadoop {HADOOP_VERSION} HDFS minicluster jars (hadoop-client-minicluster, junit-jupiter-api)"
    LOG_FILE = "hdfs.log"
    WORK_DIR_PREFIX = "spyt-hdfs-"
    HEAP = "512m"
    #: Nothing of a test cluster's state is worth a clean shutdown.
    STOP_TIMEOUT = 0.0
    Error = HdfsError
    UnavailableError = HdfsUnavailableError

    #: Hadoop settings besides ports and directories; ``config=`` overrides any of them.
    DEFAULT_CONFIG: Mapping[str, object] = {
        "dfs.replication": 1,  # one DataNode
        "dfs.permissions.enabled": False,  # any local user may write anywhere
        "dfs.namenode.safemode.extension": 0,
        "dfs.namenode.heartbeat.recheck-interval": 10000,
        "dfs.heartbeat.interval": 1,
        "dfs.blockreport.initialDelay": 0,
        "dfs.namenode.fs-limits.min-block-size": 1024,
    }

    port: int
    http_port: int

    def __init__(self, port: int | None = None, http_port: int | None = None, **options: Unpack[ServerOptions]) -> None:
        super().__init__({"port": port, "http_port": http_port}, **options)

    @property
    def namenode(self) -> str:
        """``"127.0.0.1:PORT"``: the NameNode's RPC address; valid once ``start()`` returned."""
        return self.address

    def uri(self, path: str = "/") -> str:
        """An ``hdfs://`` URI of ``path`` on this cluster (a ``checkpointLocation``, a table's path, ...)."""
        return f"hdfs://{self.namenode}/{path.lstrip('/')}"

    def webhdfs(self, path: str = "/") -> str:
        """The WebHDFS REST URL of ``path`` (append ``?op=...``)."""
        return f"http://{self.host}:{self.http_port}/webhdfs/v1/{path.lstrip('/')}"

    def list_status(self, path: str = "/", timeout: float = 10.0) -> list[dict[str, object]]:
        """The entries of directory ``path`` through WebHDFS (``LISTSTATUS``): dicts with ``pathSuffix``, ``type``,
        ``length``, ...; raises :class:`HdfsError` when the NameNode refuses (e.g. ``FileNotFoundException``)."""
        try:
            with urllib.request.urlopen(self.webhdfs(path) + "?op=LISTSTATUS", timeout=timeout) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as err:
            detail = err.read().decode("utf-8", "replace")
            raise HdfsError(f"WebHDFS LISTSTATUS {path}: HTTP {err.code} {detail}") from None
        return list(body["FileStatuses"]["FileStatus"])

    # -------------------------------------------------------------------------------------------- hooks

    def hadoop_config(self) -> dict[str, object]:
        """The ``-D`` settings the cluster starts with (ports are given to the manager separately)."""
        assert self.data_dir is not None
        return self._merged_config(
            {
                "hdfs.minidfs.basedir": str(self.data_dir / "dfs"),
                "hadoop.tmp.dir": str(self.data_dir / "tmp"),
                "dfs.namenode.http-address": f"{self.host}:{self.http_port}",
            }
        )

    def _write_configs(self) -> None:
        assert self.work_dir is not None
        (self.work_dir / DETAILS_FILE).unlink(missing_ok=True)
        level = "WARN" if self.log_level.upper() == "INFO" else self.log_level.upper()
        (self.work_dir / "log4j.properties").write_text(_LOG4J.format(level=level))

    def _jvm_flags(self, heap: str) -> list[str]:
        assert self.work_dir is not None and self.data_dir is not None
        return [
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # start-up time over peak throughput
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            f"-Dtest.build.data={self.data_dir}",
            f"-Dhadoop.log.dir={self.work_dir}",
            f"-Dlog4j.configuration={(self.work_dir / 'log4j.properties').as_uri()}",
        ]

    @property
    def formatted(self) -> bool:
        """Whether ``work_dir`` already holds a formatted NameNode (a kept ``work_dir``: started without ``-format``,
        so its files survive a restart)."""
        return self.data_dir is not None and (self.data_dir / "dfs" / "name-0-1" / "current" / "VERSION").exists()

    def _command(self) -> list[str]:
        assert self.work_dir is not None
        args = [] if self.formatted else ["-format"]
        args += ["-datanodes", "1", "-nnport", str(self.port), "-httpport", str(self.http_port)]
        args += ["-writeDetails", str(self.work_dir / DETAILS_FILE)]
        for key, value in self.hadoop_config().items():
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            args += ["-D", f"{key}={text}"]
        return self._java_command(MANAGER_MAIN, *args)

    def _readiness_probe(self) -> Callable[[float], str | None]:
        """The manager's details file (the DataNode registered, safe mode off), then WebHDFS lists ``/``."""

        def probe(remaining: float) -> str | None:
            assert self.work_dir is not None
            details = self.work_dir / DETAILS_FILE
            if not details.exists():
                return "cluster not started yet (no details file)"
            try:
                self.list_status("/", timeout=max(0.5, min(5.0, remaining)))
            except (OSError, HdfsError, ValueError, KeyError) as err:
                return f"WebHDFS: {err!r}"
            return None

        return probe


# --------------------------------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m integration.hdfs``: one cluster in the foreground until Ctrl-C; the exit status."""
    description = f"Run a real HDFS (Hadoop {HADOOP_VERSION}: one NameNode, one DataNode) on 127.0.0.1 until Ctrl-C."
    parser = server_argument_parser("python -m integration.hdfs", description, port=8020, heap="512m")
    parser.add_argument("--http-port", type=int, default=0, help="NameNode web/WebHDFS port (default: any free port)")
    args = parser.parse_args(argv)
    cluster = HdfsCluster(args.port, args.http_port, heap=args.heap, work_dir=args.data_dir, start_timeout=args.timeout)

    def describe() -> str:
        return (
            f"  fs.defaultFS = {cluster.uri('/')}\n"
            f"  WebHDFS      = {cluster.webhdfs('/')}?op=LISTSTATUS\n"
            f"  log          = {cluster.log_path}"
        )

    banner = f"Starting HDFS (Hadoop {HADOOP_VERSION} minicluster: a NameNode and a DataNode) ..."
    return run_in_foreground(cluster, banner, describe)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
