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

import base64
import logging
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as `python integration/kafka_broker.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.java_server import (
    INSTALL_HINT,
    INTEGRATION_DIR,
    MIN_JAVA,
    JavaServer,
    JavaServerError,
    JavaServerUnavailableError,
    ServerOptions,
    find_java,
    free_ports,
    java_command,
    port_accepts,
    port_is_free,
    properties_text,
    run_in_foreground,
    server_argument_parser,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "INSTALL_HINT",
    "KAFKA_LIBS_DIR",
    "KAFKA_VERSION",
    "MIN_JAVA",
    "SPARK_KAFKA_LIBS_DIR",
    "KafkaBroker",
    "KafkaBrokerError",
    "KafkaUnavailableError",
    "find_java",
    "kafka_classpath",
    "kafka_tool_command",
    "missing_requirements",
    "spark_kafka_jars",
    "spark_kafka_line",
]

#: Must match ``kafka.version`` in integration/pom.xml.
KAFKA_VERSION = "4.3.1"

KAFKA_LIBS_DIR = INTEGRATION_DIR / "target" / "kafka-libs"
SPARK_KAFKA_LIBS_DIR = INTEGRATION_DIR / "target" / "spark-kafka-libs"

KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
NODE_ID = 1

#: Kept under their old names for callers that imported them from here (tests/contract/stores uses ``_free_ports``).
_free_ports = free_ports
_port_is_free = port_is_free
_props_text = properties_text

log = logging.getLogger(__name__)


class KafkaUnavailableError(JavaServerUnavailableError):
    """Java 17+ or the Kafka jars are missing: nothing is wrong with the code, the machine lacks a piece."""


class KafkaBrokerError(JavaServerError):
    """The broker failed to format its storage, to start, or died."""


# --------------------------------------------------------------------------------------------- discovery


def kafka_classpath(libs_dir: Path | str | None = None) -> list[Path]:
    """The broker's jars (sorted), or [] when Kafka's core jar is not there.

    For the default directory the core jar must be exactly ``kafka_2.13-KAFKA_VERSION.jar``, so that
    a stale install of another version asks for ``install.sh`` to be re-run."""
    return KafkaBroker.classpath(libs_dir)


def spark_kafka_jars(libs_dir: Path | str | None = None, for_spark: str | None = None) -> list[str]:
    """Jars to add to ``spark.jars`` for Spark's own JVM Kafka source (``format("kafka")``), or [].

    With ``for_spark`` (a PySpark version), also [] when the jars were built for a newer Spark line
    (:func:`spark_kafka_line`): 4.2's source needs classes PySpark 4.0 lacks
    (``org.apache.spark.sql.connector.read.streaming.SupportsRealTimeMode``), and on the classpath it fails every
    data source lookup of the session, ``format("ytqueue")`` included."""
    libs = Path(libs_dir) if libs_dir else SPARK_KAFKA_LIBS_DIR
    jars = [str(p) for p in sorted(libs.glob("*.jar"))] if libs.is_dir() else []
    built_for = spark_kafka_line(libs)
    if for_spark is not None and built_for is not None and _line(for_spark) < built_for:
        return []
    return jars


def _line(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def spark_kafka_line(libs_dir: Path | str | None = None) -> tuple[int, int] | None:
    """The Spark line (``(4, 2)``) of the installed ``spark-sql-kafka-0-10`` jar, from its name; None without one."""
    libs = Path(libs_dir) if libs_dir else SPARK_KAFKA_LIBS_DIR
    for jar in sorted(libs.glob("spark-sql-kafka-0-10_*.jar")) if libs.is_dir() else []:
        match = re.search(r"-(\d+\.\d+)\.\d+\.jar$", jar.name)
        if match:
            return _line(match.group(1))
    return None


def missing_requirements(libs_dir: Path | str | None = None) -> str | None:
    """Why a broker cannot be started here (for ``pytest.skip``), or None when it can."""
    return KafkaBroker.unmet_requirements(libs_dir)


def kafka_tool_command(
    main_class: str, *args: str, heap: str = "256m", libs_dir: Path | str | None = None
) -> list[str]:
    """argv running one of Kafka's command-line tools, e.g.
    ``kafka_tool_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--list")``
    or ``org.apache.kafka.tools.ProducerPerformance`` for a load test."""
    reason = missing_requirements(libs_dir)
    if reason:
        raise KafkaUnavailableError(reason)
    return java_command(kafka_classpath(libs_dir), main_class, *args, heap=heap, flags=["-Dlog4j2.level=WARN"])


# ------------------------------------------------------------------------------------------------ helpers


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


# ------------------------------------------------------------------------------------------------- broker


class KafkaBroker(JavaServer):
    """One single-node KRaft Kafka (broker + controller in one JVM) on 127.0.0.1.

    ``port``/``controller_port``: 0 or None picks free ports (and retries with new ones if another
    process grabs them in between). ``work_dir``: where config, data and ``broker.log`` go; by default a
    fresh temporary directory that ``stop()`` removes (a given ``work_dir`` is kept, and storage already
    formatted there is reused). ``config``: extra or overriding ``server.properties`` entries.
    """

    NAME = "Kafka broker"
    PORTS = ("port", "controller_port")
    LIBS_DIR = KAFKA_LIBS_DIR
    CORE_JAR = (f"kafka_2.13-{KAFKA_VERSION}.jar", "kafka_2.13-")
    JARS_DESCRIPTION = f"Kafka {KAFKA_VERSION} jars"
    LOG_FILE = "broker.log"
    WORK_DIR_PREFIX = "spyt-kafka-"
    LOG_TAIL_LINES = 60
    HEAP = "512m"
    STOP_TIMEOUT = 30.0
    Error = KafkaBrokerError
    UnavailableError = KafkaUnavailableError

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

    port: int
    controller_port: int

    def __init__(
        self, port: int | None = None, controller_port: int | None = None, **options: Unpack[ServerOptions]
    ) -> None:
        super().__init__({"port": port, "controller_port": controller_port}, **options)
        self.cluster_id: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"``; valid once ``start()`` returned."""
        if not self.port:
            raise KafkaBrokerError("the broker has not been started")
        return self.address

    def client_config(self, **overrides: object) -> dict[str, object]:
        """A confluent_kafka config dict pointing at this broker."""
        return {"bootstrap.servers": self.bootstrap_servers, **overrides}

    # -------------------------------------------------------------------------------------------- hooks

    def _server_properties(self) -> dict[str, object]:
        host, port, cport = self.host, self.port, self.controller_port
        own = {
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
        return self._merged_config(own)

    def _write_configs(self) -> None:
        assert self.work_dir is not None
        (self.work_dir / "server.properties").write_text(properties_text(self._server_properties()))
        (self.work_dir / "log4j2.properties").write_text(_LOG4J2.format(level=self.log_level))
        (self.work_dir / "log4j2-tools.properties").write_text(_LOG4J2.format(level="WARN"))

    def _jvm_flags(self, heap: str, log4j: str = "log4j2.properties") -> list[str]:
        assert self.work_dir is not None
        return [
            f"-Xms{heap if _heap_mb(heap) < 64 else '64m'}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35",
            "-XX:+ExplicitGCInvokesConcurrent",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Dlog4j2.shutdownHookEnabled=false",  # keep logging through Kafka's own shutdown hook
            f"-Dlog4j2.configurationFile={self.work_dir / log4j}",
            f"-Dkafka.logs.dir={self.work_dir}",
        ]

    def _prepare(self) -> None:
        """Format the storage (``StorageTool format``) unless a kept ``work_dir`` has it formatted already."""
        assert self.work_dir is not None and self.data_dir is not None
        meta = self.data_dir / "meta.properties"
        if meta.exists():  # a persistent work_dir formatted by an earlier run: keep its cluster id
            found = re.search(r"^cluster\.id=(\S+)", meta.read_text(), re.M)
            if found:
                self.cluster_id = found.group(1)
                return
        self.cluster_id = _new_cluster_id()
        config = str(self.work_dir / "server.properties")
        args = ("format", "--config", config, "--cluster-id", self.cluster_id)
        flags = self._jvm_flags("256m", log4j="log4j2-tools.properties")
        cmd = self._java_command(STORAGE_TOOL_MAIN, *args, heap="256m", flags=flags)
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        except subprocess.TimeoutExpired as err:
            raise KafkaBrokerError(f"formatting Kafka storage timed out: {err}") from None
        if res.returncode != 0:
            out = "\n".join((res.stdout + res.stderr).strip().splitlines()[:25])
            raise KafkaBrokerError(f"formatting Kafka storage failed (exit {res.returncode}):\n{out}")

    def _command(self) -> list[str]:
        assert self.work_dir is not None
        return self._java_command(KAFKA_MAIN, str(self.work_dir / "server.properties"))

    def _readiness_probe(self) -> Callable[[float], str | None]:
        """Ready once a confluent-kafka AdminClient sees the broker in its metadata."""
        try:
            from confluent_kafka.admin import AdminClient
        except ImportError:  # pragma: no cover - confluent-kafka is a project dependency
            AdminClient = None
        admin = None

        def probe(remaining: float) -> str | None:
            nonlocal admin
            if not port_accepts(self.host, self.port):
                return "port not open yet"
            if AdminClient is None:
                return None
            if admin is None:
                admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "logger": _quiet_librdkafka_logger()})
            try:
                md = admin.list_topics(timeout=max(0.5, min(5.0, remaining)))
            except Exception as err:  # KafkaException while the broker is still fenced/starting
                return str(err)
            return None if md.brokers else "no broker registered in metadata yet"

        return probe


# --------------------------------------------------------------------------------------------------- CLI


def _parse_kv(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def parse_topic(spec: str) -> tuple[str, int]:
    """``NAME`` or ``NAME:PARTITIONS`` (the ``--topic`` argument) as (name, partitions)."""
    name, sep, count = spec.partition(":")
    if not name.strip() or (sep and not count.strip().isdigit()) or (sep and int(count) < 1):
        raise SystemExit(f"--topic expects NAME or NAME:PARTITIONS (a positive number), got {spec!r}")
    return name.strip(), int(count) if sep else 1


def create_topics(bootstrap_servers: str, topics: Sequence[tuple[str, int]], timeout: float = 30.0) -> None:
    """Create each (name, partitions) topic on the broker; a topic that already exists is left as it is."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers, "logger": _quiet_librdkafka_logger()})
    new = [NewTopic(name, partitions, 1) for name, partitions in topics]
    futures = admin.create_topics(new, request_timeout=timeout)
    for name, future in futures.items():
        try:
            future.result(timeout)
        except KafkaException as err:
            if err.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise RuntimeError(f"could not create topic {name!r}: {err.args[0].str()}") from err


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m integration.kafka_broker``: one broker in the foreground until Ctrl-C; the exit status."""
    description = f"Run a single-node Apache Kafka {KAFKA_VERSION} (KRaft) on 127.0.0.1 until Ctrl-C."
    parser = server_argument_parser("python integration/kafka_broker.py", description, port=9092, heap="512m")
    parser.add_argument("--controller-port", type=int, default=0, help="KRaft controller port (default: any free port)")
    parser.add_argument(
        "--set",
        dest="config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra server.properties entry (repeatable), e.g. --set num.partitions=4",
    )
    parser.add_argument(
        "--topic",
        dest="topics",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="create this topic once the broker is up (repeatable; topics are not auto-created), e.g. --topic events:4",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="echo the broker log to stdout")
    args = parser.parse_args(argv)
    topics = [parse_topic(spec) for spec in args.topics]

    if args.data_dir and not args.controller_port:
        args.controller_port = args.port + 1 if args.port else 0
    broker = KafkaBroker(
        args.port,
        args.controller_port,
        config=_parse_kv(args.config),
        heap=args.heap,
        work_dir=args.data_dir,
        start_timeout=args.timeout,
    )

    def describe() -> str:
        return (
            f"  bootstrap.servers = {broker.bootstrap_servers}\n"
            f"  controller        = {broker.host}:{broker.controller_port}\n"
            f"  cluster id        = {broker.cluster_id}\n"
            f"  log               = {broker.log_path}"
        )

    banner = f"Starting Apache Kafka {KAFKA_VERSION} (KRaft, single node) ..."

    def on_ready() -> None:
        if topics:
            create_topics(broker.bootstrap_servers, topics)

    def describe_with_topics() -> str:
        made = "".join(f"\n  topic             = {name} ({count} partitions)" for name, count in topics)
        return describe() + made

    return run_in_foreground(broker, banner, describe_with_topics, echo_log=args.verbose, on_ready=on_ready)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
