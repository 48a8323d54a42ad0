"""The README's examples, extracted from README.md and run for real, as written.

Every fenced code block of README.md is either run here or listed in ``NOT_EXTRACTED`` with the reason; a new block
fails ``test_every_code_block_is_run_or_listed`` until it gets one or the other. A block changed into something that
does not run fails its test: nothing below rewrites the code, apart from this one mapping of the README's
placeholder values to the servers of the test session (one plain text substitution, longest placeholder first):

=====================  =====================================================================================
README value           what the test uses
=====================  =====================================================================================
``localhost:8000``     the session's embedded YT server (fixtures ``local_yt`` / ``yt_proxy``)
``//home/me/``         a fresh Cypress directory of this module, ``//tmp/readme-<random>/``
``localhost:9092``     the session's Kafka broker (fixture ``kafka_bootstrap``)
``zk1:2181,zk2:2181``  the session's ZooKeeper (fixture ``zookeeper``; one host instead of two)
``/chk``               a fresh checkpoint directory
``--port 8000``        ``--port 0`` (any free port) for the one ``ytqueue local`` the test starts itself
``hbase-thrift:9090``  the session's HBase Thrift1 gateway (fixture ``hbase``; HBase test only)
=====================  =====================================================================================

How the blocks run:

* The ```bash block of "Command line": line by line, in the order written, each ``ytqueue`` command through a
  subprocess of the virtual environment's ``ytqueue`` with ``export``ed variables applied (``YT_PROXY``).
  ``ytqueue local`` is started in an empty directory, checked (it answers, ``./ytqueue-data`` appears) and stopped;
  every later command talks to the session's server. The commands run before any Python example, which reads what
  they create; the Kafka topic ``events`` is created by the test first (the README gives no command for topics).
* A ```python block runs with ``exec`` in a namespace holding the session's ``spark``; a stream it defines (its
  ``df``, or the value of its last expression) is run to the end of the available data with a memory sink and
  ``Trigger.AvailableNow``; a query it starts is run with ``processAllAvailable()`` and stopped. Each test then
  checks that the rows it produced arrived and that progress was committed where the README says.
* The HBase block is self-contained: it reads the Kafka topic ``events`` from the earliest offset into the HBase
  table ``events`` (created by the block's ``create_table``), with its offsets in the HBase table ``spyt_offsets``.
  The test produces records with set timestamps into the topic (which may already hold the Kafka block's records),
  then checks that every record of the topic became row ``<partition>|<offset>`` with its cells at the record's
  timestamp, and that ``spyt_offsets`` holds the topic's end offsets.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import signal
import struct
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
YTQUEUE = Path(sys.executable).with_name("ytqueue")

# (section heading, language) of every block that is run below.
RUN = {
    ("Reading a queue", "python"),
    ("Where offsets are kept: `offsets.store`", "python"),
    ("Reading and writing Kafka", "python"),
    ("Writing to YTsaurus", "python"),
    ('Writing to HBase: `format("spyt_hbase")`', "python"),
    ("Command line", "bash"),
}
# (section heading, language) -> why the block is not extracted.
NOT_EXTRACTED = {
    ("Set-up: two commands on a fresh machine", "bash"): (
        "`make demo` / `make test` build .venv and run the demo and the whole suite (this test among them): "
        "tests/test_demo.py runs the demo, tests/packaging/ a fresh install"
    ),
    ("What a failed write leaves behind", ""): "an error message shown as output, not code",
    ("Benchmarks", "bash"): "benchmarks run for minutes on purpose and assert nothing (see bench/)",
    ("Reliability: the chaos suite", "bash"): "the long chaos run takes an hour; tests/chaos/ runs the short one",
    ("Transactional exactly-once: rows and consumer advance in one transaction", "python"): (
        "shares //home/me/consumer with the block of 'Writing to YTsaurus' (two queries on one consumer conflict); "
        "tests/spark/test_transactional.py runs the same filter pipeline, replayed and SIGKILLed"
    ),
    ("Bad records: stop, or divert to a dead-letter target", "python"): (
        "needs bad rows and a Kafka broker named broker:9092; tests/spark/test_dead_letter.py runs each source and "
        "sink with a dead-letter table or topic"
    ),
    ('Writing to Kudu: `format("spyt_kudu")`, and the `kudu://` offset store', "python"): (
        "needs a queue of user rows the README does not create; tests/spark/test_kudu_stream.py runs the same "
        "pipeline (history planner, offsets in kudu://, create_table) from a ytqueue source and from Kafka"
    ),
}
# Lines of the "Command line" block that are not run, with the reason.
CLI_LINES_NOT_RUN = {
    "ytqueue demo": "the demo runs for about a minute; tests/test_demo.py runs it and checks its report",
}


# -- extracting the blocks -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README: the heading it sits under, its language, its text and first line."""

    heading: str
    lang: str
    code: str
    line: int


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


def block(heading: str, lang: str) -> Block:
    """The one block of ``lang`` under ``heading``."""
    found = [b for b in readme_blocks() if (b.heading, b.lang) == (heading, lang)]
    assert len(found) == 1, f"README.md: expected one ```{lang} block under {heading!r}, found {len(found)}"
    return found[0]


class Placeholders:
    """The README's placeholder values and what they stand for in this test session (see the module docstring)."""

    def __init__(self, proxy: str, kafka: str, zookeeper: str, checkpoint_dir: Path) -> None:
        self.root = f"//tmp/readme-{uuid.uuid4().hex[:8]}/"
        self.checkpoint_dir = checkpoint_dir
        self.mapping = {
            "localhost:8000": proxy,
            "//home/me/": self.root,
            "localhost:9092": kafka,
            "zk1:2181,zk2:2181": zookeeper,
            "/chk": str(checkpoint_dir / "chk"),
            "--port 8000": "--port 0",
        }
        keys = sorted(self.mapping, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(k) for k in keys))

    def add(self, placeholder: str, value: str) -> None:
        """One more placeholder, for a server only one test starts."""
        self.mapping[placeholder] = value
        keys = sorted(self.mapping, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(k) for k in keys))

    def __call__(self, text: str) -> str:
        """``text`` with every placeholder replaced, in one pass."""
        return self._pattern.sub(lambda m: self.mapping[m.group(0)], text)

    def path(self, readme_path: str) -> str:
        """The session path standing for a README path such as ``//home/me/queue``."""
        return self(readme_path)


# -- running the command line block ----------------------------------------------------------------------------


@dataclass
class CliRun:
    """One line of the command line block as run: the line, the substituted arguments, the result."""

    line: str
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_cli_line(line: str, places: Placeholders, env: dict[str, str]) -> CliRun:
    """Run one ``ytqueue ...`` line of the README (after substitution) with the venv's ``ytqueue``."""
    words = shlex.split(places(line), comments=True)
    assert words[0] == "ytqueue", line
    done = subprocess.run(
        [str(YTQUEUE), *words[1:]], capture_output=True, text=True, timeout=60, env=env, cwd=places.checkpoint_dir
    )
    return CliRun(line, words, done.returncode, done.stdout, done.stderr)


def run_local_line(line: str, places: Placeholders, workdir: Path) -> CliRun:
    """Start ``ytqueue local`` as written (on a free port) in an empty directory, check it serves, stop it."""
    from tests.conftest import make_client

    words = shlex.split(places(line), comments=True)
    env = dict(os.environ, COLUMNS="200")
    env.pop("YT_PROXY", None)
    process = subprocess.Popen(
        [str(YTQUEUE), *words[1:]], cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # "ytqueue local server: proxy=127.0.0.1:PORT data_dir=..."
        match = re.search(r"proxy=(\S+)", first)
        assert match, f"`{line}` printed {first!r}"
        assert make_client(match.group(1)).exists("/"), f"`{line}`: the server does not answer"
        # The comment's promise: the data lands in ./ytqueue-data unless --data-dir says otherwise.
        if "--data-dir" not in words:
            assert (workdir / "ytqueue-data").is_dir(), f"`{line}` did not keep its data in ./ytqueue-data"
    finally:
        process.send_signal(signal.SIGINT)  # "until interrupted"
        try:
            rest, _ = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            rest, _ = process.communicate()
    return CliRun(line, words, 0, first + (rest or ""), "")


def run_cli_block(places: Placeholders, workdir: Path) -> list[CliRun]:
    """Every line of the "Command line" block, in order (``export`` applied, listed lines not run)."""
    env = dict(os.environ, COLUMNS="200")
    env.pop("YT_PROXY", None)  # only the block's own `export` sets it
    runs = []
    for line in block("Command line", "bash").code.splitlines():
        words = shlex.split(line, comments=True)
        if not words or " ".join(words) in CLI_LINES_NOT_RUN:
            continue
        if words[0] == "export":
            for assignment in shlex.split(places(line), comments=True)[1:]:
                name, _, value = assignment.partition("=")
                env[name] = value
            continue
        if words[:2] == ["ytqueue", "local"]:
            runs.append(run_local_line(line, places, workdir))
        else:
            runs.append(run_cli_line(line, places, env))
    return runs


def status_table(output: str) -> dict[str, list[str]]:
    """The rows of a ``ytqueue status`` table: first cell (partition) -> the other cells."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) >= 5 and cells[0] and cells[0] not in ("partition", "total"):
            rows[cells[0]] = cells[1:]
    return rows


# -- running a Python block ------------------------------------------------------------------------------------


def exec_block(heading: str, places: Placeholders, **names: Any) -> tuple[dict[str, Any], Any]:
    """Run the python block under ``heading`` (substituted); return its namespace and its last expression's value."""
    found = block(heading, "python")
    source = places(found.code)
    tree = ast.parse(source, filename=f"README.md (block at line {found.line})")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    namespace: dict[str, Any] = dict(names)
    filename = f"README.md:{found.line}"
    exec(compile(ast.Module(body=tree.body, type_ignores=[]), filename, "exec"), namespace)
    value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace) if last else None
    return namespace, value


def run_stream_available_now(df: Any, name: str) -> list[Any]:
    """Run a streaming DataFrame into a memory table until the data available at start is processed; its rows."""
    assert df.isStreaming, "the example should define a streaming DataFrame"
    query = df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(100), f"{name}: the AvailableNow run did not finish"
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    return df.sparkSession.table(name).collect()


# -- fixtures ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def places(yt_proxy: str, kafka_bootstrap: str, zookeeper: Any, tmp_path_factory: pytest.TempPathFactory):
    """The placeholder mapping of this module's session."""
    return Placeholders(yt_proxy, kafka_bootstrap, zookeeper.hosts, tmp_path_factory.mktemp("readme"))


@pytest.fixture(scope="module")
def cli_runs(places: Placeholders, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> list[CliRun]:
    """The "Command line" block, run once before any Python example (which reads what it creates)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic("events", 2, 1)])["events"].result(30)  # the README gives no topic command
    deadline = time.time() + 30
    while time.time() < deadline:
        topic = admin.list_topics("events", timeout=10).topics.get("events")
        if topic is not None and topic.error is None and len(topic.partitions) == 2:
            break
        time.sleep(0.2)
    return run_cli_block(places, tmp_path_factory.mktemp("ytqueue-local"))


@pytest.fixture
def yt_client(yt_proxy: str) -> Any:
    from tests.conftest import make_client

    return make_client(yt_proxy)


def cli_line(cli_runs: list[CliRun], fragment: str) -> str:
    """The README line of the command line block holding ``fragment``."""
    lines = [run.line for run in cli_runs if fragment in run.line]
    assert len(lines) == 1, f"expected one command with {fragment!r} in README's Command line block: {lines}"
    return lines[0]


def rerun(cli_runs: list[CliRun], fragment: str, places: Placeholders) -> CliRun:
    """Run the README's command line holding ``fragment`` again, with YT_PROXY as the block exports it."""
    env = dict(os.environ, COLUMNS="200", YT_PROXY=places.mapping["localhost:8000"])
    result = run_cli_line(cli_line(cli_runs, fragment), places, env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


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


# -- the tests ---------------------------------------------------------------------------------------------------


def test_every_code_block_is_run_or_listed() -> None:
    found = [(b.heading, b.lang) for b in readme_blocks()]
    assert len(found) == len(set(found)), f"two blocks of one language under one heading: {found}"
    unknown = [key for key in found if key not in RUN and key not in NOT_EXTRACTED]
    assert not unknown, f"README code blocks neither run nor listed in NOT_EXTRACTED (with the reason): {unknown}"
    missing = (RUN | set(NOT_EXTRACTED)) - set(found)
    assert not missing, f"blocks this test expects are gone from README.md (heading renamed?): {sorted(missing)}"
    for key in found:
        if key in RUN:
            assert key[1] in ("python", "bash"), key


def test_command_line_block(cli_runs: list[CliRun], places: Placeholders, yt_client: Any) -> None:
    code = block("Command line", "bash").code
    ran = [run.line for run in cli_runs]
    for line in code.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "ytqueue" and " ".join(words) not in CLI_LINES_NOT_RUN:
            assert line in ran, f"not run: {line}"
    for run in cli_runs:
        assert run.returncode == 0, f"`{run.line}` failed:\n{run.stdout}{run.stderr}"

    queue, consumer = places.path("//home/me/queue"), places.path("//home/me/consumer")
    attributes = yt_client.get(queue, attributes=["dynamic", "sorted", "tablet_count", "schema"]).attributes
    assert attributes["dynamic"] and not attributes["sorted"] and attributes["tablet_count"] == 4
    assert [c["name"] for c in attributes["schema"] if not c["name"].startswith("$")] == ["id", "payload"]
    from spyt_queue.yt.admin import consumer_registered

    assert consumer_registered(yt_client, queue, consumer)
    assert yt_client.exists(places.path("//home/me/producer"))
    out = yt_client.get(places.path("//home/me/out"), attributes=["sorted", "key_columns"]).attributes
    assert out["sorted"] and list(out["key_columns"]) == ["src_tablet", "src_row"]
    log = yt_client.get(places.path("//home/me/log"), attributes=["sorted", "tablet_count"]).attributes
    assert not log["sorted"] and log["tablet_count"] == 2

    yt_status = next(run for run in cli_runs if "status --queue" in run.line)
    assert sorted(status_table(yt_status.stdout)) == ["0", "1", "2", "3"], yt_status.stdout
    kafka_status = next(run for run in cli_runs if "status --bootstrap-servers" in run.line)
    assert len(status_table(kafka_status.stdout)) == 2, kafka_status.stdout  # the 2 partitions of `events`


def test_reading_a_queue(spark: Any, cli_runs: list[CliRun], places: Placeholders, yt_client: Any) -> None:
    queue = places.path("//home/me/queue")
    produced = produce_yt(yt_client, queue, "read")
    namespace, _ = exec_block("Reading a queue", places, spark=spark)
    rows = run_stream_available_now(namespace["df"], "readme_read")
    payloads = {row["payload"] for row in rows}
    assert set(produced) <= payloads, sorted(set(produced) - payloads)
    # A finished AvailableNow run leaves the consumer at the end: the README's status command shows lag 0.
    table = status_table(rerun(cli_runs, "status --queue", places).stdout)
    ends = tablet_ends(yt_client, queue)
    assert {int(p): (int(cells[0]), int(cells[3])) for p, cells in table.items()} == {
        tablet: (end, 0) for tablet, end in ends.items()
    }, table


def test_offsets_in_zookeeper(
    spark: Any, cli_runs: list[CliRun], places: Placeholders, yt_client: Any, zookeeper: Any
) -> None:
    queue = places.path("//home/me/queue")
    produced = produce_yt(yt_client, queue, "zk")
    _, df = exec_block("Where offsets are kept: `offsets.store`", places, spark=spark)
    rows = run_stream_available_now(df, "readme_zk")
    payloads = {row["payload"] for row in rows}
    assert set(produced) <= payloads, sorted(set(produced) - payloads)
    # Positions are committed below <root>/<group>/offsets/<source id>/<partition>: /spyt/enricher here.
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper.hosts)
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
    assert committed == tablet_ends(yt_client, queue)


def test_reading_kafka(spark: Any, cli_runs: list[CliRun], places: Placeholders, kafka_bootstrap: str) -> None:
    values = [f"readme-{i}" for i in range(10)]
    produce_kafka(kafka_bootstrap, "events", values)
    namespace, _ = exec_block("Reading and writing Kafka", places, spark=spark)
    rows = run_stream_available_now(namespace["df"], "readme_kafka")
    assert sorted(bytes(row["value"]).decode() for row in rows) == sorted(values)
    # Progress is committed to the group: the README's status command shows lag 0 on both partitions.
    table = status_table(rerun(cli_runs, "status --bootstrap-servers", places).stdout)
    assert len(table) == 2 and all(cells[-1] == "0" for cells in table.values()), table
    assert sum(int(cells[0]) for cells in table.values()) == len(values), table


def test_writing_to_ytsaurus(spark: Any, cli_runs: list[CliRun], places: Placeholders, yt_client: Any) -> None:
    queue = places.path("//home/me/queue")
    produced = produce_yt(yt_client, queue, "write")
    from pyspark.sql.streaming import StreamingQuery

    before = {q.id for q in spark.streams.active}
    try:
        namespace, _ = exec_block("Writing to YTsaurus", places, spark=spark)
    except BaseException:
        for leftover in spark.streams.active:  # the block failed after starting its query
            if leftover.id not in before:
                leftover.stop()
        raise
    (query,) = [v for v in namespace.values() if isinstance(v, StreamingQuery)]
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    out = {
        r["payload"]: (r["src_tablet"], r["src_row"])
        for r in yt_client.select_rows(f"* from [{places.path('//home/me/out')}]")
    }
    assert {p: out.get(p) for p in produced} == produced  # keyed by the source position, as the README says
    # The batch write appended its DataFrame to the (fresh) ordered table.
    from pyspark.sql import DataFrame

    (written,) = [v for v in namespace.values() if isinstance(v, DataFrame) and not v.isStreaming]
    logged = [r["payload"] for r in yt_client.select_rows(f"payload from [{places.path('//home/me/log')}]")]
    assert logged and sorted(logged) == sorted(r["payload"] for r in written.collect())


def test_writing_to_hbase(
    spark: Any, cli_runs: list[CliRun], places: Placeholders, kafka_bootstrap: str, hbase: Any
) -> None:
    places.add("hbase-thrift:9090", hbase.thrift_address)
    values = [f"hbase-{i}" for i in range(8)]
    # Distinct record times, one per record, in the last minute: records older than the topic's retention (7 days)
    # would be deleted by the broker before the query reads them.
    start = int(time.time()) * 1000 - 60_000
    stamps = [start + 1000 * i for i in range(len(values))]
    produce_kafka(kafka_bootstrap, "events", values, stamps)
    # The block reads `events` from the earliest offset: the Kafka block's records (if it ran first) are read too.
    records, ends = topic_records(kafka_bootstrap, "events")
    assert sorted(value for value, _ in records.values() if value.startswith("hbase-")) == sorted(values)
    from pyspark.sql.streaming import StreamingQuery

    before = {q.id for q in spark.streams.active}
    try:
        namespace, _ = exec_block('Writing to HBase: `format("spyt_hbase")`', places, spark=spark)
    except BaseException:
        for leftover in spark.streams.active:  # the block failed after starting its query
            if leftover.id not in before:
                leftover.stop()
        raise
    (query,) = [v for v in namespace.values() if isinstance(v, StreamingQuery)]
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None, query.exception()

    connection = hbase.connection()
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

    # The positions after the last batch, as the HBase offset store of the block's source reads them.
    from spyt_queue.connect import backend_for, store_for
    from spyt_queue.options import Options
    from spyt_queue.stores.hbase import HBaseStore

    source = Options(
        {
            "kafka.bootstrap.servers": kafka_bootstrap,
            "subscribe": "events",
            "offsets.store": places("hbase://hbase-thrift:9090/spyt_offsets"),
        }
    )
    store = store_for(source, backend_for(source, streaming=True))
    try:
        assert isinstance(store, HBaseStore) and store.table == "spyt_offsets", store.describe()
        assert store.committed() == {f"events:{p}": end for p, end in ends.items()}
    finally:
        store.close()
