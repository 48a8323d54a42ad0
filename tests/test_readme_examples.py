"""The README, followed as a reader follows it: every code block, top to bottom, from a fresh environment.

Every ```python and ```bash/```sh block of README.md runs in ``test_readme_examples_in_order``, in the order of the
file, unless ``NOT_RUN`` lists it with the reason. Output samples are fenced as ```text; a fence without a language,
or with one this test does not know, fails ``test_every_code_block_is_run_or_listed``. Nothing of the README is
rewritten except the addresses of servers, by one plain text substitution (longest value first):

=====================================  ==============================================================================
README value                           what the test uses
=====================================  ==============================================================================
``localhost:8000``, ``--port 8000``    a free port P (``localhost:P``, ``--port P``): the README's own ``ytqueue
                                       local`` listens there (port 8000 may be taken on a shared machine)
``localhost:9092``                     the session's Kafka broker (fixture ``kafka_bootstrap``)
``zk1:2181,zk2:2181``                  the session's ZooKeeper (fixture ``zookeeper``; one host instead of two)
``hbase-thrift:9090``                  the session's HBase Thrift1 gateway (fixture ``hbase``)
``kudu-master:7051``                   the session's Kudu master (fixture ``kudu``)
=====================================  ==============================================================================

The YT examples always run against the ``ytqueue local`` the README starts (a ``YT_PROXY`` of the test session is
not passed on to the reader), so ``//home/me/...`` paths are used as written.

The reader:

* works in a fresh empty directory, with the virtual environment activated (its ``bin`` first on ``PATH``);
* runs shell blocks line by line with ``bash`` in that directory; ``export``ed variables stay for the following lines
  and blocks. A line ending in ``&`` is started in the background, and the reader waits for its first line of output
  (``ytqueue local`` printing its address) before going on; it is interrupted (SIGINT) at the end;
* runs Python blocks in one fresh Python process (``tests/readme_session.py``), started at the first Python block
  with the shell's environment of that moment: the README itself creates the SparkSession and the checkpoint folder;
* after each Python block does what a reader does to see it work: the queries it started run until the data
  available is processed (``processAllAvailable()``) and are stopped; a block that starts none has the streams it
  defines run into a memory table with ``Trigger.AvailableNow``.

The test plays the world around the reader: it puts rows into the queues and records into the Kafka topic before
each example that reads them (and creates the topic ``events``, 2 partitions: the README gives no command for Kafka
topics), and checks after each block that its rows arrived and progress was committed where the README says.

The "Command line" block is the summary of the commands and is not run in its place (a reader who followed the
examples already has the server and the tables; running it again would start a second server on the same port and
fail on existing tables). ``test_command_line_summary_is_what_the_examples_run`` checks that each of its lines is a
line of a block run before it, one of the ``status`` lines the checks run, or ``ytqueue demo`` (tests/test_demo.py).
"""

from __future__ import annotations

import json
import os
import queue as queues
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SESSION = Path(__file__).with_name("readme_session.py")
VENV_BIN = Path(sys.executable).parent

PYTHON_LANGS = {"python", "py", "python3"}
SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh"}
NOT_CODE_LANGS = {"text", "json", "yaml", "toml", "ini", "csv", "diff"}

# (section heading, language) of the blocks that are not run, with the reason.
NOT_RUN = {
    ("Set-up: two commands on a fresh machine", "bash"): (
        "`make demo` / `make test` build .venv and run the demo and the whole suite (this test among them): "
        "tests/test_demo.py runs the demo, tests/packaging/ a fresh install"
    ),
    ("Command line", "bash"): (
        "the summary of the commands the examples above ran (it would start a second server and create existing "
        "tables); test_command_line_summary_is_what_the_examples_run checks it line by line"
    ),
    ("Deploying the package to executors", "bash"): (
        "installs into /opt/spyt on every machine of a Spark cluster; tests/cluster/ runs this recipe against a local "
        "standalone cluster"
    ),
    ("Deploying the package to executors", "python"): (
        "connects to a Spark standalone master (spark://master-host:7077); tests/cluster/ runs the stream scenarios "
        "on a local standalone cluster"
    ),
    ("Reliability: the chaos suite", "bash"): "the long chaos run takes an hour; tests/chaos/ runs the short one",
    ("Benchmarks", "bash"): "benchmarks run for minutes on purpose and assert nothing (see bench/)",
    ("Spark Connect", "bash"): (
        "starts a Spark Connect server: tests/connect/conftest.py starts one per session with the same launcher "
        "(integration/spark_connect.py: start-connect-server.sh --wait, PYSPARK_PYTHON = the venv's Python)"
    ),
    ("Spark Connect", "python"): (
        "a Connect client would turn the reader's Python process into one for the blocks after it: "
        "tests/connect/test_connect.py::test_readme_recipe runs this block against the session's Connect server"
    ),
}
# Lines of the "Command line" summary that no block runs, with the reason.
SUMMARY_LINES_NOT_RUN = {
    "ytqueue demo": "the demo runs for about a minute; tests/test_demo.py runs it and checks its report",
}
# Lines of the "Command line" summary that the checks below run (by the fragment that identifies them).
SUMMARY_LINES_RUN_BY_CHECKS = ("status --queue", "status --bootstrap-servers")

PYTHON_BLOCK_TIMEOUT = 420.0  # seconds for one block with its queries, on a busy 2-core machine


# -- extracting the blocks -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README: the heading it sits under, its language, its text and first line."""

    heading: str
    lang: str
    code: str
    line: int

    @property
    def kind(self) -> str | None:
        """``python``, ``shell``, or None for a block that is not code (output samples, data)."""
        if self.lang in PYTHON_LANGS:
            return "python"
        if self.lang in SHELL_LANGS:
            return "shell"
        return None

    @property
    def key(self) -> tuple[str, str]:
        return (self.heading, self.lang)


def readme_blocks() -> list[Block]:
    """Every fenced code block of README.md, in order."""
    blocks: list[Block] = []
    heading, fence, lang, start, body = "", False, "", 0, []
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        if fence:
            if line.strip() == "```":
                blocks.append(Block(heading, lang, "\n".join(body) + "\n", start))
                fence = False
            else:
                body.append(line)
        elif line.startswith("```"):
            fence, lang, start, body = True, line[3:].strip(), number + 1, []
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    assert not fence, "README.md has an unclosed code fence"
    return blocks


def blocks_to_run() -> list[Block]:
    """The code blocks of README.md that the reader runs, in order."""
    return [b for b in readme_blocks() if b.kind is not None and b.key not in NOT_RUN]


def command_words(line: str) -> list[str]:
    """A shell line's words without comments and without a trailing ``&``."""
    words = shlex.split(line, comments=True)
    return words[:-1] if words and words[-1] == "&" else words


def summary_line(fragment: str) -> str:
    """The line of the "Command line" summary holding ``fragment``."""
    (summary,) = [b for b in readme_blocks() if b.key == ("Command line", "bash")]
    lines = [line for line in summary.code.splitlines() if command_words(line)[:1] == ["ytqueue"] and fragment in line]
    assert len(lines) == 1, f"expected one line with {fragment!r} in README's Command line block: {lines}"
    return lines[0]


class Placeholders:
    """The README's server addresses and the servers of this test (see the module docstring). A server is asked for
    its address (and so started) only when a block names it: the early examples run without the later servers."""

    def __init__(self, mapping: dict[str, Callable[[], str]]) -> None:
        self.mapping = dict(mapping)
        keys = sorted(self.mapping, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(k) for k in keys))

    def __call__(self, text: str) -> str:
        """``text`` with every server address replaced, in one pass."""
        return self._pattern.sub(lambda m: self.mapping[m.group(0)](), text)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the reader ------------------------------------------------------------------------------------------------


@dataclass
class Background:
    """A command the reader started with ``&``: the process and everything it printed so far."""

    line: str
    process: subprocess.Popen
    output: list[str] = field(default_factory=list)


class Reader:
    """Someone following the README in a fresh directory: a shell (its environment) and one Python session."""

    def __init__(self, workdir: Path, places: Placeholders) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True)
        self.places = places
        self.env = dict(os.environ, COLUMNS="200", PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
        self.env.pop("YT_PROXY", None)  # only the README's own `export` sets it
        self.env.pop("YT_TOKEN", None)
        self.background: list[Background] = []
        self.python: subprocess.Popen | None = None
        self._replies: queues.Queue[str | None] = queues.Queue()
        self.python_log = workdir.parent / "python-session.log"

    # shell ---------------------------------------------------------------------------------------------------

    def shell(self, line: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run one shell line (addresses substituted) in the reader's directory and environment; it must succeed."""
        command = self.places(line)
        words = shlex.split(command, comments=True)
        if not words:
            return subprocess.CompletedProcess(line, 0, "", "")
        if words[0] == "export":
            for assignment in words[1:]:
                name, _, value = assignment.partition("=")
                self.env[name] = value
            return subprocess.CompletedProcess(line, 0, "", "")
        if words[-1] == "&":
            self._start_background(line, words[:-1])
            return subprocess.CompletedProcess(line, 0, "", "")
        done = subprocess.run(
            ["bash", "-c", command], cwd=self.workdir, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"`{line}` failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        return done

    def _start_background(self, line: str, argv: list[str]) -> None:
        executable = shutil.which(argv[0], path=self.env["PATH"])
        assert executable, f"`{line}`: {argv[0]} is not on PATH"
        process = subprocess.Popen(
            [executable, *argv[1:]],
            cwd=self.workdir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        job = Background(line, process)
        self.background.append(job)
        first = threading.Event()

        def drain() -> None:
            assert process.stdout is not None
            for out in process.stdout:
                job.output.append(out)
                first.set()
            first.set()

        threading.Thread(target=drain, daemon=True).start()
        first.wait(60)
        assert job.output, f"`{line}` printed nothing within 60 s (exit status {process.poll()})"
        assert process.poll() is None, f"`{line}` exited ({process.returncode}):\n{''.join(job.output)}"

    # python --------------------------------------------------------------------------------------------------

    def run_python(self, block: Block) -> dict[str, Any]:
        """Run a Python block in the reader's Python session; the session's reply (see tests/readme_session.py)."""
        if self.python is None:
            self.python = subprocess.Popen(
                [sys.executable, str(SESSION)],
                cwd=self.workdir,
                env=dict(self.env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.python_log.open("w"),
                text=True,
            )

            def replies(stream: Any) -> None:
                for reply in stream:
                    self._replies.put(reply)
                self._replies.put(None)

            threading.Thread(target=replies, args=(self.python.stdout,), daemon=True).start()
        assert self.python.stdin is not None
        code = self.places(block.code)
        request = {"code": code, "filename": f"README.md:{block.line}", "timeout": PYTHON_BLOCK_TIMEOUT}
        self.python.stdin.write(json.dumps(request) + "\n")
        self.python.stdin.flush()
        try:
            line = self._replies.get(timeout=PYTHON_BLOCK_TIMEOUT + 120)
        except queues.Empty:
            pytest.fail(f"README.md:{block.line} ({block.heading}) did not finish; log:\n{self.log_tail()}")
        assert line is not None, f"the Python session ended at README.md:{block.line}; log:\n{self.log_tail()}"
        reply = json.loads(line)
        assert reply["ok"], f"README.md:{block.line} ({block.heading}) failed:\n{reply['error']}"
        for query in reply["queries"]:
            assert query["exception"] is None, f"README.md:{block.line}: query failed: {query['exception']}"
        return reply

    def log_tail(self, lines: int = 60) -> str:
        if not self.python_log.exists():
            return ""
        return "\n".join(self.python_log.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        """End the Python session, then interrupt the background commands (as Ctrl-C would)."""
        if self.python is not None:
            try:
                assert self.python.stdin is not None
                self.python.stdin.write(json.dumps({"exit": True}) + "\n")
                self.python.stdin.close()
                self.python.wait(60)
            except (OSError, subprocess.TimeoutExpired):
                self.python.kill()
                self.python.wait()
        for job in self.background:
            job.process.send_signal(signal.SIGINT)
            try:
                job.process.wait(20)
            except subprocess.TimeoutExpired:
                job.process.kill()
                job.process.wait()


# -- the world around the reader -------------------------------------------------------------------------------


@dataclass
class World:
    """The servers, clients and what the test produced, shared by the checks of the blocks."""

    reader: Reader
    yt_proxy: str
    request: pytest.FixtureRequest
    produced: dict[str, Any] = field(default_factory=dict)

    @property
    def kafka(self) -> str:
        return self.request.getfixturevalue("kafka_bootstrap")

    @property
    def zookeeper(self) -> Any:
        return self.request.getfixturevalue("zookeeper")

    @property
    def hbase(self) -> Any:
        return self.request.getfixturevalue("hbase")

    @property
    def kudu(self) -> Any:
        return self.request.getfixturevalue("kudu")

    @property
    def yt(self) -> Any:
        from tests.conftest import make_client

        return make_client(self.yt_proxy)

    def status(self, fragment: str) -> dict[str, list[str]]:
        """Run the README's ``ytqueue status`` line holding ``fragment``; its table."""
        return status_table(self.reader.shell(summary_line(fragment)).stdout)


# -- helpers of the checks ---------------------------------------------------------------------------------------


def status_table(output: str) -> dict[str, list[str]]:
    """The rows of a ``ytqueue status`` table: first cell (partition) -> the other cells."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) >= 5 and cells[0] and cells[0] not in ("partition", "total"):
            rows[cells[0]] = cells[1:]
    return rows


def produce_kafka(bootstrap: str, topic: str, values: list[str], timestamps: list[int] | None = None) -> None:
    """Produce ``values`` round-robin over two partitions, with record ``timestamps`` (ms) if given, else the
    producer's time (the producer is gone when this returns)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i, value in enumerate(values):
        at = {"timestamp": timestamps[i]} if timestamps is not None else {}
        producer.produce(topic, value=value.encode(), key=f"k{i}".encode(), partition=i % 2, **at)
    assert producer.flush(30) == 0


def topic_records(bootstrap: str, topic: str) -> tuple[dict[tuple[int, int], tuple[str, int]], dict[int, int]]:
    """Every record of ``topic``, read with a plain consumer: (partition, offset) -> (value, timestamp in ms); and
    each partition's end offset."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"readme-check-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in partitions}
        ends = {p: high for p, (_, high) in marks.items()}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        wanted = sum(high - low for low, high in marks.values())
        records: dict[tuple[int, int], tuple[str, int]] = {}
        deadline = time.monotonic() + 60
        while len(records) < wanted and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error() is not None:
                continue
            value = message.value()
            records[(message.partition(), message.offset())] = (value.decode(), message.timestamp()[1])
        assert len(records) == wanted, f"read {len(records)} of the {wanted} records of {topic}"
    finally:
        consumer.close()
    return records, ends


def tablet_ends(yt: Any, queue: str) -> dict[int, int]:
    tablets = int(yt.get(f"{queue}/@tablet_count"))
    infos = yt.get_tablet_infos(queue, list(range(tablets)))["tablets"]
    return {i: int(t["total_row_count"]) for i, t in enumerate(infos)}


def produce_yt(yt: Any, queue: str, tag: str, per_tablet: int = 3) -> dict[str, tuple[int, int]]:
    """Insert ``per_tablet`` rows into every tablet of ``queue``; payload -> (tablet, row index)."""
    tablets = int(yt.get(f"{queue}/@tablet_count"))
    before = yt.get_tablet_infos(queue, list(range(tablets)))["tablets"]
    rows, where = [], {}
    for tablet in range(tablets):
        for i in range(per_tablet):
            payload = f"{tag}-{tablet}-{i}"
            rows.append({"$tablet_index": tablet, "id": len(rows), "payload": payload})
            where[payload] = (tablet, int(before[tablet]["total_row_count"]) + i)
    yt.insert_rows(queue, rows)
    return where


QUEUE, CONSUMER = "//home/me/queue", "//home/me/consumer"


def lag_is_zero(world: World) -> None:
    """The README's status line for the queue shows every tablet at its end (lag 0)."""
    table = world.status("status --queue")
    ends = tablet_ends(world.yt, QUEUE)
    assert {int(p): (int(cells[0]), int(cells[3])) for p, cells in table.items()} == {
        tablet: (end, 0) for tablet, end in ends.items()
    }, table


def one_query(reply: dict) -> None:
    """The block started one streaming query (which ran without an error: checked by :meth:`Reader.run_python`)."""
    assert len(reply["queries"]) == 1, f"expected the block to start one streaming query: {reply['queries']}"


def log_payloads(world: World) -> list[str]:
    return [r["payload"] for r in world.yt.select_rows("payload from [//home/me/log]")]


def after_server_and_queue(world: World, _: Any) -> None:
    (server,) = world.reader.background
    assert "ytqueue local server: proxy=" in server.output[0], server.output
    # The comment's promise: the data lands in ./ytqueue-data unless --data-dir says otherwise.
    assert (world.reader.workdir / "ytqueue-data").is_dir(), "`ytqueue local` did not keep its data in ./ytqueue-data"
    yt = world.yt
    attributes = yt.get(QUEUE, attributes=["dynamic", "sorted", "tablet_count", "schema"]).attributes
    assert attributes["dynamic"] and not attributes["sorted"] and attributes["tablet_count"] == 4
    assert [c["name"] for c in attributes["schema"] if not c["name"].startswith("$")] == ["id", "payload"]
    from spyt_queue.yt.admin import consumer_registered

    assert consumer_registered(yt, QUEUE, CONSUMER)


def before_reading(world: World) -> None:
    world.produced["read"] = produce_yt(world.yt, QUEUE, "read")


def after_reading(world: World, reply: dict) -> None:
    payloads = {row["payload"] for row in reply["streams"]["df"]}
    assert set(world.produced["read"]) <= payloads, sorted(set(world.produced["read"]) - payloads)
    lag_is_zero(world)  # a finished AvailableNow run leaves the consumer at the end


def before_zookeeper(world: World) -> None:
    world.produced["zk"] = produce_yt(world.yt, QUEUE, "zk")


def after_zookeeper(world: World, reply: dict) -> None:
    payloads = {row["payload"] for row in reply["streams"]["_"]}
    assert set(world.produced["zk"]) <= payloads, sorted(set(world.produced["zk"]) - payloads)
    # Positions are committed below <root>/<group>/offsets/<source id>/<partition>: /spyt/enricher here.
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=world.zookeeper.hosts)
    zk.start(timeout=15)
    try:
        (source,) = zk.get_children("/spyt/enricher/offsets")
        committed = {
            int(p): int(zk.get(f"/spyt/enricher/offsets/{source}/{p}")[0])
            for p in zk.get_children(f"/spyt/enricher/offsets/{source}")
        }
    finally:
        zk.stop()
        zk.close()
    assert committed == tablet_ends(world.yt, QUEUE)


def before_kafka(world: World) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": world.kafka})
    admin.create_topics([NewTopic("events", 2, 1)])["events"].result(30)
    deadline = time.time() + 30
    while time.time() < deadline:
        topic = admin.list_topics("events", timeout=10).topics.get("events")
        if topic is not None and topic.error is None and len(topic.partitions) == 2:
            break
        time.sleep(0.2)
    world.produced["kafka"] = [f"readme-{i}" for i in range(10)]
    produce_kafka(world.kafka, "events", world.produced["kafka"])


def after_kafka(world: World, reply: dict) -> None:
    assert sorted(row["value"] for row in reply["streams"]["df"]) == sorted(world.produced["kafka"])
    # Progress is committed to the group: the README's status command shows lag 0 on both partitions.
    table = world.status("status --bootstrap-servers")
    assert len(table) == 2 and all(cells[-1] == "0" for cells in table.values()), table
    assert sum(int(cells[0]) for cells in table.values()) == len(world.produced["kafka"]), table


def after_tables(world: World, _: Any) -> None:
    yt = world.yt
    assert yt.exists("//home/me/producer")
    out = yt.get("//home/me/out", attributes=["sorted", "key_columns"]).attributes
    assert out["sorted"] and list(out["key_columns"]) == ["src_tablet", "src_row"]
    log = yt.get("//home/me/log", attributes=["sorted", "tablet_count"]).attributes
    assert not log["sorted"] and log["tablet_count"] == 2


def before_writing(world: World) -> None:
    world.produced["write"] = produce_yt(world.yt, QUEUE, "write")


def after_writing(world: World, reply: dict) -> None:
    one_query(reply)
    out = {r["payload"]: (r["src_tablet"], r["src_row"]) for r in world.yt.select_rows("* from [//home/me/out]")}
    produced = world.produced["write"]
    assert {p: out.get(p) for p in produced} == produced  # keyed by the source position, as the README says
    assert sorted(log_payloads(world)) == ["hello", "world"]  # the batch write, appended to the fresh table


def before_transactional(world: World) -> None:
    world.produced["a"] = produce_yt(world.yt, QUEUE, "a-tx")
    world.produced["b"] = produce_yt(world.yt, QUEUE, "b-tx")


def after_transactional(world: World, reply: dict) -> None:
    one_query(reply)
    logged = log_payloads(world)
    # The filter kept the a-rows (each once) and none of the b-rows.
    assert sorted(p for p in logged if "-tx-" in p) == sorted(world.produced["a"]), logged
    lag_is_zero(world)  # the consumer advanced with the batches


def before_dead_letter(world: World) -> None:
    yt = world.yt
    world.produced["dl"] = produce_yt(yt, QUEUE, "dl")
    yt.insert_rows(QUEUE, [{"$tablet_index": 0, "id": 99, "payload": b"\xff\xfe"}])  # invalid UTF-8 for a string


def after_dead_letter(world: World, reply: dict) -> None:
    one_query(reply)
    yt = world.yt
    letters = list(yt.select_rows("* from [//home/me/dead]"))
    assert len(letters) == 1, letters
    assert letters[0]["stage"] == "source" and "payload" in letters[0]["error"], letters[0]
    logged = log_payloads(world)
    assert set(world.produced["dl"]) <= set(logged), sorted(set(world.produced["dl"]) - set(logged))
    lag_is_zero(world)


def before_hbase(world: World) -> None:
    values = [f"hbase-{i}" for i in range(8)]
    # Distinct record times, one per record, in the last minute: records older than the topic's retention (7 days)
    # would be deleted by the broker before the query reads them.
    start = int(time.time()) * 1000 - 60_000
    produce_kafka(world.kafka, "events", values, [start + 1000 * i for i in range(len(values))])
    # The block reads `events` from the earliest offset: the Kafka block's records are read too.
    world.produced["hbase"] = topic_records(world.kafka, "events")


def after_hbase(world: World, reply: dict) -> None:
    one_query(reply)
    records, ends = world.produced["hbase"]
    connection = world.hbase.connection()
    try:
        cells = {key.decode(): data for key, data in connection.table("events").scan(include_timestamp=True)}
    finally:
        connection.close()
    # Row "<partition>|<offset>" per record; d:payload (UTF-8) and d:event_time (int64 microseconds), both at the
    # record's timestamp (ms).
    assert sorted(cells) == sorted(f"{p}|{o}" for p, o in records)
    for (partition, offset), (value, at) in records.items():
        assert cells[f"{partition}|{offset}"] == {
            b"d:payload": (value.encode(), at),
            b"d:event_time": (struct.pack(">q", at * 1000), at),
        }, (partition, offset)
    committed = committed_positions(
        {
            "kafka.bootstrap.servers": world.kafka,
            "subscribe": "events",
            "offsets.store": world.hbase.uri("spyt_offsets"),
        }
    )
    assert committed == {f"events:{p}": end for p, end in ends.items()}


def committed_positions(source_options: dict[str, str]) -> dict[str, int]:
    """The positions committed for a source, as its offset store reads them."""
    from spyt_queue.connect import backend_for, store_for
    from spyt_queue.options import Options

    source = Options(source_options)
    store = store_for(source, backend_for(source, streaming=True))
    assert store is not None
    try:
        return dict(store.committed())
    finally:
        store.close()


USERS = "//home/me/users"
# Microseconds since the epoch: user 1 changes name at 11:00, user 2 has one version (2026-01-01, UTC).
T10, T11 = 1_767_261_600_000_000, 1_767_265_200_000_000


def after_users_queue(world: World, _: Any) -> None:
    schema = world.yt.get(f"{USERS}/@schema")
    assert [(c["name"], c["type"]) for c in schema if not c["name"].startswith("$")] == [
        ("user_id", "int64"),
        ("updated_at", "timestamp"),
        ("name", "string"),
        ("email", "string"),
    ]


def before_kudu(world: World) -> None:
    world.yt.insert_rows(
        USERS,
        [
            {"$tablet_index": 0, "user_id": 1, "updated_at": T10, "name": "Ann", "email": "ann@example.com"},
            {"$tablet_index": 1, "user_id": 2, "updated_at": T10, "name": "Bob", "email": "bob@example.com"},
            {"$tablet_index": 0, "user_id": 1, "updated_at": T11, "name": "Ann Lee", "email": "ann@example.com"},
        ],
    )


def after_kudu(world: World, reply: dict) -> None:
    one_query(reply)
    from spyt_queue.sinks.kudu.client import get_client

    stored = get_client(world.kudu.master_addresses).table("users").read_all()
    history = sorted((r["user_id"], str(r["updated_at"]), r["name"], r["is_current"]) for r in stored)
    assert [(user, name, current) for user, _, name, current in history] == [
        (1, "Ann", False),
        (1, "Ann Lee", True),
        (2, "Bob", True),
    ], stored
    committed = committed_positions(
        {
            "proxy": world.yt_proxy,
            "path": USERS,
            "offsets.store": world.kudu.uri("spyt_offsets"),
            "offsets.group": "users",
        }
    )
    assert committed == {"0": 2, "1": 1}, committed


Check = tuple[Callable[[World], None] | None, Callable[[World, Any], None]]
# (heading, kind) -> what the world does before the block, and what is checked after it.
CHECKS: dict[tuple[str, str], Check] = {
    ("Reading a queue", "shell"): (None, after_server_and_queue),
    ("Reading a queue", "python"): (before_reading, after_reading),
    ("Where offsets are kept: `offsets.store`", "python"): (before_zookeeper, after_zookeeper),
    ("Reading and writing Kafka", "python"): (before_kafka, after_kafka),
    ("Writing to YTsaurus", "shell"): (None, after_tables),
    ("Writing to YTsaurus", "python"): (before_writing, after_writing),
    ("Transactional exactly-once: rows and consumer advance in one transaction", "python"): (
        before_transactional,
        after_transactional,
    ),
    ("Bad records: stop, or divert to a dead-letter target", "python"): (before_dead_letter, after_dead_letter),
    ('Writing to HBase: `format("spyt_hbase")`', "python"): (before_hbase, after_hbase),
    ('Writing to Kudu: `format("spyt_kudu")`, and the `kudu://` offset store', "shell"): (None, after_users_queue),
    ('Writing to Kudu: `format("spyt_kudu")`, and the `kudu://` offset store', "python"): (before_kudu, after_kudu),
}


# -- the tests ---------------------------------------------------------------------------------------------------


def test_every_code_block_is_run_or_listed() -> None:
    blocks = readme_blocks()
    unmarked = [f"README.md:{b.line - 1}" for b in blocks if not b.lang]
    assert not unmarked, f"code fences without a language (mark output samples ```text): {unmarked}"
    unknown = [(f"README.md:{b.line - 1}", b.lang) for b in blocks if b.kind is None and b.lang not in NOT_CODE_LANGS]
    assert not unknown, f"fence languages this test neither runs nor knows as not code: {unknown}"
    keys = [b.key for b in blocks if b.kind is not None]
    assert len(keys) == len(set(keys)), f"two blocks of one language under one heading: {keys}"
    stale = set(NOT_RUN) - set(keys)
    assert not stale, f"NOT_RUN lists blocks that are gone from README.md (heading renamed?): {sorted(stale)}"
    # Every code block not listed in NOT_RUN is run by test_readme_examples_in_order, and checked there:
    unchecked = {(b.heading, b.kind) for b in blocks_to_run()} - set(CHECKS)
    assert not unchecked, f"README code blocks run without a check of what they did (add one to CHECKS): {unchecked}"
    gone = set(CHECKS) - {(b.heading, b.kind) for b in blocks_to_run()}
    assert not gone, f"CHECKS for blocks that are gone from README.md: {sorted(gone)}"


def test_command_line_summary_is_what_the_examples_run() -> None:
    (summary,) = [b for b in readme_blocks() if b.key == ("Command line", "bash")]
    summary_at = summary.line
    ran = {
        tuple(command_words(line))
        for b in blocks_to_run()
        if b.kind == "shell" and b.line < summary_at
        for line in b.code.splitlines()
    }
    for line in summary.code.splitlines():
        words = command_words(line)
        if not words or " ".join(words) in SUMMARY_LINES_NOT_RUN:
            continue
        if any(fragment in line for fragment in SUMMARY_LINES_RUN_BY_CHECKS):
            continue
        assert tuple(words) in ran, f"README's Command line block: `{line.strip()}` is in no example block above it"


def test_readme_examples_in_order(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The README's blocks in order against its own ``ytqueue local`` and the session's Kafka, ZooKeeper, HBase and
    Kudu (fixtures ``kafka_bootstrap``, ``zookeeper``, ``hbase``, ``kudu``, started when a block first names them)."""
    port = free_port()
    places = Placeholders(
        {
            "localhost:8000": lambda: f"localhost:{port}",
            "--port 8000": lambda: f"--port {port}",
            "localhost:9092": lambda: world.kafka,
            "zk1:2181,zk2:2181": lambda: world.zookeeper.hosts,
            "hbase-thrift:9090": lambda: world.hbase.thrift_address,
            "kudu-master:7051": lambda: world.kudu.master_addresses,
        }
    )
    reader = Reader(tmp_path / f"reader-{uuid.uuid4().hex[:6]}", places)
    world = World(reader, f"localhost:{port}", request)
    try:
        for block in blocks_to_run():
            before, after = CHECKS[(block.heading, block.kind)]
            if before is not None:
                before(world)
            if block.kind == "shell":
                for line in block.code.splitlines():
                    reader.shell(line)
                after(world, None)
            else:
                after(world, reader.run_python(block))
    finally:
        reader.close()
