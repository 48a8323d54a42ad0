"""The chaos harness shared by ``tests/chaos/`` (a short run in CI) and ``bench/chaos.py`` (a long, parameterised one).

It starts its own servers on 127.0.0.1 (an embedded YT server on a data directory, a Kafka broker on a kept work
directory and fixed ports, a ZooKeeper), creates one YT queue and one Kafka topic that every pipeline reads, and a
producer thread that keeps writing numbered ids into both, recording which writes were acknowledged. A streaming
driver subprocess (:mod:`tests.chaos.driver`) runs every pipeline as one query. Then, ``kills`` times, once every
pipeline has committed a new batch and after a random pause, one of these happens:

* ``driver``: the driver's process group gets SIGKILL; it is restarted from its checkpoints;
* ``driver-fresh`` (once): the same, then every checkpoint is deleted: the restart resumes from the committed store
  (the YT consumer, the Kafka group, ZooKeeper);
* ``yt-server``: the embedded YT server gets SIGKILL and is restarted on the same data directory and port (queries
  that fail under it are restarted by the driver from their checkpoints);
* ``kafka-broker``: the broker's process group gets SIGKILL and it is restarted on its data and ports;
* ``executor`` (with ``executor_kills``): the drivers run on a Spark standalone cluster on 127.0.0.1 (one master, two
  workers of one core: :mod:`integration.spark_cluster`); once a batch is in flight (a query logged its offsets but
  not its commit), one executor JVM (``CoarseGrainedExecutorBackend`` under one of that cluster's workers) and its
  Python workers get SIGKILL: Spark retries the tasks on the other executor while the worker launches a new one (a
  transactional batch refuses the retried task: the batch fails, its transaction is aborted, and the driver restarts
  the query, which replays it);
* ``worker`` (with ``worker_kills``): the same, but a whole worker (its JVM, executors and Python workers) gets
  SIGKILL; it is started again after a pause.

At the end the producer stops and the running queries catch up: ``committed_at_end`` says whether every store came to
hold its source's end within ``drain_timeout_s``. Then the drivers are killed and each pipeline's target is compared
with its source: ``lost`` counts source rows absent from the target, ``duplicated`` target rows beyond their count in
the source (ids are never reused, so an id appears once in a source unless a client retried a write). Each server's
acknowledged writes must all be in its source after the kills.

A pipeline is one entry of :data:`PIPELINES`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "driver.py"

EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"

SERVICE_TABLET = "__spyt_streaming_src_tablet_index"
SERVICE_ROW = "__spyt_streaming_src_row_index"
QUEUE = "//tmp/chaos/queue"
TABLETS = 2
ZK_GROUP = "chaos-zk"

#: Column lists of the targets: a sorted one keyed by the source coordinates, an ordered one with them as data, and
#: the ordered target of producer sessions (the sink takes the coordinates as session sequence numbers).
SORTED_TARGET = [
    ("src_partition", "int64", "ascending"),
    ("src_offset", "int64", "ascending"),
    ("id", "int64", None),
    ("payload", "string", None),
]
ORDERED_TARGET = [("src_partition", "int64", None), ("src_offset", "int64", None), ("id", "int64", None)]
PRODUCER_TARGET = [("id", "int64", None), ("payload", "string", None)]

YT_SELECT = (f"{SERVICE_TABLET} AS src_partition", f"{SERVICE_ROW} AS src_offset", "id", "payload")
KAFKA_SELECT = (
    "cast(partition AS bigint) AS src_partition",
    "offset AS src_offset",
    "cast(cast(value AS string) AS bigint) AS id",
    "cast(value AS string) AS payload",
)


@dataclass(frozen=True)
class Pipeline:
    """One source -> sink pipeline under chaos.

    ``source``: ``yt`` (the chaos queue) or ``kafka`` (the chaos topic); ``store``: where positions are committed
    (``consumer``, ``group`` or ``zookeeper``); ``target``: columns ``(name, type, sort_order)`` of the YT table
    written (sorted when a column has a sort order); ``select``: the query's ``selectExpr``; ``writer``: extra sink
    options (``{producer}`` and ``{consumer}`` are replaced with the pipeline's producer table and consumer);
    ``guarantee``: what the run must show.
    """

    name: str
    source: str
    store: str
    target: Sequence[tuple[str, str, str | None]]
    select: Sequence[str]
    guarantee: str
    writer: dict[str, str] = field(default_factory=dict)
    reader: dict[str, str] = field(default_factory=dict)
    needs_producer: bool = False


PIPELINES: dict[str, Pipeline] = {
    p.name: p
    for p in (
        Pipeline("yt-sorted-idempotent", "yt", "consumer", SORTED_TARGET, YT_SELECT, EXACTLY_ONCE),
        Pipeline(
            "yt-producer-sessions",
            "yt",
            "consumer",
            PRODUCER_TARGET,
            (SERVICE_TABLET, SERVICE_ROW, "id", "payload"),
            EXACTLY_ONCE,
            writer={"producer_path": "{producer}"},
            needs_producer=True,
        ),
        Pipeline("kafka-sorted-idempotent", "kafka", "group", SORTED_TARGET, KAFKA_SELECT, EXACTLY_ONCE),
        Pipeline(
            "yt-transactional",
            "yt",
            "consumer",
            PRODUCER_TARGET,
            ("id", "payload"),
            EXACTLY_ONCE,
            writer={"transactional": "true", "consumer_path": "{consumer}"},
        ),
        Pipeline("yt-zookeeper-at-least-once", "yt", "zookeeper", ORDERED_TARGET, YT_SELECT[:3], AT_LEAST_ONCE),
    )
}


@dataclass
class ChaosConfig:
    """Parameters of one run. ``kills``: chaos events in all; ``rows``: ids the producer writes into each source
    (at least; it goes on slowly while events remain); ``seconds``: how long writing ``rows`` takes."""

    work_dir: Path
    kills: int = 4
    rows: int = 2000
    seconds: float = 40.0
    pipelines: Sequence[str] = tuple(PIPELINES)
    seed: int | None = None
    max_rows_per_partition: int = 400
    trigger_ms: int = 2000
    max_pause_s: float = 3.0
    #: Seconds a pipeline gets to commit after an event (a restarted query may need several new Python workers).
    progress_timeout_s: float = 420.0
    #: Seconds the queries get to catch up with the source once the producer stopped.
    drain_timeout_s: float = 600.0
    max_query_restarts: int = 200
    #: ``executor`` and ``worker`` events (besides the ``kills`` above); either makes the drivers run on a standalone
    #: cluster: ``cluster`` when given (a started :class:`integration.spark_cluster.SparkStandaloneCluster`, kept
    #: running), else one the run starts and stops.
    executor_kills: int = 0
    worker_kills: int = 0
    cluster: Any = None
    #: Seconds an ``executor``/``worker`` event waits for a batch in flight before it kills anyway.
    mid_batch_wait_s: float = 60.0
    #: Queries per driver process. On a heavily loaded machine (load average 20+ on 2 cores) a Python streaming
    #: source started in a driver where another query already ran often failed to start (Spark gives its runner a
    #: fixed 10 s to connect back), so each pipeline gets its own driver by default; on a normally loaded machine all
    #: pipelines share one driver fine, which the CI test does (one JVM restart per event instead of five).
    queries_per_driver: int = 1
    log: Callable[[str], None] = print


@dataclass
class PipelineResult:
    """What one pipeline showed at the end of a run."""

    name: str
    guarantee: str
    kills: int
    rows: int
    lost: int
    duplicated: int
    committed_at_end: bool

    def line(self) -> str:
        """The one-line summary: ``pipeline=... kills=... rows=... lost=... duplicated=... committed_at_end=...``."""
        return (
            f"pipeline={self.name} kills={self.kills} rows={self.rows} lost={self.lost} "
            f"duplicated={self.duplicated} committed_at_end={str(self.committed_at_end).lower()} "
            f"guarantee={self.guarantee}"
        )

    @property
    def holds(self) -> bool:
        """Whether the pipeline kept its guarantee: nothing lost, nothing twice if exactly-once, store at the end."""
        return self.lost == 0 and self.committed_at_end and (self.guarantee != EXACTLY_ONCE or self.duplicated == 0)


@dataclass
class ServerResult:
    """Acknowledged writes of one source server that are missing after its kills."""

    name: str
    kills: int
    acknowledged: int
    lost_acknowledged: int

    def line(self) -> str:
        """``server=... kills=... acknowledged=... lost_acknowledged=...``."""
        return (
            f"server={self.name} kills={self.kills} acknowledged={self.acknowledged} "
            f"lost_acknowledged={self.lost_acknowledged}"
        )


@dataclass
class ChaosReport:
    """Every result of a run, the events applied and the driver's unplanned query restarts."""

    pipelines: list[PipelineResult]
    servers: list[ServerResult]
    events: list[str]
    query_restarts: int
    seconds: float
    #: Executors the drivers reported lost (``Lost executor`` in their logs): at least one per executor/worker kill.
    executors_lost: int = 0

    def lines(self) -> list[str]:
        """The printed summary, one line per pipeline and per server, then the run's totals."""
        counts = Counter(self.events)
        summary = " ".join(f"{kind}={counts[kind]}" for kind in sorted(counts))
        return [
            *(p.line() for p in self.pipelines),
            *(s.line() for s in self.servers),
            f"events {summary} query_restarts={self.query_restarts} executors_lost={self.executors_lost} "
            f"seconds={self.seconds:.0f}",
        ]

    @property
    def ok(self) -> bool:
        """Every pipeline kept its guarantee and no server lost an acknowledged write."""
        return all(p.holds for p in self.pipelines) and all(s.lost_acknowledged == 0 for s in self.servers)


def missing_requirements(pipelines: Iterable[str]) -> str | None:
    """Why the servers these pipelines need cannot start here, or None."""
    chosen = [PIPELINES[name] for name in pipelines]
    if any(p.source == "kafka" for p in chosen):
        from integration.kafka_broker import missing_requirements as kafka_missing

        if reason := kafka_missing():
            return reason
    if any(p.store == "zookeeper" for p in chosen):
        from integration.zookeeper import missing_requirements as zk_missing

        if reason := zk_missing():
            return reason
    return None


def event_plan(
    kills: int, with_kafka: bool, rng: random.Random, executor_kills: int = 0, worker_kills: int = 0
) -> list[str]:
    """``kills`` events: driver kills, YT server kills and broker restarts in turn, plus ``executor_kills``
    ``executor`` and ``worker_kills`` ``worker`` events, shuffled, with the second driver kill (or the only one)
    deleting the checkpoints."""
    cycle = ["driver", "yt-server", "kafka-broker", "driver"] if with_kafka else ["driver", "yt-server"]
    plan = [cycle[i % len(cycle)] for i in range(kills)] + ["executor"] * executor_kills + ["worker"] * worker_kills
    rng.shuffle(plan)
    drivers = [i for i, kind in enumerate(plan) if kind == "driver"]
    if drivers:
        plan[drivers[min(1, len(drivers) - 1)]] = "driver-fresh"
    return plan


# ------------------------------------------------------------------------------------------------------ servers


class Servers:
    """The harness's own servers: an embedded YT server, and a Kafka broker and a ZooKeeper when needed."""

    def __init__(self, work_dir: Path, kafka: bool, zookeeper: bool, spark_cluster: bool = False) -> None:
        from spyt_queue.local import LocalYtServer

        self.yt = LocalYtServer(data_dir=work_dir / "yt")
        self.kafka = None
        self.zookeeper = None
        #: A standalone Spark cluster of the run's own (started and stopped with the servers).
        self.spark_cluster = None
        if spark_cluster:
            from integration.spark_cluster import SparkStandaloneCluster

            self.spark_cluster = SparkStandaloneCluster(workers=2, cores=1, work_dir=work_dir / "spark-cluster")
        if kafka:
            from integration.java_server import free_ports
            from integration.kafka_broker import KafkaBroker

            port, controller = free_ports(2, "127.0.0.1")
            self.kafka = KafkaBroker(port, controller, work_dir=work_dir / "kafka", log_level="WARN")
        if zookeeper:
            from integration.zookeeper import ZooKeeperServer

            self.zookeeper = ZooKeeperServer(work_dir=work_dir / "zookeeper", log_level="WARN")

    def start(self) -> None:
        """Start every server (the YT server first)."""
        self.yt.start()
        for server in (self.kafka, self.zookeeper, self.spark_cluster):
            if server is not None:
                server.start()

    def stop(self) -> None:
        """Stop every server; errors are ignored (the run is over)."""
        for server in (self.spark_cluster, self.zookeeper, self.kafka, self.yt):
            if server is not None:
                with contextlib.suppress(Exception):
                    server.stop()

    def kill_yt(self, pause: float) -> None:
        """SIGKILL the YT server, wait ``pause`` seconds, start it again on the same data directory and port."""
        self.yt.kill()
        time.sleep(pause)
        self.yt.start()

    def kill_kafka(self, pause: float) -> None:
        """SIGKILL the broker's process group, wait ``pause`` seconds, start it again on its data and ports."""
        assert self.kafka is not None and self.kafka.pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.kafka.pid, signal.SIGKILL)
        self.kafka.stop()  # reaps the process; a given work_dir is kept
        time.sleep(pause)
        self.kafka.start()


# ----------------------------------------------------------------------------------------------------- producer


class Producer(threading.Thread):
    """Writes ids ``0, 1, 2, ...`` into the YT queue (``$tablet_index = id % 2``) and the Kafka topic
    (``partition = id % 2``) at ``rows / seconds`` per second, then, while ``keep_going()`` holds, a trickle.
    Records the acknowledged ids of each. A failed YT write is not retried (its ids may or may not be there)."""

    def __init__(self, proxy: str, bootstrap: str | None, topic: str, rows: int, seconds: float) -> None:
        super().__init__(name="chaos-producer", daemon=True)
        from spyt_queue.yt.client import make_yt_client

        no_retries = {"proxy": {"retries": {"enable": False}, "connect_timeout": 2000, "request_timeout": 10000}}
        self.yt = make_yt_client(proxy, config={**no_retries, "dynamic_table_retries": {"enable": False}})
        self.bootstrap, self.topic = bootstrap, topic
        self.rows, self.seconds = rows, seconds
        self.keep_going: Callable[[], bool] = lambda: False
        self.stop_event = threading.Event()
        self.acked_yt: set[int] = set()
        self.acked_kafka: set[int] = set()
        self.failed_yt = 0
        self.failed_kafka = 0
        self.next_id = 0
        self.error: BaseException | None = None
        self._kafka = None

    def _kafka_producer(self):
        from confluent_kafka import Producer as KafkaProducer

        config = {
            "bootstrap.servers": self.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "message.timeout.ms": 300000,
            "logger": _quiet_logger(),
        }
        return KafkaProducer(config)

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.acked_kafka.add(int(message.value()))
        else:
            self.failed_kafka += 1

    def _write(self, ids: range) -> None:
        try:
            self.yt.insert_rows(QUEUE, [{"$tablet_index": i % TABLETS, "id": i, "payload": str(i)} for i in ids])
            self.acked_yt.update(ids)
        except Exception:  # the server is down: these ids may be absent
            self.failed_yt += len(ids)
            time.sleep(0.2)
        if self.bootstrap is None:
            return
        if self._kafka is None:
            self._kafka = self._kafka_producer()
        for i in ids:
            while True:
                try:
                    self._kafka.produce(
                        self.topic, value=str(i).encode(), partition=i % TABLETS, on_delivery=self._delivered
                    )
                    break
                except BufferError:
                    self._kafka.poll(0.5)
        self._kafka.poll(0)

    def run(self) -> None:
        """Produce until ``rows`` ids are written and ``keep_going()`` is false, or until stopped."""
        try:
            started = time.monotonic()
            rate = self.rows / max(self.seconds, 0.001)
            chunk = max(1, min(5000, int(rate * 0.2)))
            while not self.stop_event.is_set():
                if self.next_id >= self.rows:
                    if not self.keep_going():
                        break
                    due = self.next_id + max(1, chunk // 10)
                    self.stop_event.wait(1.0)
                else:
                    due = min(self.rows, int(rate * (time.monotonic() - started)) + 1)
                    if due <= self.next_id:
                        self.stop_event.wait(0.05)
                        continue
                ids = range(self.next_id, min(due, self.next_id + chunk))
                self.next_id = ids.stop
                self._write(ids)
        except BaseException as error:  # reported by finish()
            self.error = error

    def finish(self, timeout: float = 300.0) -> None:
        """Stop producing and wait until every Kafka record is acknowledged or failed."""
        self.stop_event.set()
        self.join(timeout)
        if self._kafka is not None:
            remaining = self._kafka.flush(timeout)
            if remaining:
                raise RuntimeError(f"{remaining} Kafka records neither delivered nor failed after {timeout:.0f} s")
        if self.error is not None:
            raise RuntimeError(f"the chaos producer failed: {self.error!r}") from self.error


def _quiet_logger():
    import logging

    logger = logging.getLogger("tests.chaos.librdkafka")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


# ------------------------------------------------------------------------------------------------------- driver


class Driver:
    """One streaming driver subprocess (its own process group) running ``spec``."""

    def __init__(self, spec_path: Path, log_path: Path) -> None:
        self.spec_path, self.log_path = spec_path, log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Launch ``python tests/chaos/driver.py SPEC``."""
        env = dict(os.environ)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== driver at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [sys.executable, str(DRIVER), str(self.spec_path)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )

    @property
    def alive(self) -> bool:
        """Whether the driver process runs."""
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the driver's process group (the Python driver, its JVM and Python workers) and reap it."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(60)

    def wait(self, timeout: float) -> int | None:
        """The exit status, or None (after killing it) if it ran longer than ``timeout``."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the driver log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no driver log)"


class Drivers:
    """Several :class:`Driver` processes, one per spec file, started, killed and waited for together."""

    def __init__(self, work: Path, count: int) -> None:
        self.members = [Driver(work / f"spec-{i}.json", work / f"driver-{i}.log") for i in range(count)]

    def start(self) -> None:
        """Start every driver."""
        for driver in self.members:
            driver.start()

    def kill(self) -> None:
        """SIGKILL every driver's process group."""
        for driver in self.members:
            driver.kill()

    @property
    def alive(self) -> bool:
        """Whether every driver runs."""
        return all(driver.alive for driver in self.members)

    def wait(self, timeout: float) -> list[int | None]:
        """Every driver's exit status (None for one killed after ``timeout`` seconds in all)."""
        deadline = time.monotonic() + timeout
        return [driver.wait(max(1.0, deadline - time.monotonic())) for driver in self.members]

    def log_tail(self, chars: int = 4000) -> str:
        """The end of every driver log."""
        return "\n".join(f"--- {d.log_path.name}:\n{d.log_tail(chars)}" for d in self.members)

    def count(self, marker: str) -> int:
        """Occurrences of ``marker`` in all driver logs."""
        return sum(d.log_tail(10**9).count(marker) for d in self.members)


def committed_batches(checkpoint: Path) -> int:
    """How many batches Spark marked committed in ``checkpoint``: the last committed batch id + 1 (0 when none).

    Not the number of commit files: Spark keeps only the last ``spark.sql.streaming.minBatchesToRetain`` (100) of
    them, so after 100 batches a count stops growing although the query goes on committing."""
    try:
        ids = [int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()]
    except OSError:
        return 0
    return max(ids) + 1 if ids else 0


def batch_in_flight(checkpoint: Path) -> bool:
    """Whether Spark logged a batch's offsets in ``checkpoint`` but not (yet) its commit."""
    try:
        planned = [int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    except OSError:
        return False
    return bool(planned) and max(planned) >= committed_batches(checkpoint)


# ---------------------------------------------------------------------------------------------------------- run


class ChaosRun:
    """One chaos run over ``config.pipelines`` (see the module docstring)."""

    def __init__(self, config: ChaosConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.pipelines = [PIPELINES[name] for name in config.pipelines]
        self.work = Path(config.work_dir)
        self.work.mkdir(parents=True, exist_ok=True)
        self.with_kafka = any(p.source == "kafka" for p in self.pipelines)
        self.with_zookeeper = any(p.store == "zookeeper" for p in self.pipelines)
        self.on_cluster = config.cluster is not None or config.executor_kills > 0 or config.worker_kills > 0
        own_cluster = self.on_cluster and config.cluster is None
        self.servers = Servers(self.work, self.with_kafka, self.with_zookeeper, spark_cluster=own_cluster)
        self.topic = "chaos"
        self.events: list[str] = []
        per_driver = max(1, config.queries_per_driver)
        self.groups = [self.pipelines[i : i + per_driver] for i in range(0, len(self.pipelines), per_driver)]
        self.driver = Drivers(self.work, len(self.groups))
        self.started = time.monotonic()

    @property
    def cluster(self) -> Any:
        """The standalone Spark cluster the drivers run on (None: ``local[2]``)."""
        return self.config.cluster if self.config.cluster is not None else self.servers.spark_cluster

    def checkpoint(self, pipeline: Pipeline) -> Path:
        """The pipeline's checkpoint directory."""
        return self.work / "checkpoints" / pipeline.name

    def target(self, pipeline: Pipeline) -> str:
        """The pipeline's YT target table."""
        return f"//tmp/chaos/{pipeline.name}/target"

    def consumer(self, pipeline: Pipeline) -> str:
        """The pipeline's YT consumer (for ``store=consumer``)."""
        return f"//tmp/chaos/{pipeline.name}/consumer"

    def zk_uri(self) -> str:
        """The ZooKeeper store URI."""
        assert self.servers.zookeeper is not None
        return self.servers.zookeeper.uri("/chaos")

    def yt(self):
        """A fresh YT client of the harness's server (with ``yt.wrapper``'s retries)."""
        from spyt_queue.yt.client import make_yt_client

        return make_yt_client(self.servers.yt.proxy)

    # ---------------------------------------------------------------------------------------------------- setup

    def setup(self) -> None:
        """Create the queue, the topic, and every pipeline's consumer, target and producer table; write the spec."""
        from spyt_queue.yt.admin import column, create_consumer, create_producer, create_queue, create_sorted_table

        yt = self.yt()
        yt.create("map_node", "//tmp/chaos", recursive=True, ignore_existing=True)
        create_queue(yt, QUEUE, [column("id", "int64", required=True), column("payload", "string")], TABLETS)
        if self.with_kafka:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": self.servers.kafka.bootstrap_servers, "logger": _quiet_logger()})
            admin.create_topics([NewTopic(self.topic, TABLETS, 1)])[self.topic].result(60)
        queries = []
        for pipeline in self.pipelines:
            yt.create("map_node", f"//tmp/chaos/{pipeline.name}", ignore_existing=True)
            schema = [column(name, type_, sort_order=order) for name, type_, order in pipeline.target]
            if any(order for _, _, order in pipeline.target):
                create_sorted_table(yt, self.target(pipeline), schema)
            else:
                create_queue(yt, self.target(pipeline), schema, 1)
            writer = {"proxy": self.servers.yt.proxy, "path": self.target(pipeline)}
            producer = f"//tmp/chaos/{pipeline.name}/producer"
            if pipeline.needs_producer:
                create_producer(yt, producer)
            names = {"{producer}": producer, "{consumer}": self.consumer(pipeline)}
            for key, value in pipeline.writer.items():
                for placeholder, path in names.items():
                    value = value.replace(placeholder, path)
                writer[key] = value
            # A killed server is back within a few seconds: the queries wait for it (fetchOffset.* as users of a
            # flaky cluster set them) instead of failing and being restarted, which needs new Python workers, and
            # those may not connect back in Spark's fixed 10 s on this loaded machine. A restart is still what ends
            # the driver kills; the outage scenarios test the failing side.
            reader = {
                "max_rows_per_partition": str(self.config.max_rows_per_partition),
                "fetchOffset.numRetries": "60",
                "fetchOffset.retryIntervalMs": "1000",
                **pipeline.reader,
            }
            load: str | None = QUEUE
            if pipeline.source == "kafka":
                assert self.servers.kafka is not None
                load = None
                reader.update(
                    {
                        "kafka.bootstrap.servers": self.servers.kafka.bootstrap_servers,
                        "subscribe": self.topic,
                        "kafka.group.id": pipeline.name,
                        "startingOffsets": "group",
                    }
                )
            else:
                reader.update({"proxy": self.servers.yt.proxy, "include_service_columns": "true"})
                if pipeline.store == "zookeeper":
                    reader.update(
                        {"offsets.store": self.zk_uri(), "offsets.group": ZK_GROUP, "startingOffsets": "store"}
                    )
                else:
                    create_consumer(yt, self.consumer(pipeline), QUEUE)
                    reader["consumer_path"] = self.consumer(pipeline)
            queries.append(
                {
                    "name": pipeline.name,
                    "reader": reader,
                    "load": load,
                    "select": list(pipeline.select),
                    "writer": writer,
                    "checkpoint": str(self.checkpoint(pipeline)),
                }
            )
        by_name = {query["name"]: query for query in queries}
        for driver, group in zip(self.driver.members, self.groups, strict=True):
            spec: dict[str, Any] = {
                "queries": [by_name[p.name] for p in group],
                "trigger_ms": self.config.trigger_ms,
                "max_query_restarts": self.config.max_query_restarts,
                "restart_pause_s": 1.0,
            }
            if self.cluster is not None:
                spec["master"] = self.cluster.master_url
                spec["spark_conf"] = self.cluster.driver_conf()
            driver.spec_path.write_text(json.dumps(spec, indent=1))

    # ---------------------------------------------------------------------------------------------------- chaos

    def _deadline(self) -> float:
        return time.monotonic() + self.config.progress_timeout_s

    def wait_progress(self, baseline: dict[str, int]) -> None:
        """Wait until every pipeline committed a batch past ``baseline``; a dead driver is started again."""
        deadline = self._deadline()
        while True:
            counts = {p.name: committed_batches(self.checkpoint(p)) for p in self.pipelines}
            if all(counts[name] > baseline.get(name, 0) for name in counts):
                return
            if not self.driver.alive:
                raise RuntimeError(f"a streaming driver exited by itself:\n{self.driver.log_tail()}")
            if time.monotonic() > deadline:
                behind = sorted(name for name in counts if counts[name] <= baseline.get(name, 0))
                raise RuntimeError(
                    f"no committed batch of {behind} within {self.config.progress_timeout_s:.0f} s (a hang?):\n"
                    f"{self.driver.log_tail()}"
                )
            time.sleep(0.2)

    def baseline(self) -> dict[str, int]:
        """Committed batches per pipeline now."""
        return {p.name: committed_batches(self.checkpoint(p)) for p in self.pipelines}

    def apply(self, event: str) -> None:
        """Apply one chaos event."""
        pause = self.rng.uniform(0.0, 1.0)
        if event in ("driver", "driver-fresh"):
            self.driver.kill()
            if event == "driver-fresh":
                for pipeline in self.pipelines:
                    shutil.rmtree(self.checkpoint(pipeline), ignore_errors=True)
            self.driver.start()
        elif event == "yt-server":
            self.servers.kill_yt(pause)
        elif event == "kafka-broker":
            self.servers.kill_kafka(pause)
        elif event == "executor":
            self.cluster.wait_executors(self.cluster.worker_count, self.config.progress_timeout_s)
            self.wait_mid_batch()
            self.cluster.kill_executor()
        elif event == "worker":
            self.cluster.wait_executors(self.cluster.worker_count, self.config.progress_timeout_s)
            self.wait_mid_batch()
            index = self.rng.randrange(self.cluster.worker_count)
            self.cluster.kill_worker(index)
            time.sleep(pause)
            self.cluster.restart_worker(index)
        else:
            raise ValueError(f"unknown chaos event {event!r}")
        self.events.append(event)
        self.config.log(f"[{time.monotonic() - self.started:6.0f}s] event {len(self.events)}: {event}")

    def wait_mid_batch(self) -> None:
        """Wait (at most ``mid_batch_wait_s``) until a batch is in flight: some query logged the batch's offsets but
        not yet its commit (its tasks run or are about to)."""
        deadline = time.monotonic() + self.config.mid_batch_wait_s
        while time.monotonic() < deadline:
            if any(batch_in_flight(self.checkpoint(p)) for p in self.pipelines):
                return
            time.sleep(0.05)

    def catch_up(self) -> dict[str, bool]:
        """Wait (at most ``drain_timeout_s``) until every pipeline's store holds its source's end, the running
        queries committing their last batches at idle triggers; whether each got there."""
        deadline = time.monotonic() + self.config.drain_timeout_s
        done: dict[str, bool] = dict.fromkeys((p.name for p in self.pipelines), False)
        while True:
            for pipeline in self.pipelines:
                if not done[pipeline.name]:
                    with contextlib.suppress(Exception):  # a store read that fails counts as not there yet
                        done[pipeline.name] = self.committed_at_end(pipeline)
            if all(done.values()) or time.monotonic() > deadline:
                return done
            if not self.driver.alive:
                raise RuntimeError(f"a streaming driver exited by itself:\n{self.driver.log_tail()}")
            time.sleep(2.0)

    def run(self) -> ChaosReport:
        """Start the servers, run the chaos and the drain, measure; everything started is stopped at the end."""
        config = self.config
        try:
            self.servers.start()
            self.setup()
            bootstrap = self.servers.kafka.bootstrap_servers if self.servers.kafka else None
            producer = Producer(self.servers.yt.proxy, bootstrap, self.topic, config.rows, config.seconds)
            plan = event_plan(config.kills, self.with_kafka, self.rng, config.executor_kills, config.worker_kills)
            chaos_over = threading.Event()
            producer.keep_going = lambda: not chaos_over.is_set()
            producer.start()
            self.driver.start()
            config.log(f"chaos: {len(plan)} events {plan}, {config.rows} rows over {config.seconds:.0f} s")
            for event in plan:
                self.wait_progress(self.baseline() if self.events else {})
                time.sleep(self.rng.uniform(0.0, config.max_pause_s))
                self.apply(event)
            self.wait_progress(self.baseline())
            chaos_over.set()
            producer.finish()
            config.log(f"[{time.monotonic() - self.started:6.0f}s] producer wrote {producer.next_id} ids; catching up")
            committed = self.catch_up()
            self.driver.kill()
            return self.measure(producer, committed)
        finally:
            self.driver.kill()
            self.servers.stop()

    # -------------------------------------------------------------------------------------------------- measure

    def yt_source(self) -> Counter[int]:
        """Ids in the YT queue."""
        return Counter(int(r["id"]) for r in self._select(f"id FROM [{QUEUE}]"))

    def _select(self, query: str) -> list[dict[str, Any]]:
        limit = 10**9
        return list(self.yt().select_rows(query, input_row_limit=limit, output_row_limit=limit))

    def kafka_source(self) -> Counter[int]:
        """Ids in the Kafka topic, read from the start to the high watermarks."""
        from confluent_kafka import Consumer, TopicPartition

        assert self.servers.kafka is not None
        consumer = Consumer(
            {
                "bootstrap.servers": self.servers.kafka.bootstrap_servers,
                "group.id": "chaos-verify",
                "enable.auto.commit": False,
                "logger": _quiet_logger(),
            }
        )
        try:
            ends = self._high_watermarks(consumer)
            consumer.assign([TopicPartition(self.topic, p, 0) for p in range(TABLETS)])
            found: Counter[int] = Counter()
            positions = dict.fromkeys(ends, 0)
            deadline = time.monotonic() + 300
            while any(positions[p] < ends[p] for p in ends):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"could not read the topic to its end: at {positions}, ends {ends}")
                for message in consumer.consume(10000, timeout=1.0):
                    if message.error() is None and message.offset() < ends[message.partition()]:
                        found[int(message.value())] += 1
                        positions[message.partition()] = message.offset() + 1
            return found
        finally:
            consumer.close()

    def _high_watermarks(self, consumer: Any) -> dict[int, int]:
        from confluent_kafka import TopicPartition

        return {p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=30)[1] for p in range(TABLETS)}

    def kafka_group(self, group: str) -> tuple[dict[int, int], dict[int, int]]:
        """Committed offsets of a Kafka group on the topic, and the topic's high watermarks."""
        from confluent_kafka import Consumer, TopicPartition

        assert self.servers.kafka is not None
        consumer = Consumer(
            {"bootstrap.servers": self.servers.kafka.bootstrap_servers, "group.id": group, "logger": _quiet_logger()}
        )
        try:
            found = consumer.committed([TopicPartition(self.topic, p) for p in range(TABLETS)], timeout=30)
            ends = self._high_watermarks(consumer)
        finally:
            consumer.close()
        return {tp.partition: tp.offset for tp in found}, ends

    def yt_ends(self) -> dict[int, int]:
        """``total_row_count`` per tablet of the queue."""
        infos = self.yt().get_tablet_infos(QUEUE, list(range(TABLETS)))["tablets"]
        return {i: int(t["total_row_count"]) for i, t in enumerate(infos)}

    def committed_at_end(self, pipeline: Pipeline) -> bool:
        """Whether the pipeline's store holds the end of every partition of its source."""
        if pipeline.source == "kafka":
            committed, ends = self.kafka_group(pipeline.name)
            return committed == ends
        ends = self.yt_ends()
        if pipeline.store == "zookeeper":
            from spyt_queue.zookeeper.store import ZooKeeperStore

            source = f"yt:{QUEUE}#{self.yt().get(QUEUE + '/@id')}"
            store = ZooKeeperStore.from_uri(self.zk_uri(), source, ZK_GROUP)
            try:
                return store.committed() == {str(p): end for p, end in ends.items()}
            finally:
                store.close()
        rows = self._select(f'* FROM [{self.consumer(pipeline)}] WHERE queue_path = "{QUEUE}"')
        return {int(r["partition_index"]): int(r["offset"]) for r in rows} == ends

    def measure(self, producer: Producer, committed: dict[str, bool]) -> ChaosReport:
        """Compare every target with its source; check the servers kept every acknowledged write."""
        sources = {"yt": self.yt_source()}
        if self.with_kafka:
            sources["kafka"] = self.kafka_source()
        counts = Counter(self.events)
        server_kills = {"yt": counts["yt-server"], "kafka": counts["kafka-broker"]}
        driver_kills = counts["driver"] + counts["driver-fresh"]
        results = []
        for pipeline in self.pipelines:
            source = sources[pipeline.source]
            target = Counter(int(r["id"]) for r in self._select(f"id FROM [{self.target(pipeline)}]"))
            kills = driver_kills + server_kills["yt"] + (server_kills["kafka"] if pipeline.source == "kafka" else 0)
            results.append(
                PipelineResult(
                    pipeline.name,
                    pipeline.guarantee,
                    kills,
                    sum(source.values()),
                    sum(max(0, n - target[i]) for i, n in source.items()),
                    sum(max(0, n - source[i]) for i, n in target.items()),
                    committed[pipeline.name],
                )
            )
        servers = [ServerResult("ytqueue-local", server_kills["yt"], len(producer.acked_yt), 0)]
        servers[0].lost_acknowledged = sum(1 for i in producer.acked_yt if sources["yt"][i] == 0)
        if self.with_kafka:
            lost = sum(1 for i in producer.acked_kafka if sources["kafka"][i] == 0)
            servers.append(ServerResult("kafka", server_kills["kafka"], len(producer.acked_kafka), lost))
        restarts = self.driver.count("query-restart ")
        lost_executors = self.driver.count("Lost executor ")
        elapsed = time.monotonic() - self.started
        return ChaosReport(results, servers, list(self.events), restarts, elapsed, lost_executors)


def run_chaos(config: ChaosConfig) -> ChaosReport:
    """Run one chaos run (see the module docstring) and return its report."""
    return ChaosRun(config).run()
