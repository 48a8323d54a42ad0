"""A real, standalone Apache ZooKeeper for tests and local use.

The jars come from Maven Central through ``integration/install.sh`` (into ``integration/target/zookeeper-libs``);
the server runs as a plain ``java -cp <jars> org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg`` child
process, bound to 127.0.0.1 only, with its config, data and log in a temporary directory that ``stop()`` removes.

    from integration.zookeeper import ZooKeeperServer

    with ZooKeeperServer() as zk:
        client = kazoo.client.KazooClient(hosts=zk.hosts)   # "127.0.0.1:PORT"

From a shell (foreground, Ctrl-C to stop)::

    python -m integration.zookeeper --port 2181
    python -m integration.zookeeper --port 0            # any free port

Two quiet traps are handled here (see integration/README.md): the admin server (Jetty on port 8080) is disabled,
and readiness is judged by the ``srvr`` four-letter word *and* a real client session, not by ``ruok``, which
answers ``imok`` even while the server drops every client connection.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as `python integration/zookeeper.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.java_server import (
    INTEGRATION_DIR,
    JavaServer,
    JavaServerError,
    JavaServerUnavailableError,
    ServerOptions,
    properties_text,
    run_in_foreground,
    server_argument_parser,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "ZOOKEEPER_LIBS_DIR",
    "ZOOKEEPER_VERSION",
    "ZooKeeperError",
    "ZooKeeperServer",
    "ZooKeeperUnavailableError",
    "four_letter_word",
    "missing_requirements",
    "zookeeper_classpath",
]

#: Must match ``zookeeper.version`` in integration/pom.xml.
ZOOKEEPER_VERSION = "3.9.5"

ZOOKEEPER_LIBS_DIR = INTEGRATION_DIR / "target" / "zookeeper-libs"
SERVER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"

log = logging.getLogger(__name__)


class ZooKeeperUnavailableError(JavaServerUnavailableError):
    """Java 17+ or the ZooKeeper jars are missing: nothing is wrong with the code, the machine lacks a piece."""


class ZooKeeperError(JavaServerError):
    """The server failed to start or died."""


def zookeeper_classpath(libs_dir: Path | str | None = None) -> list[Path]:
    """The server's jars (sorted), or [] when the ZooKeeper jar or one of its run-time jars is not there.

    For the default directory the server jar must be exactly ``zookeeper-ZOOKEEPER_VERSION.jar``, so that a stale
    install of another version asks for ``install.sh`` to be re-run."""
    return ZooKeeperServer.classpath(libs_dir)


def missing_requirements(libs_dir: Path | str | None = None) -> str | None:
    """Why a server cannot be started here (for ``pytest.skip``), or None when it can."""
    return ZooKeeperServer.unmet_requirements(libs_dir)


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a four-letter command (``srvr``, ``ruok``, ``mntr``, ...) and return the server's whole answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


_LOGBACK = """\
<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>[%d{{HH:mm:ss.SSS}}] %level %msg \\(%logger{{0}}\\)%n</pattern></encoder>
  </appender>
  <root level="{level}"><appender-ref ref="STDOUT"/></root>
</configuration>
"""


class ZooKeeperServer(JavaServer):
    """One standalone ZooKeeper on 127.0.0.1.

    ``port``: 0 or None picks a free port (and retries with a new one if another process grabs it in between).
    ``work_dir``: where ``zoo.cfg``, ``data/`` and ``zookeeper.log`` go; by default a fresh temporary directory that
    ``stop()`` removes (a given ``work_dir`` is kept, with its data). ``config``: extra or overriding ``zoo.cfg``
    entries.
    """

    NAME = "ZooKeeper"
    LIBS_DIR = ZOOKEEPER_LIBS_DIR
    CORE_JAR = (f"zookeeper-{ZOOKEEPER_VERSION}.jar", "zookeeper-3")
    #: Jars ZooKeeper's pom marks "provided" that the server needs at run time; without them it fails quietly.
    RUNTIME_JARS = ("metrics-core-", "snappy-java-")
    JARS_DESCRIPTION = f"ZooKeeper {ZOOKEEPER_VERSION} jars (with metrics-core and snappy-java)"
    LOG_FILE = "zookeeper.log"
    WORK_DIR_PREFIX = "spyt-zookeeper-"
    Error = ZooKeeperError
    UnavailableError = ZooKeeperUnavailableError

    #: zoo.cfg entries besides the port and directories; ``config=`` overrides any of them.
    DEFAULT_CONFIG: Mapping[str, object] = {
        "tickTime": 2000,
        "minSessionTimeout": 1000,  # lets tests expire sessions quickly
        "maxClientCnxns": 0,  # Spark workers and tests open many sessions from one address
        "admin.enableServer": "false",  # Jetty would grab port 8080
        "4lw.commands.whitelist": "srvr,ruok,mntr,stat,cons,conf,envi",
        "forceSync": "no",  # tests: no fsync per transaction (about 2x faster)
        "autopurge.purgeInterval": 0,
    }

    port: int

    def __init__(self, port: int | None = None, **options: Unpack[ServerOptions]) -> None:
        super().__init__({"port": port}, **options)

    @classmethod
    def unmet_requirements(cls, libs_dir: Path | str | None = None) -> str | None:
        """Java, the jars and the Python client kazoo (used to judge readiness)."""
        reason = super().unmet_requirements(libs_dir)
        if reason:
            return reason
        try:
            import kazoo  # noqa: F401
        except ImportError:
            return "the Python client kazoo is not installed (pip install -e .)"
        return None

    @property
    def hosts(self) -> str:
        """``"127.0.0.1:PORT"`` (a kazoo ``hosts`` string); valid once ``start()`` returned."""
        return self.address

    def uri(self, path: str = "") -> str:
        """A ``zookeeper://`` store URI for this server, e.g. ``uri("/spyt/my-query")``."""
        return f"zookeeper://{self.hosts}{path}"

    # -------------------------------------------------------------------------------------------- hooks

    def _zoo_cfg(self) -> dict[str, object]:
        return self._merged_config({"dataDir": self.data_dir, "clientPort": self.port, "clientPortAddress": self.host})

    def _write_configs(self) -> None:
        assert self.work_dir is not None
        (self.work_dir / "zoo.cfg").write_text(properties_text(self._zoo_cfg()))
        (self.work_dir / "logback.xml").write_text(_LOGBACK.format(level=self.log_level))

    def _jvm_flags(self, heap: str) -> list[str]:
        assert self.work_dir is not None
        return [
            "-XX:+UseSerialGC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            # zoo.cfg has these too; as system properties they also hold before the config is parsed.
            "-Dzookeeper.admin.enableServer=false",
            f"-Dzookeeper.4lw.commands.whitelist={self._zoo_cfg()['4lw.commands.whitelist']}",
            "-Dzookeeper.jmx.log4j.disable=true",
            f"-Dlogback.configurationFile={self.work_dir / 'logback.xml'}",
        ]

    def _command(self) -> list[str]:
        assert self.work_dir is not None
        return self._java_command(SERVER_MAIN, str(self.work_dir / "zoo.cfg"))

    def _readiness_probe(self) -> Callable[[float], str | None]:
        """``srvr`` must report a serving server, then a kazoo session must list ``/`` (``ruok`` is not enough)."""
        from kazoo.client import KazooClient

        def probe(remaining: float) -> str | None:
            try:
                answer = four_letter_word(self.host, self.port, "srvr", timeout=min(2.0, remaining))
            except OSError as err:
                return str(err)
            if "Mode:" not in answer:
                return answer.strip() or "empty srvr answer"
            client = KazooClient(hosts=self.hosts, timeout=5.0, connection_retry={"max_tries": 0})
            try:
                client.start(timeout=max(0.5, min(5.0, remaining)))
                client.get_children("/")
                return None
            except Exception as err:  # kazoo's timeout / connection-loss while the server settles
                return f"client session: {err!r}"
            finally:
                with contextlib.suppress(Exception):
                    client.stop()
                    client.close()

        return probe


# --------------------------------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m integration.zookeeper``: one server in the foreground until Ctrl-C; the exit status."""
    description = f"Run a standalone Apache ZooKeeper {ZOOKEEPER_VERSION} on 127.0.0.1 until Ctrl-C."
    parser = server_argument_parser("python -m integration.zookeeper", description, port=2181, heap="256m")
    args = parser.parse_args(argv)
    server = ZooKeeperServer(args.port, heap=args.heap, work_dir=args.data_dir, start_timeout=args.timeout)

    def describe() -> str:
        return (
            f"  hosts     = {server.hosts}\n"
            f"  store URI = {server.uri('/spyt/<query>')}\n"
            f"  log       = {server.log_path}"
        )

    banner = f"Starting Apache ZooKeeper {ZOOKEEPER_VERSION} (standalone) ..."
    return run_in_foreground(server, banner, describe)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
