"""A real, single-node Apache Kafka broker (KRaft, combined broker + controller) for tests and local use.

The jars come from Maven Central through ``integration/install.sh`` (into ``integration/target/kafka-libs``);
the broker runs as a plain ``java -cp <jars> kafka.Kafka server.properties`` child process, bound to
127.0.0.1 only, with its config, data and log in a temporary directory that is removed on ``stop()``.

    from integration.kafka_broker import KafkaBroker

    with KafkaBroker() as broker:
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})

From a shell (foreground, Ctrl-C to stop)::

    python integration/kafka_broker.py --port 9092
    python -m integration.kafka_broker --port 0        # any free port
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import functools
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "KAFKA_LIBS_DIR",
    "KAFKA_VERSION",
    "SPARK_KAFKA_LIBS_DIR",
    "KafkaBroker",
    "KafkaBrokerError",
    "KafkaUnavailableError",
    "find_java",
    "kafka_classpath",
    "kafka_tool_command",
    "missing_requirements",
    "spark_kafka_jars",
]

#: Must match ``kafka.version`` in integration/pom.xml.
KAFKA_VERSION = "4.3.1"
MIN_JAVA = 17

INTEGRATION_DIR = Path(__file__).resolve().parent
KAFKA_LIBS_DIR = INTEGRATION_DIR / "target" / "kafka-libs"
SPARK_KAFKA_LIBS_DIR = INTEGRATION_DIR / "target" / "spark-kafka-libs"
INSTALL_HINT = "run integration/install.sh (needs Java 17+ and Maven; fetches the jars from Maven Central)"

KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
NODE_ID = 1

log = logging.getLogger(__name__)


class KafkaUnavailableError(RuntimeError):
    """Java 17+ or the Kafka jars are missing: nothing is wrong with the code, the machine lacks a piece."""


class KafkaBrokerError(RuntimeError):
    """The broker failed to format its storage, to start, or died."""


# --------------------------------------------------------------------------------------------- discovery


@functools.lru_cache(maxsize=8)
def _java_major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" style -> 8


def find_java() -> str | None:
    """Path of a ``java`` of version 17+: ``$JAVA_HOME/bin/java`` first, then ``java`` on PATH."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    for java in candidates:
        if os.access(java, os.X_OK) and (_java_major(java) or 0) >= MIN_JAVA:
            return java
    return None


def kafka_classpath(libs_dir: Path | str | None = None) -> list[Path]:
    """The broker's jars (sorted), or [] when Kafka's core jar is not there.

    For the default directory the core jar must be exactly ``kafka_2.13-KAFKA_VERSION.jar``, so that
    a stale install of another version asks for ``install.sh`` to be re-run."""
    libs = Path(libs_dir) if libs_dir else KAFKA_LIBS_DIR
    jars = sorted(libs.glob("*.jar")) if libs.is_dir() else []
    core = f"kafka_2.13-{KAFKA_VERSION}.jar" if libs_dir is None else "kafka_2.13-"
    return jars if any(j.name.startswith(core) for j in jars) else []


def spark_kafka_jars(libs_dir: Path | str | None = None) -> list[str]:
    """Jars to add to ``spark.jars`` for Spark's own JVM Kafka source (``format("kafka")``), or []."""
    libs = Path(libs_dir) if libs_dir else SPARK_KAFKA_LIBS_DIR
    return [str(p) for p in sorted(libs.glob("*.jar"))] if libs.is_dir() else []


def missing_requirements(libs_dir: Path | str | None = None) -> str | None:
    """Why a broker cannot be started here (for ``pytest.skip``), or None when it can."""
    if find_java() is None:
        return f"no Java {MIN_JAVA}+ found (JAVA_HOME or PATH); {INSTALL_HINT}"
    if not kafka_classpath(libs_dir):
        where = Path(libs_dir) if libs_dir else KAFKA_LIBS_DIR
        return f"Kafka {KAFKA_VERSION} jars not found in {where}; {INSTALL_HINT}"
    return None


def kafka_tool_command(
    main_class: str, *args: str, heap: str = "256m", libs_dir: Path | str | None = None
) -> list[str]:
    """argv running one of Kafka's command-line tools, e.g.
    ``kafka_tool_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--list")``
    or ``org.apache.kafka.tools.ProducerPerformance`` for a load test."""
    reason = missing_requirements(libs_dir)
    if reason:
        raise KafkaUnavailableError(reason)
    cp = os.pathsep.join(str(j) for j in kafka_classpath(libs_dir))
    return [find_java() or "java", f"-Xmx{heap}", "-Dlog4j2.level=WARN", "-cp", cp, main_class, *args]


# ------------------------------------------------------------------------------------------------ helpers


def _free_ports(count: int, host: str) -> list[int]:
    """``count`` distinct free TCP ports on ``host`` (held open together so they differ)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _port_accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _heap_mb(heap: str) -> float:
    """JVM size string ("512m", "1g", "65536k", "1073741824") in MiB."""
    match = re.fullmatch(r"(\d+)([kKmMgG]?)", heap.strip())
    if not match:
        raise ValueError(f"not a JVM heap size: {heap!r}")
    scale = {"": 1 / 1024 / 1024, "k": 1 / 1024, "m": 1, "g": 1024}[match.group(2).lower()]
    return int(match.group(1)) * scale


def _new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (what ``random-uuid`` prints)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):  # would look like an option to the storage tool
            return cid


def _props_text(props: Mapping[str, object]) -> str:
    def fmt(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v).replace("\\", "\\\\")

    return "".join(f"{k}={fmt(v)}\n" for k, v in props.items())


_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
"""


def _quiet_librdkafka_logger() -> logging.Logger:
    """librdkafka reports every refused connection while the broker boots; keep that out of the output."""
    logger = logging.getLogger(f"{__name__}.librdkafka")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


_PR_SET_PDEATHSIG = 1


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def _die_with_parent_preexec():
    """On Linux: SIGKILL the broker if the Python process dies without stopping it (e.g. kill -9)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = _libc()  # resolved in the parent: nothing is imported or loaded after fork()
    if libc is None:
        return None

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return preexec


_RUNNING: weakref.WeakSet[KafkaBroker] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for broker in list(_RUNNING):
        with contextlib.suppress(Exception):
            broker.stop()


# ------------------------------------------------------------------------------------------------- broker


class KafkaBroker:
    """One single-node KRaft Kafka (broker + controller in one JVM) on 127.0.0.1.

    ``port``/``controller_port``: 0 or None picks free ports (and retries with new ones if another
    process grabs them in between). ``work_dir``: where config, data and ``broker.log`` go; by default a
    fresh temporary directory that ``stop()`` removes (a given ``work_dir`` is kept, and storage already
    formatted there is reused). ``config``: extra or overriding ``server.properties`` entries.
    """

    #: server.properties entries besides listeners/ports/dirs; ``config=`` overrides any of them.
    DEFAULT_CONFIG: Mapping[str, object] = {
        "num.partitions": 1,
        "default.replication.factor": 1,
        "min.insync.replicas": 1,
        "auto.create.topics.enable": False,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 4,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 4,
        "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1,
        "group.initial.rebalance.delay.ms": 0,
        # retention: tests that wait for records to be deleted must not wait minutes
        "log.retention.check.interval.ms": 1000,
        "log.segment.delete.delay.ms": 0,
        "log.initial.task.delay.ms": 0,
        "delete.topic.enable": True,
    }

    def __init__(
        self,
        port: int | None = None,
        controller_port: int | None = None,
        *,
        host: str = "127.0.0.1",
        config: Mapping[str, object] | None = None,
        heap: str = "512m",
        work_dir: Path | str | None = None,
        libs_dir: Path | str | None = None,
        java: str | None = None,
        start_timeout: float = 60.0,
        stop_timeout: float = 30.0,
        log_level: str = "INFO",
        jvm_options: Sequence[str] = (),
    ) -> None:
        self.host = host
        self._want_port = port or 0
        self._want_controller_port = controller_port or 0
        self.port = self._want_port
        self.controller_port = self._want_controller_port
        self.extra_config = dict(config or {})
        self.heap = heap
        self._given_work_dir = Path(work_dir) if work_dir else None
        self.work_dir: Path | None = None
        self.libs_dir = Path(libs_dir) if libs_dir else None
        self._java = java
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.log_level = log_level
        self.jvm_options = list(jvm_options)
        self.cluster_id: str | None = None
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file = None

    # ---------------------------------------------------------------------------------------- properties

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"``; valid once ``start()`` returned."""
        if not self.port:
            raise KafkaBrokerError("the broker has not been started")
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        return self.work_dir / "broker.log" if self.work_dir else None

    @property
    def data_dir(self) -> Path | None:
        return self.work_dir / "data" if self.work_dir else None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def client_config(self, **overrides: object) -> dict[str, object]:
        """A confluent_kafka config dict pointing at this broker."""
        return {"bootstrap.servers": self.bootstrap_servers, **overrides}

    def log_tail(self, lines: int = 60) -> str:
        path = self.log_path
        if not path or not path.exists():
            return "(no broker log)"
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 256 * 1024))
            text = f.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def _log_mentions(self, *needles: str) -> bool:
        path = self.log_path
        if not path or not path.exists():
            return False
        text = path.read_text(encoding="utf-8", errors="replace")
        return any(n in text for n in needles)

    def _failure_report(self) -> str:
        """The broker log's first ERROR/FATAL lines (the cause, usually) and its tail."""
        path = self.log_path
        errors: list[str] = []
        if path and path.exists():
            with path.open("r", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if " ERROR " in line or " FATAL " in line:
                        errors.append(line.rstrip())
                        if len(errors) >= 8:
                            break
        first = ("First errors:\n" + "\n".join(errors) + "\n") if errors else ""
        return f"{first}Log tail ({path}):\n{self.log_tail(40)}"

    # ----------------------------------------------------------------------------------------- lifecycle

    def __enter__(self) -> KafkaBroker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> KafkaBroker:
        """Format storage, launch the JVM and wait until the broker answers metadata requests."""
        if self.is_running:
            return self
        reason = missing_requirements(self.libs_dir)
        if reason:
            raise KafkaUnavailableError(reason)
        java = self._java or find_java()
        assert java is not None
        t0 = time.monotonic()
        auto_ports = not self._want_port or not self._want_controller_port
        attempts = 3 if auto_ports else 1
        for attempt in range(1, attempts + 1):
            try:
                self._prepare_work_dir()
                self._pick_ports()
                self._write_configs()
                self._format_storage(java)
                self._launch(java)
                self._wait_ready(t0 + self.start_timeout)
            except KafkaBrokerError:
                port_clash = self._log_mentions("Address already in use", "BindException")
                if attempt < attempts and port_clash:
                    log.warning("Kafka port clash (%s/%s), retrying on new ports", self.port, self.controller_port)
                    self._terminate()
                    self._cleanup_work_dir()
                    continue
                self.stop()
                raise
            except BaseException:  # KeyboardInterrupt, OSError, ...: leave no process or directory behind
                self.stop()
                raise
            break
        self.startup_seconds = time.monotonic() - t0
        _RUNNING.add(self)
        log.info(
            "Kafka %s up at %s in %.1fs (pid %s, dir %s)",
            KAFKA_VERSION,
            self.bootstrap_servers,
            self.startup_seconds,
            self.pid,
            self.work_dir,
        )
        return self

    def stop(self) -> None:
        """SIGTERM (clean shutdown), SIGKILL after ``stop_timeout`` s, then remove the temporary directory."""
        self._terminate()
        _RUNNING.discard(self)
        self._cleanup_work_dir()

    # ------------------------------------------------------------------------------------------ internals

    def _prepare_work_dir(self) -> None:
        if self._given_work_dir is not None:
            self.work_dir = self._given_work_dir
            self.work_dir.mkdir(parents=True, exist_ok=True)
        elif self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix="spyt-kafka-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def _pick_ports(self) -> None:
        for p in (self._want_port, self._want_controller_port):
            if p and not _port_is_free(self.host, p):
                raise KafkaBrokerError(f"{self.host}:{p} is already in use (use port 0 for a free one)")
        want = [self._want_port, self._want_controller_port]
        free = iter(_free_ports(want.count(0), self.host))
        self.port, self.controller_port = (p or next(free) for p in want)
        if self.port == self.controller_port:
            raise KafkaBrokerError(f"port and controller_port are both {self.port}")

    def _server_properties(self) -> dict[str, object]:
        host, port, cport = self.host, self.port, self.controller_port
        props: dict[str, object] = {
            "process.roles": "broker,controller",
            "node.id": NODE_ID,
            "controller.quorum.voters": f"{NODE_ID}@{host}:{cport}",
            "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{cport}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
        }
        props.update(self.DEFAULT_CONFIG)
        props.update(self.extra_config)
        return props

    def _write_configs(self) -> None:
        assert self.work_dir is not None
        (self.work_dir / "server.properties").write_text(_props_text(self._server_properties()))
        (self.work_dir / "log4j2.properties").write_text(_LOG4J2.format(level=self.log_level))
        (self.work_dir / "log4j2-tools.properties").write_text(_LOG4J2.format(level="WARN"))

    def _jvm_base(self, java: str, heap: str, log4j: str = "log4j2.properties") -> list[str]:
        assert self.work_dir is not None
        cp = os.pathsep.join(str(j) for j in kafka_classpath(self.libs_dir))
        return [
            java,
            f"-Xms{heap if _heap_mb(heap) < 64 else '64m'}",
            f"-Xmx{heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35",
            "-XX:+ExplicitGCInvokesConcurrent",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Dlog4j2.shutdownHookEnabled=false",  # keep logging through Kafka's own shutdown hook
            f"-Dlog4j2.configurationFile={self.work_dir / log4j}",
            f"-Dkafka.logs.dir={self.work_dir}",
            *self.jvm_options,
            "-cp",
            cp,
        ]

    def _format_storage(self, java: str) -> None:
        assert self.work_dir is not None and self.data_dir is not None
        meta = self.data_dir / "meta.properties"
        if meta.exists():  # a persistent work_dir formatted by an earlier run: keep its cluster id
            found = re.search(r"^cluster\.id=(\S+)", meta.read_text(), re.M)
            if found:
                self.cluster_id = found.group(1)
                return
        self.cluster_id = _new_cluster_id()
        cmd = [
            *self._jvm_base(java, "256m", log4j="log4j2-tools.properties"),
            STORAGE_TOOL_MAIN,
            "format",
            "--config",
            str(self.work_dir / "server.properties"),
            "--cluster-id",
            self.cluster_id,
        ]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        except subprocess.TimeoutExpired as err:
            raise KafkaBrokerError(f"formatting Kafka storage timed out: {err}") from None
        if res.returncode != 0:
            out = "\n".join((res.stdout + res.stderr).strip().splitlines()[:25])
            raise KafkaBrokerError(f"formatting Kafka storage failed (exit {res.returncode}):\n{out}")

    def _launch(self, java: str) -> None:
        assert self.work_dir is not None
        cmd = [*self._jvm_base(java, self.heap), KAFKA_MAIN, str(self.work_dir / "server.properties")]
        (self.work_dir / "command.txt").write_text(" ".join(cmd) + "\n")
        self._log_file = open(self.log_path, "ab")
        # PDEATHSIG is tied to the forking *thread*: only use it from the main thread.
        preexec = _die_with_parent_preexec() if threading.current_thread() is threading.main_thread() else None
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            cwd=self.work_dir,
            start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop the broker cleanly
            preexec_fn=preexec,
        )

    def _wait_ready(self, deadline: float) -> None:
        try:
            from confluent_kafka.admin import AdminClient
        except ImportError:  # pragma: no cover - confluent-kafka is a project dependency
            AdminClient = None
        admin = None
        last_error: object = None
        while True:
            assert self._proc is not None
            rc = self._proc.poll()
            if rc is not None:
                raise KafkaBrokerError(f"Kafka broker exited with code {rc} during start-up. {self._failure_report()}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaBrokerError(
                    f"Kafka broker at {self.bootstrap_servers} not ready after {self.start_timeout:.0f}s "
                    f"(last error: {last_error}). {self._failure_report()}"
                )
            if not _port_accepts(self.host, self.port):
                time.sleep(0.1)
                continue
            if AdminClient is None:
                return
            if admin is None:
                admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "logger": _quiet_librdkafka_logger()})
            try:
                md = admin.list_topics(timeout=max(0.5, min(5.0, remaining)))
                if md.brokers:
                    return
                last_error = "no broker registered in metadata yet"
            except Exception as err:  # KafkaException while the broker is still fenced/starting
                last_error = err
            time.sleep(0.1)

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                log.warning("Kafka broker pid %s ignored SIGTERM for %ss; killing it", proc.pid, self.stop_timeout)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(timeout=30)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _cleanup_work_dir(self) -> None:
        """Remove our own temporary directory; a caller-given ``work_dir`` is left as it is."""
        if self.work_dir is not None and self._given_work_dir is None:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None


# --------------------------------------------------------------------------------------------------- CLI


def _parse_kv(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python integration/kafka_broker.py",
        description=f"Run a single-node Apache Kafka {KAFKA_VERSION} (KRaft) on 127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=9092, help="client port (0 = any free port; default 9092)")
    parser.add_argument("--controller-port", type=int, default=0, help="KRaft controller port (default: any free port)")
    parser.add_argument("--heap", default="512m", help="JVM max heap (default 512m)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep config, data and log here across runs (default: a temp dir, deleted on exit)",
    )
    parser.add_argument(
        "--set",
        dest="config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra server.properties entry (repeatable), e.g. --set num.partitions=4",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="start-up timeout in seconds")
    parser.add_argument("-v", "--verbose", action="store_true", help="echo the broker log to stdout")
    args = parser.parse_args(argv)

    if args.data_dir and not args.controller_port:
        args.controller_port = args.port + 1 if args.port else 0
    reason = missing_requirements()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2

    broker = KafkaBroker(
        args.port,
        args.controller_port,
        config=_parse_kv(args.config),
        heap=args.heap,
        work_dir=args.data_dir,
        start_timeout=args.timeout,
    )

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    print(f"Starting Apache Kafka {KAFKA_VERSION} (KRaft, single node) ...", flush=True)
    try:
        broker.start()
    except KafkaBrokerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        broker.stop()
        return 130
    print(
        f"Kafka ready in {broker.startup_seconds:.1f}s\n"
        f"  bootstrap.servers = {broker.bootstrap_servers}\n"
        f"  controller        = {broker.host}:{broker.controller_port}\n"
        f"  cluster id        = {broker.cluster_id}\n"
        f"  log               = {broker.log_path}\n"
        f"Press Ctrl-C to stop.",
        flush=True,
    )
    offset = broker.log_path.stat().st_size if args.verbose and broker.log_path else 0
    try:
        while broker.is_running:
            if args.verbose and broker.log_path:
                with broker.log_path.open("rb") as f:
                    f.seek(offset)
                    chunk = f.read()
                    offset += len(chunk)
                if chunk:
                    sys.stdout.write(chunk.decode("utf-8", "replace"))
                    sys.stdout.flush()
            time.sleep(0.5)
        print(f"error: the broker exited unexpectedly. Log tail:\n{broker.log_tail()}", file=sys.stderr)
        broker.stop()
        return 1
    except KeyboardInterrupt:
        print("\nStopping Kafka ...", flush=True)
        broker.stop()
        print("Stopped.", flush=True)
        return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
