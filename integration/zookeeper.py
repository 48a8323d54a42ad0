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

import argparse
import atexit
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as `python integration/zookeeper.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.kafka_broker import (
    MIN_JAVA,
    _die_with_parent_preexec,
    _free_ports,
    _port_is_free,
    find_java,
)

__all__ = [
    "ZOOKEEPER_LIBS_DIR",
    "ZOOKEEPER_VERSION",
    "ZooKeeperError",
    "ZooKeeperServer",
    "ZooKeeperUnavailableError",
    "missing_requirements",
    "zookeeper_classpath",
]

#: Must match ``zookeeper.version`` in integration/pom.xml.
ZOOKEEPER_VERSION = "3.9.5"

INTEGRATION_DIR = Path(__file__).resolve().parent
ZOOKEEPER_LIBS_DIR = INTEGRATION_DIR / "target" / "zookeeper-libs"
INSTALL_HINT = "run integration/install.sh (needs Java 17+ and Maven; fetches the jars from Maven Central)"
SERVER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"

#: Jars ZooKeeper's pom marks "provided" that the server needs at run time; without them it fails quietly.
_RUNTIME_JARS = ("metrics-core-", "snappy-java-")

log = logging.getLogger(__name__)


class ZooKeeperUnavailableError(RuntimeError):
    """Java 17+ or the ZooKeeper jars are missing: nothing is wrong with the code, the machine lacks a piece."""


class ZooKeeperError(RuntimeError):
    """The server failed to start or died."""


def zookeeper_classpath(libs_dir: Path | str | None = None) -> list[Path]:
    """The server's jars (sorted), or [] when the ZooKeeper jar or one of its run-time jars is not there.

    For the default directory the server jar must be exactly ``zookeeper-ZOOKEEPER_VERSION.jar``, so that a stale
    install of another version asks for ``install.sh`` to be re-run."""
    libs = Path(libs_dir) if libs_dir else ZOOKEEPER_LIBS_DIR
    jars = sorted(libs.glob("*.jar")) if libs.is_dir() else []
    core = f"zookeeper-{ZOOKEEPER_VERSION}.jar" if libs_dir is None else "zookeeper-3"
    needed = (core, *_RUNTIME_JARS)
    return jars if all(any(j.name.startswith(n) for j in jars) for n in needed) else []


def missing_requirements(libs_dir: Path | str | None = None) -> str | None:
    """Why a server cannot be started here (for ``pytest.skip``), or None when it can."""
    if find_java() is None:
        return f"no Java {MIN_JAVA}+ found (JAVA_HOME or PATH); {INSTALL_HINT}"
    if not zookeeper_classpath(libs_dir):
        where = Path(libs_dir) if libs_dir else ZOOKEEPER_LIBS_DIR
        return f"ZooKeeper {ZOOKEEPER_VERSION} jars (with metrics-core and snappy-java) not found in {where}; " + (
            INSTALL_HINT
        )
    try:
        import kazoo  # noqa: F401
    except ImportError:
        return "the Python client kazoo is not installed (pip install -e .)"
    return None


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

_RUNNING: weakref.WeakSet[ZooKeeperServer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        with contextlib.suppress(Exception):
            server.stop()


class ZooKeeperServer:
    """One standalone ZooKeeper on 127.0.0.1.

    ``port``: 0 or None picks a free port (and retries with a new one if another process grabs it in between).
    ``work_dir``: where ``zoo.cfg``, ``data/`` and ``zookeeper.log`` go; by default a fresh temporary directory that
    ``stop()`` removes (a given ``work_dir`` is kept, with its data). ``config``: extra or overriding ``zoo.cfg``
    entries.
    """

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

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        config: Mapping[str, object] | None = None,
        heap: str = "256m",
        work_dir: Path | str | None = None,
        libs_dir: Path | str | None = None,
        java: str | None = None,
        start_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        log_level: str = "INFO",
    ) -> None:
        self.host = host
        self._want_port = port or 0
        self.port = self._want_port
        self.extra_config = dict(config or {})
        self.heap = heap
        self._given_work_dir = Path(work_dir) if work_dir else None
        self.work_dir: Path | None = None
        self.libs_dir = Path(libs_dir) if libs_dir else None
        self._java = java
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.log_level = log_level
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file = None

    # ---------------------------------------------------------------------------------------- properties

    @property
    def hosts(self) -> str:
        """``"127.0.0.1:PORT"`` (a kazoo ``hosts`` string); valid once ``start()`` returned."""
        return f"{self.host}:{self.port}"

    def uri(self, path: str = "") -> str:
        """A ``zookeeper://`` store URI for this server, e.g. ``uri("/spyt/my-query")``."""
        return f"zookeeper://{self.hosts}{path}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def log_path(self) -> Path | None:
        return self.work_dir / "zookeeper.log" if self.work_dir else None

    def log_tail(self, lines: int = 40) -> str:
        path = self.log_path
        if not path or not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])

    # ----------------------------------------------------------------------------------------- lifecycle

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ZooKeeperServer:
        """Write ``zoo.cfg``, launch the JVM and wait until a client session works."""
        if self.is_running:
            return self
        reason = missing_requirements(self.libs_dir)
        if reason:
            raise ZooKeeperUnavailableError(reason)
        java = self._java or find_java()
        assert java is not None
        t0 = time.monotonic()
        attempts = 1 if self._want_port else 3
        for attempt in range(1, attempts + 1):
            try:
                self._prepare_work_dir()
                self._pick_port()
                self._write_configs()
                self._launch(java)
                self._wait_ready(t0 + self.start_timeout)
            except ZooKeeperError:
                if attempt < attempts and self._log_mentions("Address already in use", "BindException"):
                    log.warning("ZooKeeper port clash (%s), retrying on a new port", self.port)
                    self._terminate()
                    continue
                self.stop()
                raise
            except BaseException:  # KeyboardInterrupt, OSError, ...: leave no process or directory behind
                self.stop()
                raise
            break
        self.startup_seconds = time.monotonic() - t0
        _RUNNING.add(self)
        log.info("ZooKeeper up at %s in %.1fs (pid %s)", self.hosts, self.startup_seconds, self.pid)
        return self

    def stop(self) -> None:
        """SIGTERM, SIGKILL after ``stop_timeout`` s, then remove the temporary directory."""
        self._terminate()
        _RUNNING.discard(self)
        if self.work_dir is not None and self._given_work_dir is None:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None

    # ------------------------------------------------------------------------------------------ internals

    def _prepare_work_dir(self) -> None:
        if self._given_work_dir is not None:
            self.work_dir = self._given_work_dir
        elif self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix="spyt-zookeeper-"))
        (self.work_dir / "data").mkdir(parents=True, exist_ok=True)

    def _pick_port(self) -> None:
        if self._want_port:
            if not _port_is_free(self.host, self._want_port):
                raise ZooKeeperError(f"{self.host}:{self._want_port} is already in use (use port 0 for a free one)")
            self.port = self._want_port
        else:
            self.port = _free_ports(1, self.host)[0]

    def _zoo_cfg(self) -> dict[str, object]:
        assert self.work_dir is not None
        cfg: dict[str, object] = {
            "dataDir": self.work_dir / "data",
            "clientPort": self.port,
            "clientPortAddress": self.host,
        }
        cfg.update(self.DEFAULT_CONFIG)
        cfg.update(self.extra_config)
        return cfg

    def _write_configs(self) -> None:
        assert self.work_dir is not None
        (self.work_dir / "zoo.cfg").write_text("".join(f"{k}={v}\n" for k, v in self._zoo_cfg().items()))
        (self.work_dir / "logback.xml").write_text(_LOGBACK.format(level=self.log_level))

    def _launch(self, java: str) -> None:
        assert self.work_dir is not None
        cp = os.pathsep.join(str(j) for j in zookeeper_classpath(self.libs_dir))
        cmd = [
            java,
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            # zoo.cfg has these too; as system properties they also hold before the config is parsed.
            "-Dzookeeper.admin.enableServer=false",
            f"-Dzookeeper.4lw.commands.whitelist={self._zoo_cfg()['4lw.commands.whitelist']}",
            "-Dzookeeper.jmx.log4j.disable=true",
            f"-Dlogback.configurationFile={self.work_dir / 'logback.xml'}",
            "-cp",
            cp,
            SERVER_MAIN,
            str(self.work_dir / "zoo.cfg"),
        ]
        (self.work_dir / "command.txt").write_text(" ".join(cmd) + "\n")
        assert self.log_path is not None
        self._log_file = open(self.log_path, "ab")
        # PDEATHSIG is tied to the forking *thread*: only use it from the main thread.
        preexec = _die_with_parent_preexec() if threading.current_thread() is threading.main_thread() else None
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            cwd=self.work_dir,
            start_new_session=True,
            preexec_fn=preexec,
        )

    def _wait_ready(self, deadline: float) -> None:
        """``srvr`` must report a serving server, then a kazoo session must list ``/`` (``ruok`` is not enough)."""
        from kazoo.client import KazooClient

        last_error: object = None
        while True:
            assert self._proc is not None
            rc = self._proc.poll()
            if rc is not None:
                raise ZooKeeperError(
                    f"ZooKeeper exited with code {rc} during start-up. Log tail ({self.log_path}):\n{self.log_tail()}"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ZooKeeperError(
                    f"ZooKeeper at {self.hosts} not ready after {self.start_timeout:.0f}s (last: {last_error}). "
                    f"Log tail ({self.log_path}):\n{self.log_tail()}"
                )
            try:
                answer = four_letter_word(self.host, self.port, "srvr", timeout=min(2.0, remaining))
            except OSError as err:
                last_error = err
                time.sleep(0.1)
                continue
            if "Mode:" not in answer:
                last_error = answer.strip() or "empty srvr answer"
                time.sleep(0.1)
                continue
            client = KazooClient(hosts=self.hosts, timeout=5.0, connection_retry={"max_tries": 0})
            try:
                client.start(timeout=max(0.5, min(5.0, remaining)))
                client.get_children("/")
                return
            except Exception as err:  # kazoo's timeout / connection-loss while the server settles
                last_error = f"client session: {err!r}"
            finally:
                with contextlib.suppress(Exception):
                    client.stop()
                    client.close()
            time.sleep(0.2)

    def _log_mentions(self, *needles: str) -> bool:
        path = self.log_path
        if not path or not path.exists():
            return False
        text = path.read_text(encoding="utf-8", errors="replace")
        return any(n in text for n in needles)

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                log.warning("ZooKeeper pid %s ignored SIGTERM for %ss; killing it", proc.pid, self.stop_timeout)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(timeout=30)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


# --------------------------------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m integration.zookeeper",
        description=f"Run a standalone Apache ZooKeeper {ZOOKEEPER_VERSION} on 127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=2181, help="client port (0 = any free port; default 2181)")
    parser.add_argument("--heap", default="256m", help="JVM max heap (default 256m)")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="keep config, data and log here across runs (default: a temp dir)"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="start-up timeout in seconds")
    args = parser.parse_args(argv)

    reason = missing_requirements()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    server = ZooKeeperServer(args.port, heap=args.heap, work_dir=args.data_dir, start_timeout=args.timeout)

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    print(f"Starting Apache ZooKeeper {ZOOKEEPER_VERSION} (standalone) ...", flush=True)
    try:
        server.start()
    except ZooKeeperError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        server.stop()
        return 130
    print(
        f"ZooKeeper ready in {server.startup_seconds:.1f}s\n"
        f"  hosts     = {server.hosts}\n"
        f"  store URI = {server.uri('/spyt/<query>')}\n"
        f"  log       = {server.log_path}\n"
        f"Press Ctrl-C to stop.",
        flush=True,
    )
    try:
        while server.is_running:
            time.sleep(0.5)
        print(f"error: ZooKeeper exited unexpectedly. Log tail:\n{server.log_tail()}", file=sys.stderr)
        server.stop()
        return 1
    except KeyboardInterrupt:
        print("\nStopping ZooKeeper ...", flush=True)
        server.stop()
        print("Stopped.", flush=True)
        return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
