"""``ytqueue status`` against brokers and offset stores as a user runs it: an endpoint that is not running (or does
not answer) is one line within seconds naming it and what to do, with the client libraries' own logging kept quiet;
and a store read without the group a query commits under says which group that is."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from spyt_queue.yt import admin
from tests.conftest import REAL_PROXY, make_client

YTQUEUE = str(Path(sys.executable).with_name("ytqueue"))


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def silent_server() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never answers (a hung or wrong server), while inside."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        for connection in accepted:
            connection.close()


def ytqueue(*args: str, proxy: str | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the installed ``ytqueue`` as a user does (librdkafka writes to the process's stderr itself)."""
    env = dict(os.environ, COLUMNS="200")
    env.pop("YT_PROXY", None)
    if proxy:
        env["YT_PROXY"] = proxy
    started = time.monotonic()
    done = subprocess.run([YTQUEUE, *args], capture_output=True, text=True, env=env, timeout=120)
    return done, time.monotonic() - started


class Background:
    """``ytqueue(*args, proxy=proxy)`` running in a thread of its own; :meth:`result` waits for its answer."""

    def __init__(self, *args: str, proxy: str | None = None) -> None:
        self.outcome: tuple[subprocess.CompletedProcess[str], float] | BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=args, kwargs={"proxy": proxy}, daemon=True)
        self.thread.start()

    def _run(self, *args: str, proxy: str | None) -> None:
        try:
            self.outcome = ytqueue(*args, proxy=proxy)
        except BaseException as error:  # handed to the test by result()
            self.outcome = error

    def result(self) -> tuple[subprocess.CompletedProcess[str], float]:
        """The finished command and the seconds it took (from its own start, whenever it is asked for)."""
        self.thread.join(150)
        assert self.outcome is not None, "ytqueue did not finish"
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def assert_one_line(done: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit code 1, nothing on stdout, one ``Error:`` line on stderr holding every fragment, no traceback."""
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("scheme", "what"),
    [("zookeeper", "ZooKeeper"), ("kudu", "the Kudu master"), ("hbase", "the HBase Thrift gateway")],
)
def test_a_store_that_is_not_running_is_one_line_naming_it(
    yt, yt_proxy: str, yt_root: str, scheme: str, what: str
) -> None:
    queue = f"{yt_root}/queue"
    admin.create_queue(yt, queue, [admin.column("a", "int64")])
    port = closed_port()
    done, took = ytqueue("status", "--queue", queue, "--store", f"{scheme}://127.0.0.1:{port}/t", proxy=yt_proxy)
    assert_one_line(
        done, f"cannot reach {what} at 127.0.0.1:{port} (Connection refused)", "is it running?", "check --store"
    )
    assert took < 30, f"{took:.0f} s"


@pytest.mark.parametrize("args", [("--topic", "events", "--group", "g"), ("--dead-letter-topic", "dead")])
def test_a_kafka_broker_that_is_not_running_is_one_line_naming_it(args: tuple[str, ...]) -> None:
    port = closed_port()
    done, took = ytqueue("status", "--bootstrap-servers", f"127.0.0.1:{port}", *args)
    assert_one_line(
        done,
        f"cannot reach Kafka at 127.0.0.1:{port} (Connection refused)",
        "is the broker running?",
        "check --bootstrap-servers",
    )
    assert took < 30, f"{took:.0f} s"


SILENT_STORES = ("zookeeper", "hbase", "kudu")


@pytest.fixture(scope="module")
def silent_endpoints(yt_proxy: str) -> Iterator[dict[str, tuple[int, Background]]]:
    """``ytqueue status`` against Kafka and each store at ports that accept connections and never answer, all
    started at once (each waits out its client's answer timeout, so together they take it once): per endpoint, its
    port and its running command."""
    yt = make_client(yt_proxy)
    root = f"//tmp/spyt_queue_tests/silent_endpoints-{uuid.uuid4().hex[:8]}"
    with ExitStack() as servers:
        ports = {name: servers.enter_context(silent_server()) for name in ("kafka", *SILENT_STORES)}
        kafka = ("--bootstrap-servers", f"127.0.0.1:{ports['kafka']}", "--topic", "t", "--group", "g")
        runs = {"kafka": Background("status", *kafka)}
        for scheme in SILENT_STORES:
            queue = f"{root}/{scheme}/queue"
            admin.create_queue(yt, queue, [admin.column("a", "int64")])
            uri = f"{scheme}://127.0.0.1:{ports[scheme]}/x"
            runs[scheme] = Background("status", "--queue", queue, "--store", uri, proxy=yt_proxy)
        try:
            yield {name: (ports[name], runs[name]) for name in ports}
        finally:
            for run in runs.values():  # every command answers before its silent server closes
                run.thread.join(150)
    if REAL_PROXY:
        yt.remove(root, recursive=True, force=True)


def test_a_kafka_endpoint_that_never_answers_is_one_line_too(
    silent_endpoints: dict[str, tuple[int, Background]],
) -> None:
    silent_port, run = silent_endpoints["kafka"]
    done, took = run.result()
    assert_one_line(done, f"Kafka at 127.0.0.1:{silent_port} accepts connections but answered no metadata request")
    assert took < 30, f"{took:.0f} s"


@pytest.mark.parametrize("scheme", SILENT_STORES)
def test_a_store_endpoint_that_never_answers_is_one_line_within_seconds(
    silent_endpoints: dict[str, tuple[int, Background]], scheme: str
) -> None:
    """A server that accepts connections and never answers (hung, or another service on that port): the store
    clients would retry for up to minutes (kazoo, the Kudu Java client) printing each attempt."""
    silent_port, run = silent_endpoints[scheme]
    done, took = run.result()
    assert_one_line(done, f"the offset store {scheme}://127.0.0.1:{silent_port}", "did not answer", "--store")
    assert took < 25, f"{took:.0f} s"


# -- which group a query commits under -----------------------------------------------------------------------


@pytest.mark.spark
def test_status_of_a_kafka_query_without_group_id_finds_its_group_in_the_store_and_hints_at_it(
    spark, kafka_bootstrap: str, zookeeper, checkpoint: str, tmp_path: Path
) -> None:
    """A Kafka query without ``kafka.group.id`` commits to the store under spark-kafka-source-<hash>: status without
    ``--group`` shows that group, and names the rule; a group with nothing in the store lists the store's groups."""
    from tests.kafka.helpers import Topic, run_to_files

    topic = Topic(kafka_bootstrap, checkpoint)
    topic.produce(6)
    store = zookeeper.uri(f"/spyt-{uuid.uuid4().hex[:8]}")
    stream = (
        spark.readStream.format("ytqueue")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", topic.name)
        .option("startingOffsets", "earliest")
        .option("offsets.store", store)
        .load()
    )
    run_to_files(stream, checkpoint, str(tmp_path / "out"))
    common = ("status", "--bootstrap-servers", kafka_bootstrap, "--topic", topic.name, "--store", store)

    done, _ = ytqueue(*common)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:6]]
        for line in done.stdout.splitlines()
        if line.startswith("│")
    }
    done_rows = ["3", "0", "3", "0"]  # committed, first row, end, lag
    assert rows == {f"{topic.name}:0": done_rows, f"{topic.name}:1": done_rows, "total": ["", "", "6", "0"]}
    (hint,) = [line for line in done.stderr.splitlines() if line.startswith("hint:")]
    assert "hint: no --group: showing group spark-kafka-source-" in hint and "kafka.group.id" in hint, hint
    default_group = hint.split("showing group ")[1].split(",")[0]

    done, _ = ytqueue(*common, "--offsets-group", "spyt-queue")
    assert done.returncode == 0, done.stdout + done.stderr
    (hint,) = [line for line in done.stderr.splitlines() if line.startswith("hint:")]
    assert "hint: group spyt-queue has no positions for this source" in hint, hint
    assert "kafka.group.id, else spark-kafka-source-<hash of the subscription>" in hint, hint
    assert f"groups in this store: {default_group};" in hint and "--offsets-group NAME" in hint, hint
