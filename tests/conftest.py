"""Session-wide fixtures: one local YTsaurus-compatible server and one SparkSession per test session.

Set ``YT_PROXY`` (and ``YT_TOKEN``) to run the YT tests against a real cluster instead of the embedded
server; tests that need to restart or kill the server are skipped there, with the reason shown.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

REAL_PROXY = os.environ.get("YT_PROXY")


def _interrupted(signum: int, _frame: object) -> None:
    """SIGTERM (``timeout``, a CI runner, ``kill``) as Ctrl-C: pytest tears its fixtures down and the servers' atexit
    hook runs, instead of the process ending at once and leaving servers behind (the Spark Connect server's JVM and
    its Python workers are grandchildren that the launcher's death signal does not reach)."""
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """Stop on SIGTERM as on Ctrl-C (see :func:`_interrupted`)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupted)


def pytest_report_header(config: pytest.Config) -> str:
    """Say which YTsaurus the YT tests talk to, and how to change it."""
    if REAL_PROXY:
        return f"YT tests target the real cluster at YT_PROXY={REAL_PROXY} (tests that restart the server are skipped)"
    return "YT tests target the embedded local server (set YT_PROXY=host:port to run them against a real cluster)"


#: Run first: PySpark refuses to create a Spark Connect client session in a process where a classic session exists
#: (``SESSION_ALREADY_EXIST``), and the Connect tests create theirs as a user would (``SparkSession.builder.remote``).
RUN_FIRST = ("tests/clusters/connect/",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the tests of :data:`RUN_FIRST` to the front, keeping every other order."""
    first = [item for item in items if item.nodeid.startswith(RUN_FIRST)]
    if first:
        items[:] = first + [item for item in items if not item.nodeid.startswith(RUN_FIRST)]


@pytest.fixture(scope="session")
def local_yt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The embedded local YTsaurus-compatible server (a separate process), started once per session."""
    if REAL_PROXY:
        pytest.skip(f"YT_PROXY={REAL_PROXY} points at a real cluster; this test needs the embedded server")
    from spyt_queue.local import LocalYtServer

    server = LocalYtServer(data_dir=tmp_path_factory.mktemp("local-yt"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def yt_proxy(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> str:
    """Proxy address of the cluster under test: ``YT_PROXY`` when set, else the embedded server."""
    if REAL_PROXY:
        return REAL_PROXY
    return request.getfixturevalue("local_yt").proxy


def make_client(proxy: str):
    """A ``yt.wrapper.YtClient`` for ``proxy`` configured as our code configures it."""
    from spyt_queue.yt.client import make_yt_client

    return make_yt_client(proxy, token=os.environ.get("YT_TOKEN"))


@pytest.fixture
def yt(yt_proxy: str):
    """A fresh ``yt.wrapper.YtClient`` talking to the cluster under test."""
    return make_client(yt_proxy)


@pytest.fixture
def yt_root(yt, request: pytest.FixtureRequest) -> str:
    """A unique Cypress directory for one test, removed afterwards on a real cluster."""
    name = request.node.name.replace("[", "_").replace("]", "").replace("/", "_")[:60]
    path = f"//tmp/spyt_queue_tests/{name}-{uuid.uuid4().hex[:8]}"
    yt.create("map_node", path, recursive=True)
    yield path
    if REAL_PROXY:
        try:
            yt.remove(path, recursive=True, force=True)
        except Exception:  # pragma: no cover - best-effort cleanup on a shared cluster
            pass


#: Environment of a test session run as the driver of another cluster (tests/clusters/standalone runs one so): the
#: master URL, extra Spark settings as a JSON object, the application's name.
SPARK_MASTER_ENV = "SPYT_TEST_SPARK_MASTER"
SPARK_CONF_ENV = "SPYT_TEST_SPARK_CONF"
SPARK_APP_NAME_ENV = "SPYT_TEST_SPARK_APP_NAME"
#: ``bootstrap.servers`` of a running broker the session uses instead of starting its own.
KAFKA_BOOTSTRAP_ENV = "SPYT_TEST_KAFKA_BOOTSTRAP"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    """The one SparkSession of the test session: ``local[2]``, or the master in ``SPYT_TEST_SPARK_MASTER`` with the
    settings in ``SPYT_TEST_SPARK_CONF`` (a JSON object)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession

    from integration.kafka_broker import spark_kafka_jars

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    builder = SparkSession.builder
    conf = json.loads(os.environ.get(SPARK_CONF_ENV) or "{}")
    # Spark's own Kafka source (format("kafka")): the oracle of tests/kafka/test_spark_kafka_suites.py
    # (left out on a PySpark line older than the jars': there they fail every data source lookup)
    jars = [*filter(None, str(conf.get("spark.jars", "")).split(",")), *spark_kafka_jars(for_spark=pyspark.__version__)]
    if jars:
        conf["spark.jars"] = ",".join(jars)
    for key, value in conf.items():
        builder = builder.config(key, str(value))
    session = (
        builder.master(os.environ.get(SPARK_MASTER_ENV) or "local[2]")
        .appName(os.environ.get(SPARK_APP_NAME_ENV) or "spyt-queue-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "2g")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    from spyt_queue import register

    register(session)
    yield session
    session.stop()


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    """A fresh checkpoint directory for one streaming query."""
    return str(tmp_path / "checkpoint")


#: The explicit opt-out: with it set, a test whose real server is missing is skipped instead of failing.
ALLOW_MISSING_SERVERS = "SPYT_ALLOW_MISSING_SERVERS"


def missing_servers_allowed() -> bool:
    """Whether a contributor opted out of the real-servers rule for this run (``SPYT_ALLOW_MISSING_SERVERS=1``)."""
    return os.environ.get(ALLOW_MISSING_SERVERS, "").lower() in ("1", "true", "yes")


def require_or_skip(reason: str | None) -> None:
    """A missing real server fails the test with ``reason`` (a missing server is a failure, in CI and locally),
    unless a contributor opted out explicitly with ``SPYT_ALLOW_MISSING_SERVERS=1``: then it is skipped."""
    if not reason:
        return
    if missing_servers_allowed():
        pytest.skip(reason)
    pytest.fail(
        f"a required server is missing: {reason} (run integration/install.sh, or set {ALLOW_MISSING_SERVERS}=1 to "
        "skip the tests that need it)",
        pytrace=False,
    )


def serve(make_server, missing: str | None, *cleanups):
    """Make and start a real server for the session (after :func:`require_or_skip`), yield it, run ``cleanups``
    (closing this process's clients of it), then stop it."""
    require_or_skip(missing)
    server = make_server()
    server.start()
    try:
        yield server
    finally:
        try:
            for cleanup in cleanups:
                cleanup()
        finally:
            server.stop()


@pytest.fixture(scope="session")
def kafka_broker():
    """One real single-node Apache Kafka (KRaft) on loopback for the session (jars from Maven Central).

    Fails with the reason when Java or the jars are missing (run
    ``integration/install.sh``); skipped instead with ``SPYT_ALLOW_MISSING_SERVERS=1``.
    """
    from integration.kafka_broker import KafkaBroker, missing_requirements

    def close_clients() -> None:  # pooled consumers would keep reconnecting to the stopped broker
        from spyt_queue.kafka.clients import close_all

        close_all()

    yield from serve(KafkaBroker, missing_requirements(), close_clients)


@pytest.fixture(scope="session")
def kafka_bootstrap(request: pytest.FixtureRequest) -> str:
    """``bootstrap.servers`` of the session broker (``SPYT_TEST_KAFKA_BOOTSTRAP`` when set: a broker already running,
    as when tests/clusters/standalone runs a session as a cluster's driver)."""
    if os.environ.get(KAFKA_BOOTSTRAP_ENV):
        return os.environ[KAFKA_BOOTSTRAP_ENV]
    return request.getfixturevalue("kafka_broker").bootstrap_servers


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A real Spark standalone cluster on loopback for the session: a master and two workers (1 core, 1 GiB each)
    from the installed PySpark, executors running this interpreter. Tests run their drivers against it in
    subprocesses (this process keeps its ``local[2]`` session); the chaos tests kill its executors and workers.

    Fails with the reason when Java or PySpark's launcher is missing; skipped instead with
    ``SPYT_ALLOW_MISSING_SERVERS=1``."""
    from integration.spark_cluster import SparkStandaloneCluster, missing_requirements

    python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    work_dir = tmp_path_factory.mktemp("spark-cluster")
    cluster = partial(SparkStandaloneCluster, workers=2, cores=1, memory="1g", python=python, work_dir=work_dir)
    yield from serve(cluster, missing_requirements())


@pytest.fixture(scope="session")
def zookeeper():
    """One real standalone Apache ZooKeeper on loopback for the session (jars from Maven Central).

    Fails with the reason when Java, the jars or kazoo are missing (run ``integration/install.sh``); skipped
    instead with ``SPYT_ALLOW_MISSING_SERVERS=1``.
    """
    from integration.zookeeper import ZooKeeperServer, missing_requirements

    yield from serve(ZooKeeperServer, missing_requirements())


@pytest.fixture(scope="session")
def kudu():
    """One real Apache Kudu (a master and a tablet server, native binaries of ``kudu-binary``) for the session.

    Fails with the reason when the binaries are missing (run
    ``integration/install.sh``); skipped instead with ``SPYT_ALLOW_MISSING_SERVERS=1``.
    """
    from integration.kudu import KuduCluster, missing_requirements

    def close_clients() -> None:
        from spyt_queue.sinks.kudu.client import close_clients

        close_clients()

    yield from serve(KuduCluster, missing_requirements(), close_clients)


@pytest.fixture(scope="session")
def hbase():
    """One real Apache HBase 2.6.1 (standalone: embedded ZooKeeper, master and region server in one JVM) plus its
    Thrift1 gateway for the session, started on first use (about 15 s: the slowest server; only tests that ask for
    it pay). ``hbase.thrift_address`` is the sink's ``thrift`` option, ``hbase.uri(table)`` an ``offsets.store``.

    Fails with the reason when Java, the jars or happybase are missing (run
    ``integration/install.sh``); skipped instead with ``SPYT_ALLOW_MISSING_SERVERS=1``.
    """
    from integration.hbase import HBase, missing_requirements

    yield from serve(HBase, missing_requirements())


@pytest.fixture(scope="session")
def hdfs():
    """One real HDFS (Hadoop 3.5.0: a NameNode and a DataNode in one JVM, from Maven Central's
    ``hadoop-client-minicluster``) on loopback for the session, started on first use (about 10 s).
    ``hdfs.uri(path)`` is an ``hdfs://127.0.0.1:PORT/path`` URI Spark reads and writes with its own Hadoop client.

    Fails with the reason when Java or the jars are missing (run
    ``integration/install.sh``); skipped instead with ``SPYT_ALLOW_MISSING_SERVERS=1``.
    """
    from integration.hdfs import HdfsCluster, missing_requirements

    yield from serve(HdfsCluster, missing_requirements())
