"""The README and the reference pages in docs/, followed as a reader follows them: every code block, in order.

The reader reads README.md top to bottom, then the pages of ``docs/`` in the order of the index ``docs/README.md``
(its links to ``*.md`` files, in order): one shell, one Python session, one world of servers for all of them. Every
```python and ```bash/```sh block of these pages runs in ``test_readme_examples_in_order``, in that order, unless
``NOT_RUN`` lists it with the reason. Output samples are fenced as ```text; a fence without a language, or with one
this test does not know, fails ``test_every_code_block_is_run_or_listed``, which covers README.md, every
``docs/*.md`` and CONTRIBUTING.md (pages outside the reading order may hold only blocks listed in ``NOT_RUN``).
Blocks are named by file and heading (``NOT_RUN`` and ``CHECKS`` are keyed by ``(file, heading, language)``), and
every failure names the file and line (``docs/kafka.md:42``). Nothing of the pages is rewritten except the addresses
of servers, by one plain text substitution (longest value first):

=====================================  ==============================================================================
page value                             what the test uses
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
* runs Python blocks in one fresh Python process (``tests/docs/readme_session.py``), started at the first Python block
  with the shell's environment of that moment: the README itself creates the SparkSession and the checkpoint folder;
* after each Python block does what a reader does to see it work: the queries it started run until the data
  available is processed (``processAllAvailable()``) and are stopped; a block that starts none has the streams it
  defines run into a memory table with ``Trigger.AvailableNow``. What the block printed comes back with the reply.

The pages put every row and record they read into their queues and topics themselves (``ytqueue produce``, the
Kafka page's producer), so each block shows its effect against the state the earlier blocks left; the test only
checks, after each block, that what the block promises is there (rows shown, rows written, progress committed where
the page says), so a block that showed nothing fails its check. The HBase page's block reads the Kafka topic from its
earliest offset, with records the test adds.

The "Command line" block of docs/cli.md is the summary of the commands and is not run in its place (a reader who
followed the examples already has the server and the tables; running it again would start a second server on the
same port and fail on existing tables). ``test_command_line_summary_is_what_the_examples_run`` checks that each of its
lines is a line of a block run before it, one of the ``status`` lines the checks run, or ``ytqueue demo``
(tests/docs/test_demo.py). ``test_relative_links_resolve`` checks that every relative link of these pages names an
existing file, and an existing heading where it has an anchor.
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

from spyt_queue.spark.compat import HAS_READ_LIMITS

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
DOCS_INDEX = DOCS / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
SESSION = Path(__file__).with_name("readme_session.py")
VENV_BIN = Path(sys.executable).parent

PYTHON_LANGS = {"python", "py", "python3"}
SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh"}
NOT_CODE_LANGS = {"text", "json", "yaml", "toml", "ini", "csv", "diff"}

# (file, section heading, language) of the blocks that are not run, with the reason.
NOT_RUN = {
    ("README.md", "Set-up: two commands on a fresh machine", "bash"): (
        "`make demo` / `make test` build .venv and run the demo and the whole suite (this test among them): "
        "tests/docs/test_demo.py runs the demo, tests/packaging/ a fresh install"
    ),
    ("README.md", "From a checkout", "bash"): (
        "builds .venv (the reader's environment is that venv, activated); tests/packaging/ checks an editable install "
        "made from a copy of the checkout"
    ),
    ("README.md", "Into another environment", "bash"): (
        "builds a wheel and installs it into another environment: tests/packaging/ builds the wheel the same way "
        "(pip wheel --no-deps) and checks it in a fresh virtual environment"
    ),
    ("docs/cli.md", "Command line", "bash"): (
        "the summary of the commands the examples ran (it would start a second server and create existing "
        "tables); test_command_line_summary_is_what_the_examples_run checks it line by line"
    ),
    ("docs/clusters.md", "Deploying the package to executors", "bash"): (
        "installs into /opt/spyt on every machine of a Spark cluster; tests/clusters/standalone/ runs this recipe "
        "against a local standalone cluster"
    ),
    ("docs/clusters.md", "Deploying the package to executors", "python"): (
        "connects to a Spark standalone master (spark://master-host:7077); tests/clusters/standalone/ runs the stream "
        "scenarios on a local standalone cluster"
    ),
    ("docs/clusters.md", "Checkpoints on HDFS", "python"): (
        "needs an HDFS: tests/yt/test_transactional_hdfs.py runs this block against the session's HDFS "
        "(hadoop-client-minicluster) and replays its last batch"
    ),
    ("docs/clusters.md", "Spark Connect", "bash"): (
        "starts a Spark Connect server: tests/clusters/connect/conftest.py starts one per session with the same "
        "launcher (integration/spark_connect.py: start-connect-server.sh --wait, PYSPARK_PYTHON = the venv's Python)"
    ),
    ("docs/clusters.md", "Spark Connect", "python"): (
        "a Connect client would turn the reader's Python process into one for the blocks after it: "
        "tests/clusters/connect/test_connect.py::test_readme_recipe runs this block against the session's Connect "
        "server"
    ),
    ("docs/reliability.md", "Reliability: the chaos suite", "bash"): (
        "the long chaos run takes an hour; tests/chaos/ runs the short one"
    ),
    ("docs/benchmarks.md", "Benchmarks", "bash"): (
        "benchmarks run for minutes on purpose and assert nothing (see bench/)"
    ),
    ("CONTRIBUTING.md", "Set-up, tests and lint", "bash"): (
        "builds .venv, installs the servers and runs the whole suite and ruff (this test among them)"
    ),
    ("CONTRIBUTING.md", "Running the tests a change concerns", "bash"): (
        "runs pytest on tests/contract/stores/ and tests/unit/, which the suite runs anyway"
    ),
}
SUMMARY = ("docs/cli.md", "Command line", "bash")
# Lines of the "Command line" summary that no block runs, with the reason.
SUMMARY_LINES_NOT_RUN = {
    "ytqueue demo": "the demo runs for about a minute; tests/docs/test_demo.py runs it and checks its report",
}
# Lines of the "Command line" summary that the checks below run (by the fragment that identifies them).
SUMMARY_LINES_RUN_BY_CHECKS = ("status --queue", "status --bootstrap-servers")

#: Variables naming this test session's Python, which a reader of another environment does not have.
FOREIGN_PYTHON_VARS = ("PYTHONPATH", "PYTHONHOME", "SPARK_HOME", "VIRTUAL_ENV")

PYTHON_BLOCK_TIMEOUT = 420.0  # seconds for one block with its queries, on a busy 2-core machine


# -- extracting the blocks -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page: the page (relative to the project), the heading it sits under, its language,
    its text and its first line."""

    file: str
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
    def key(self) -> tuple[str, str, str]:
        return (self.file, self.heading, self.lang)

    @property
    def check_key(self) -> tuple[str, str, str]:
        """The key of the block's entry in ``CHECKS``: file, heading and kind."""
        assert self.kind is not None
        return (self.file, self.heading, self.kind)

    @property
    def where(self) -> str:
        """``file:line`` of the block's fence, as a reader's editor shows it."""
        return f"{self.file}:{self.line - 1}"


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def page_blocks(path: Path) -> list[Block]:
    """Every fenced code block of one page, in order."""
    blocks: list[Block] = []
    heading, fence, lang, start, body = "", False, "", 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if fence:
            if line.strip() == "```":
                blocks.append(Block(relative(path), heading, lang, "\n".join(body) + "\n", start))
                fence = False
            else:
                body.append(line)
        elif line.startswith("```"):
            fence, lang, start, body = True, line[3:].strip(), number + 1, []
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    assert not fence, f"{relative(path)} has an unclosed code fence (opened at line {start - 1})"
    return blocks


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def markdown_links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every inline link of a page outside code blocks and code spans."""
    links, fence = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if not fence:
            links += [(number, m.group(1)) for m in LINK.finditer(re.sub(r"`[^`]*`", "``", line))]
    return links


def docs_in_reading_order() -> list[Path]:
    """The pages of docs/ in the order of the index's links."""
    pages: list[Path] = []
    for _, target in markdown_links(DOCS_INDEX):
        page = (DOCS / target.partition("#")[0]).resolve()
        if page.parent == DOCS and page.suffix == ".md" and page != DOCS_INDEX and page not in pages:
            pages.append(page)
    return pages


def reading_order() -> list[Path]:
    """The pages the reader follows, in order: README.md, then docs/ in the index's order."""
    return [README, *docs_in_reading_order()]


def all_pages() -> list[Path]:
    """Every page whose code blocks are run or listed: README.md, docs/*.md, CONTRIBUTING.md."""
    return [README, *sorted(DOCS.glob("*.md")), CONTRIBUTING]


def reading_blocks() -> list[Block]:
    """Every fenced code block of the pages of the reading order, in that order."""
    return [b for page in reading_order() for b in page_blocks(page)]


def blocks_to_run() -> list[Block]:
    """The code blocks the reader runs, in order."""
    return [b for b in reading_blocks() if b.kind is not None and b.key not in NOT_RUN]


def command_words(line: str) -> list[str]:
    """A shell line's words without comments and without a trailing ``&``."""
    words = shlex.split(line, comments=True)
    return words[:-1] if words and words[-1] == "&" else words


def summary_block() -> Block:
    """The "Command line" summary block of docs/cli.md."""
    (summary,) = [b for b in reading_blocks() if b.key == SUMMARY]
    return summary


def summary_line(fragment: str) -> str:
    """The line of the "Command line" summary holding ``fragment``."""
    summary = summary_block()
    lines = [line for line in summary.code.splitlines() if command_words(line)[:1] == ["ytqueue"] and fragment in line]
    assert len(lines) == 1, f"expected one line with {fragment!r} in the summary block at {summary.where}: {lines}"
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
    """Someone following the README in a fresh directory: a shell (its environment) and one Python session.

    ``python`` is the interpreter of the reader's activated environment (its directory first on ``PATH``, the Python
    session run by it): this test session's by default, a fresh install's in tests/packaging/test_wheel_readme.py.
    """

    def __init__(self, workdir: Path, places: Placeholders, python: Path | None = None) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True)
        self.places = places
        self.interpreter = python or Path(sys.executable)
        bin_dir = self.interpreter.parent if python else VENV_BIN
        self.env = dict(os.environ, COLUMNS="200", PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        if python:  # a user's shell with that environment activated: nothing of this test session's Python
            for name in [n for n in self.env if n.startswith("PYSPARK_") or n in FOREIGN_PYTHON_VARS]:
                del self.env[name]
            self.env["VIRTUAL_ENV"] = str(bin_dir.parent)
        self.env.pop("YT_PROXY", None)  # only the README's own `export` sets it
        self.env.pop("YT_TOKEN", None)
        self.background: list[Background] = []
        self.python: subprocess.Popen | None = None
        self._replies: queues.Queue[str | None] = queues.Queue()
        self.python_log = workdir.parent / "python-session.log"

    # shell ---------------------------------------------------------------------------------------------------

    def shell(self, line: str, timeout: float = 120, where: str = "") -> subprocess.CompletedProcess:
        """Run one shell line (addresses substituted) in the reader's directory and environment; it must succeed.
        ``where``: the line's ``file:line``, for the messages."""
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
            self._start_background(f"{where} {line}".strip(), words[:-1])
            return subprocess.CompletedProcess(line, 0, "", "")
        done = subprocess.run(
            ["bash", "-c", command], cwd=self.workdir, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"{where} `{line}` failed ({done.returncode}):\n{done.stdout}{done.stderr}"
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
        """Run a Python block in the reader's Python session; the session's reply (see tests/docs/readme_session.py)."""
        if self.python is None:
            self.python = subprocess.Popen(
                [str(self.interpreter), str(SESSION)],
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
        request = {"code": code, "filename": block.where, "timeout": PYTHON_BLOCK_TIMEOUT}
        self.python.stdin.write(json.dumps(request) + "\n")
        self.python.stdin.flush()
        try:
            line = self._replies.get(timeout=PYTHON_BLOCK_TIMEOUT + 120)
        except queues.Empty:
            pytest.fail(f"{block.where} ({block.heading}) did not finish; log:\n{self.log_tail()}")
        assert line is not None, f"the Python session ended at {block.where}; log:\n{self.log_tail()}"
        reply = json.loads(line)
        assert reply["ok"], f"{block.where} ({block.heading}) failed:\n{reply['error']}"
        for query in reply["queries"]:
            assert query["exception"] is None, f"{block.where}: query failed: {query['exception']}"
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
        """Run the ``ytqueue status`` line of the Command line summary holding ``fragment``; its table."""
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


def positions(world: World, queue: str) -> dict[str, list[tuple[int, int]]]:
    """payload -> every (tablet, row index) where it stands in ``queue``."""
    found: dict[str, list[tuple[int, int]]] = {}
    for row in world.yt.select_rows(f"* from [{queue}]"):
        found.setdefault(row["payload"], []).append((row["$tablet_index"], row["$row_index"]))
    return found


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
    """The status line for the queue (docs/cli.md, as in the README's "Check the lag") shows every tablet at its end
    (lag 0)."""
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


def after_server(world: World, _: list[str]) -> None:
    (server,) = world.reader.background
    assert "ytqueue local server: proxy=" in server.output[0], server.output
    # The comment's promise: the data lands in ./ytqueue-data unless --data-dir says otherwise.
    assert (world.reader.workdir / "ytqueue-data").is_dir(), "`ytqueue local` did not keep its data in ./ytqueue-data"
    assert world.reader.env.get("YT_PROXY") == world.yt_proxy, world.reader.env.get("YT_PROXY")


def after_queue(world: World, _: list[str]) -> None:
    yt = world.yt
    attributes = yt.get(QUEUE, attributes=["dynamic", "sorted", "tablet_count", "schema"]).attributes
    assert attributes["dynamic"] and not attributes["sorted"] and attributes["tablet_count"] == 4
    assert [c["name"] for c in attributes["schema"] if not c["name"].startswith("$")] == ["id", "payload"]
    from spyt_queue.yt.admin import consumer_registered

    assert consumer_registered(yt, QUEUE, CONSUMER)


def after_produce(world: World, _: list[str]) -> None:
    # Two lines of events.jsonl, two rows, spread round-robin over the tablets.
    assert sorted(tablet_ends(world.yt, QUEUE).values()) == [0, 0, 1, 1]


def after_reading(world: World, reply: dict) -> None:
    one_query(reply)
    shown = reply["stdout"]  # spark.table("events").show(): every row read (fewer than show()'s 20)
    wanted = ["hello", "world"]  # the two events the README produced
    missing = [p for p in wanted if not re.search(rf"\|\s*{re.escape(p)}\s*\|", shown)]
    assert not missing, f"rows not shown: {missing}\n{shown}"
    if HAS_READ_LIMITS:
        lag_is_zero(world)  # a finished AvailableNow run leaves the consumer at the end
    else:  # PySpark 4.0/4.1 (README's versions table): the run was one batch, which the next run commits
        table = world.status("status --queue")
        assert sum(int(cells[3]) for cells in table.values()) == len(wanted), table
    world.produced["read-ends"] = tablet_ends(world.yt, QUEUE)


def after_status(world: World, outputs: list[str]) -> None:
    (output,) = outputs
    table = status_table(output)
    ends = tablet_ends(world.yt, QUEUE)
    assert {int(p): int(cells[2]) for p, cells in table.items()} == ends, output
    for cells in table.values():
        committed, lag, end = cells[0], int(cells[3]), int(cells[2])
        # A stopped query leaves its consumer at most one batch behind its sink (here: that batch's rows).
        # (on PySpark 4.0/4.1 a consumer the AvailableNow read left and no batch committed since has no position)
        assert (committed == "-" and lag == end and not HAS_READ_LIMITS) or int(committed) + lag == end, output
    assert sum(int(cells[3]) for cells in table.values()) <= world.produced["streamed"], output


def after_zookeeper(world: World, reply: dict) -> None:
    payloads = sorted(row["payload"] for row in reply["streams"]["_"])
    # A new group in ZooKeeper starts at the earliest row: every event the README produced (twice each).
    assert payloads == ["hello", "hello", "world", "world"], payloads
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


def after_kafka(world: World, reply: dict) -> None:
    world.produced["kafka"] = [f"event-{i}" for i in range(10)]  # what the block produced
    assert sorted(row["value"] for row in reply["streams"]["df"]) == sorted(world.produced["kafka"])
    # Progress is committed to the group: the README's status command shows lag 0 on both partitions.
    table = world.status("status --bootstrap-servers")
    assert len(table) == 2 and all(cells[-1] == "0" for cells in table.values()), table
    assert sum(int(cells[0]) for cells in table.values()) == len(world.produced["kafka"]), table


def after_tables(world: World, _: list[str]) -> None:
    # The block's produce line: events.jsonl again, two new events after the end the README's read left.
    ends = world.produced["read-ends"]
    again = [(t, row) for p in ("hello", "world") for t, row in positions(world, QUEUE).get(p, []) if row >= ends[t]]
    assert len(again) == 2, again
    world.produced["again"] = again
    yt = world.yt
    out = yt.get("//home/me/out", attributes=["sorted", "key_columns"]).attributes
    assert out["sorted"] and list(out["key_columns"]) == ["src_tablet", "src_row"]
    log = yt.get("//home/me/log", attributes=["sorted", "tablet_count"]).attributes
    assert not log["sorted"] and log["tablet_count"] == 2


def after_producer(world: World, _: list[str]) -> None:
    assert world.yt.exists("//home/me/producer")


def after_writing(world: World, reply: dict) -> None:
    one_query(reply)
    out = sorted((r["src_tablet"], r["src_row"], r["payload"]) for r in world.yt.select_rows("* from [//home/me/out]"))
    # The two events produced again before the block, each once, keyed by its source position, as the README says;
    # on PySpark 4.0/4.1 the consumer was left before the first two (README's versions table), read here too.
    wanted = set(world.produced["again"])
    if not HAS_READ_LIMITS:
        wanted |= {(t, row) for p in ("hello", "world") for t, row in positions(world, QUEUE)[p]}
    assert len(out) == len(wanted) and {(t, row) for t, row, _ in out} == wanted, out
    assert sorted(set(p for _, _, p in out)) == ["hello", "world"], out
    world.produced["streamed"] = len(out)
    assert sorted(log_payloads(world)) == ["hello", "world"]  # the batch write, appended to the fresh table


def after_show(world: World, outputs: list[str]) -> None:
    out, log = outputs
    # Each table's rows, as the comments promise: the streamed events with their keys, the batch write's two rows.
    streamed = world.produced["streamed"]  # 2; 4 on PySpark 4.0/4.1 (see after_writing)
    assert re.search(r"\bhello\b", out) and re.search(r"\bworld\b", out), out
    assert out.rstrip().endswith(f"{streamed} rows"), out
    assert "tablet index" in log and log.rstrip().endswith("2 rows"), log
    assert re.search(r"\bhello\b", log) and re.search(r"\bworld\b", log), log


def after_transactional_events(world: World, _: list[str]) -> None:
    assert {"a-kept", "b-dropped"} <= set(positions(world, QUEUE)), "the page's two events are not in the queue"


def after_transactional(world: World, reply: dict) -> None:
    one_query(reply)
    logged = log_payloads(world)
    # The filter kept the a-event (once) and dropped the b-event; the README's batch write is still there.
    assert sorted(logged) == ["a-kept", "hello", "world"], logged
    lag_is_zero(world)  # the consumer advanced with the batches


def after_strict(world: World, _: list[str]) -> None:
    assert not world.yt.get("//home/me/strict/@sorted")
    assert {"kept", None} <= set(positions(world, QUEUE)), "the page's two events are not in the queue"


def after_dead_letter(world: World, reply: dict) -> None:
    one_query(reply)
    yt = world.yt
    assert [r["payload"] for r in yt.select_rows("payload from [//home/me/strict]")] == ["kept"]
    assert yt.exists("//home/me/dead") and not list(yt.select_rows("* from [//home/me/dead]"))  # no bad source row
    records, _ = topic_records(world.kafka, "out-dead")
    assert len(records) == 1, records  # the null payload, refused by the sink
    lag_is_zero(world)


def after_diverted(world: World, outputs: list[str]) -> None:
    shown, status = outputs
    assert re.search(r"\bkept\b", shown) and shown.rstrip().endswith("1 row"), shown
    assert "out-dead" in status and re.search(r"total\s*│\s*1\b", status), status  # the one dead letter


def before_hbase(world: World) -> None:
    # The block reads `events` from the earliest offset: the records the Kafka page's block put in, nothing added here.
    world.produced["hbase"] = topic_records(world.kafka, "events")
    assert world.produced["hbase"][0], "the Kafka page's block left no records in events"


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
            "offsets.group": "events-to-hbase",
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
    rows = sorted(
        (r["$tablet_index"], r["user_id"], r["updated_at"], r["name"])
        for r in world.yt.select_rows(f"* from [{USERS}]")
    )
    assert rows == [(0, 1, T10, "Ann"), (0, 1, T11, "Ann Lee"), (1, 2, T10, "Bob")], rows
    schema = world.yt.get(f"{USERS}/@schema")
    assert [(c["name"], c["type"]) for c in schema if not c["name"].startswith("$")] == [
        ("user_id", "int64"),
        ("updated_at", "timestamp"),
        ("name", "string"),
        ("email", "string"),
    ]


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
# (file, heading, kind) -> what the world does before the block, and what is checked after it (with the Python
# session's reply, or the outputs of the shell block's lines).
CHECKS: dict[tuple[str, str, str], Check] = {
    ("README.md", "Start the local server", "shell"): (None, after_server),
    ("README.md", "Create a queue and a consumer", "shell"): (None, after_queue),
    ("README.md", "Produce rows", "shell"): (None, after_produce),
    ("README.md", "Read with Spark", "python"): (None, after_reading),
    ("README.md", "Write to a YTsaurus table", "shell"): (None, after_tables),
    ("README.md", "Write to a YTsaurus table", "python"): (None, after_writing),
    ("README.md", "Look at a table", "shell"): (None, after_show),
    ("README.md", "Check the lag", "shell"): (None, after_status),
    ("docs/offset-stores.md", "Where offsets are kept: `offsets.store`", "python"): (None, after_zookeeper),
    ("docs/kafka.md", "Reading and writing Kafka", "python"): (None, after_kafka),
    ("docs/writing-yt.md", "Producer sessions", "shell"): (None, after_producer),
    (
        "docs/writing-yt.md",
        "Transactional exactly-once: rows and consumer advance in one transaction",
        "shell",
    ): (None, after_transactional_events),
    (
        "docs/writing-yt.md",
        "Transactional exactly-once: rows and consumer advance in one transaction",
        "python",
    ): (None, after_transactional),
    ("docs/dead-letters.md", "Bad records: stop, or divert to a dead-letter target", "shell"): (None, after_strict),
    ("docs/dead-letters.md", "Bad records: stop, or divert to a dead-letter target", "python"): (
        None,
        after_dead_letter,
    ),
    ("docs/dead-letters.md", "What was diverted", "shell"): (None, after_diverted),
    ("docs/hbase.md", 'Writing to HBase: `format("spyt_hbase")`', "python"): (before_hbase, after_hbase),
    ("docs/kudu.md", 'Writing to Kudu: `format("spyt_kudu")`, and the `kudu://` offset store', "shell"): (
        None,
        after_users_queue,
    ),
    ("docs/kudu.md", 'Writing to Kudu: `format("spyt_kudu")`, and the `kudu://` offset store', "python"): (
        None,
        after_kudu,
    ),
}


# -- the tests ---------------------------------------------------------------------------------------------------


def test_every_docs_page_is_in_the_index() -> None:
    """The reader follows docs/ through its index: a page left out of it would have its blocks never run."""
    pages = set(docs_in_reading_order())
    missing = [relative(p) for p in sorted(DOCS.glob("*.md")) if p != DOCS_INDEX and p not in pages]
    assert not missing, f"docs pages missing from {relative(DOCS_INDEX)} (add a link in reading order): {missing}"


def test_every_code_block_is_run_or_listed() -> None:
    blocks = [b for page in all_pages() for b in page_blocks(page)]
    unmarked = [b.where for b in blocks if not b.lang]
    assert not unmarked, f"code fences without a language (mark output samples ```text): {unmarked}"
    unknown = [(b.where, b.lang) for b in blocks if b.kind is None and b.lang not in NOT_CODE_LANGS]
    assert not unknown, f"fence languages this test neither runs nor knows as not code: {unknown}"
    code = [b for b in blocks if b.kind is not None]
    seen: dict[tuple[str, str, str], str] = {}
    for b in code:
        assert b.key not in seen, f"{b.where}: a second {b.lang} block under {b.heading!r} (first at {seen[b.key]})"
        seen[b.key] = b.where
    stale = set(NOT_RUN) - set(seen)
    assert not stale, f"NOT_RUN lists blocks that are gone (file or heading renamed?): {sorted(stale)}"
    # Pages outside the reading order (CONTRIBUTING.md, the docs index) are never run: their blocks must be listed.
    followed = {relative(p) for p in reading_order()}
    never_run = [b.where for b in code if b.file not in followed and b.key not in NOT_RUN]
    assert not never_run, f"code blocks outside the reading order ({relative(DOCS_INDEX)}), not in NOT_RUN: {never_run}"
    # Every code block not listed in NOT_RUN is run by test_readme_examples_in_order, and checked there:
    run = {b.check_key: b.where for b in blocks_to_run()}
    unchecked = sorted(where for key, where in run.items() if key not in CHECKS)
    assert not unchecked, f"code blocks run without a check of what they did (add one to CHECKS): {unchecked}"
    gone = set(CHECKS) - set(run)
    assert not gone, f"CHECKS for blocks that are gone (file or heading renamed?): {sorted(gone)}"


def test_command_line_summary_is_what_the_examples_run() -> None:
    summary = summary_block()
    order = reading_blocks()
    before = order[: order.index(summary)]
    ran = {
        tuple(command_words(line))
        for b in before
        if b.kind == "shell" and b.key not in NOT_RUN
        for line in b.code.splitlines()
    }
    for number, line in enumerate(summary.code.splitlines(), summary.line):
        words = command_words(line)
        if not words or " ".join(words) in SUMMARY_LINES_NOT_RUN:
            continue
        if any(fragment in line for fragment in SUMMARY_LINES_RUN_BY_CHECKS):
            continue
        assert tuple(words) in ran, f"{summary.file}:{number}: `{line.strip()}` is in no example block run before it"


def heading_anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a page: lower case, punctuation dropped, spaces as hyphens, and
    ``-1``, ``-2`` ... for repeated ones."""
    anchors: set[str] = set()
    fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            anchor, n = slug, 0
            while anchor in anchors:
                n += 1
                anchor = f"{slug}-{n}"
            anchors.add(anchor)
    return anchors


def test_relative_links_resolve() -> None:
    """Every relative link of README.md, docs/*.md and CONTRIBUTING.md names a file of the project (and, with an
    ``#anchor``, a heading of that page)."""
    broken = []
    for page in all_pages():
        for number, target in markdown_links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{relative(page)}:{number}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in heading_anchors(file):
                broken.append(f"{relative(page)}:{number}: {target} (no such heading in {relative(file)})")
            elif file.exists() and not file.resolve().is_relative_to(ROOT):
                broken.append(f"{relative(page)}:{number}: {target} (outside the project)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_readme_examples_in_order(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The README's and then docs/'s blocks in order against the README's own ``ytqueue local`` and the session's
    Kafka, ZooKeeper, HBase and Kudu (fixtures ``kafka_bootstrap``, ``zookeeper``, ``hbase``, ``kudu``, started when a
    block first names them)."""
    port = free_port()
    reader = Reader(tmp_path / f"reader-{uuid.uuid4().hex[:6]}", readme_places(port, lambda: world))
    world = World(reader, f"localhost:{port}", request)
    try:
        follow(world, blocks_to_run())
    finally:
        reader.close()


def readme_places(port: int, world: Callable[[], World]) -> Placeholders:
    """The pages' server addresses: the README's ``ytqueue local`` on ``port``, the others ``world()``'s servers."""
    return Placeholders(
        {
            "localhost:8000": lambda: f"localhost:{port}",
            "--port 8000": lambda: f"--port {port}",
            "localhost:9092": lambda: world().kafka,
            "zk1:2181,zk2:2181": lambda: world().zookeeper.hosts,
            "hbase-thrift:9090": lambda: world().hbase.thrift_address,
            "kudu-master:7051": lambda: world().kudu.master_addresses,
        }
    )


def follow(world: World, blocks: list[Block]) -> None:
    """Run ``blocks`` in order in the world's reader, each with what ``CHECKS`` does before it and checks after it."""
    reader = world.reader
    for block in blocks:
        before, after = CHECKS[block.check_key]
        if before is not None:
            before(world)
        if block.kind == "shell":
            outputs = [
                reader.shell(line, where=f"{block.file}:{number}").stdout
                for number, line in enumerate(block.code.splitlines(), block.line)
            ]
            result: Any = outputs
        else:
            result = reader.run_python(block)
        try:
            after(world, result)
        except AssertionError as error:
            raise AssertionError(
                f"{block.where} ({block.heading}): the check after the block failed: {error}"
            ) from error
