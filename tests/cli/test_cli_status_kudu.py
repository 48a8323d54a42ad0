"""``ytqueue status --store kudu://...`` times the store, not its client's start-up, and ends cleanly (issue 32).

The Kudu store talks through the Java client in the command's own process: its JVM takes seconds to start on a busy
machine, which was counted against the store's answer time (``did not answer within 10 s ... is it healthy?``), and a
thread left inside a JPype call aborted the interpreter's shutdown (``FATAL: exception not rethrown``, SIGABRT).
The commands run in a subprocess of their own with the answer timeout lowered (and, for the first, a JVM start made
slower by a wrapper), as a user on a loaded machine meets them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from spyt_queue.yt import admin
from tests.cli.test_cli_status_stores import assert_one_line, silent_server
from tests.conftest import make_client

#: Runs ``ytqueue`` with ``STORE_ANSWER_TIMEOUT_S`` = argv[1] and a JVM start slowed by argv[2] seconds.
RUN = """
import sys, time
import spyt_queue.cli as cli
import spyt_queue.sinks.kudu.jvm as jvm

cli.STORE_ANSWER_TIMEOUT_S = float(sys.argv[1])
delay, start = float(sys.argv[2]), jvm.start_jvm

def slow_start(*args, **kwargs):
    time.sleep(delay)
    return start(*args, **kwargs)

jvm.start_jvm = slow_start
sys.argv = ["ytqueue", *sys.argv[3:]]
cli.run()  # the console script: the process is the command's own
"""


def status(proxy: str, answer_s: float, jvm_delay_s: float, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", YT_PROXY=proxy)
    command = [sys.executable, "-c", RUN, str(answer_s), str(jvm_delay_s), "status", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)


@pytest.fixture
def queue(yt_proxy: str) -> str:
    path = f"//tmp/spyt_queue_tests/status_kudu-{uuid.uuid4().hex[:8]}/queue"
    admin.create_queue(make_client(yt_proxy), path, [admin.column("a", "int64")], tablet_count=2)
    return path


def test_the_jvm_start_is_not_counted_as_the_store_answer(yt_proxy: str, queue: str, kudu) -> None:
    """A JVM start longer than the answer timeout: the status table, not "did not answer"."""
    done = status(yt_proxy, 8, 12, "--queue", queue, "--store", kudu.uri("spyt_status_offsets"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "did not answer" not in done.stderr and "FATAL" not in done.stderr, done.stderr
    assert "partition" in done.stdout and "total" in done.stdout, done.stdout


def test_a_store_that_never_answers_ends_cleanly_in_one_line(yt_proxy: str, queue: str) -> None:
    """The client thread stays blocked in the Java client: the command still exits with 1 and one line, no
    ``FATAL: exception not rethrown`` and no SIGABRT (exit code 134)."""
    with silent_server() as port:
        done = status(yt_proxy, 1, 0, "--queue", queue, "--store", f"kudu://127.0.0.1:{port}/x")
    assert_one_line(done, f"the offset store kudu://127.0.0.1:{port}/x", "did not answer within 1 s", "--store")


#: Calls ``ytqueue`` in-process, as a test runner or a notebook does, with a JVM started (the Kudu client's) and a
#: thread left behind in a client call, then says that its own process is still alive.
IN_PROCESS = """
import spyt_queue.cli as cli
import spyt_queue.sinks.kudu.jvm as jvm
from typer.testing import CliRunner

jvm.start_jvm()
cli._LEFT_BEHIND.set()
result = CliRunner().invoke(cli.app, ["--help"], prog_name="ytqueue")
print("host alive, exit code", result.exit_code)
"""


def test_a_command_called_in_process_never_ends_its_host() -> None:
    """With a JVM started, the console script ends its own process at once (``os._exit``, above); called in-process
    (``CliRunner``, a notebook) it must return like any command: ending the host made a whole pytest session stop
    with exit code 0 and no summary at the first in-process CLI test after a Kudu test."""
    done = subprocess.run([sys.executable, "-c", IN_PROCESS], capture_output=True, text=True, timeout=180)
    assert "host alive, exit code 0" in done.stdout, done.stdout + done.stderr
