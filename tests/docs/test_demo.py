"""The README's demo command runs end to end on the embedded server and reports nothing lost or duplicated."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.spark
def test_demo_command_reports_exact_delivery() -> None:
    ytqueue = Path(sys.executable).with_name("ytqueue")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, COLUMNS="160")
    done = subprocess.run(
        [str(ytqueue), "demo", "--events", "6000"], capture_output=True, text=True, timeout=420, env=env
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "rows in: 6000" in done.stdout and "rows out: 6000" in done.stdout
    assert "consumer lag: 0" in done.stdout and "nothing lost, nothing duplicated" in done.stdout
    # The log says what the pause while the JVM starts is, and Spark's console progress bars stay out of it.
    assert "starting Spark (a JVM: seconds on a quiet machine" in done.stdout and "Spark started in " in done.stdout
    # Query 1 is stopped by rows written, while half the events are still to come: mid-stream on any machine.
    stopped = re.search(r"query 1 stopped mid-stream after writing (\d+) of the 6000 events", done.stdout)
    assert stopped and 0 < int(stopped.group(1)) <= 3000, done.stdout[-4000:]
    assert "[Stage " not in done.stdout + done.stderr, (done.stdout + done.stderr)[-4000:]
    # Stopping query 1 on purpose is no error: no traceback, no ERROR lines, and the last line says what next.
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-4000:]
    assert not [line for line in output.splitlines() if " ERROR " in line], output[-4000:]
    last = [line for line in done.stdout.splitlines() if line.strip()][-1]
    assert last.startswith("what next:") and "README.md" in last and "ytqueue produce" in last, last
