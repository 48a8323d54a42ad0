"""``ytqueue local`` runs the embedded server in the foreground, prints its proxy, and stops on Ctrl-C."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from spyt_queue.yt.client import make_yt_client


def test_ytqueue_local_serves_until_interrupted(tmp_path: Path) -> None:
    ytqueue = Path(sys.executable).with_name("ytqueue")
    process = subprocess.Popen(
        [str(ytqueue), "local", "--port", "0", "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, COLUMNS="200"),
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        proxy = None
        deadline = time.time() + 30
        while proxy is None and time.time() < deadline:
            try:
                match = re.search(r"proxy=(\S+)", lines.get(timeout=1))
            except queue.Empty:
                continue
            proxy = match.group(1) if match else None
        assert proxy, "ytqueue local did not print its proxy address within 30 s"
        client = make_yt_client(proxy)
        client.create("map_node", "//home/demo", recursive=True)
        assert client.exists("//home/demo")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert process.returncode in (0, 1, -signal.SIGINT, 130), f"unexpected exit code {process.returncode}"
    assert (tmp_path / "data").is_dir()
    # The data directory keeps what was created: a server started again on it still has it.
    second = subprocess.Popen(
        [str(ytqueue), "local", "--port", "0", "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = ""
        deadline = time.time() + 30
        while "proxy=" not in line and time.time() < deadline:
            line = second.stdout.readline()
        assert make_yt_client(re.search(r"proxy=(\S+)", line).group(1)).exists("//home/demo")
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(timeout=30)


def test_ytqueue_local_default_data_dir_is_ytqueue_data_in_the_current_directory(tmp_path: Path) -> None:
    """``ytqueue local`` without ``--data-dir`` keeps its data in ``./ytqueue-data`` (as the README says)."""
    ytqueue = Path(sys.executable).with_name("ytqueue")
    process = subprocess.Popen(
        [str(ytqueue), "local", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, COLUMNS="200"),
    )
    try:
        line = ""
        deadline = time.time() + 30
        while "proxy=" not in line and time.time() < deadline:
            line = process.stdout.readline()
        assert "data_dir=ytqueue-data" in line, line
        make_yt_client(re.search(r"proxy=(\S+)", line).group(1)).create("map_node", "//home/x", recursive=True)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert (tmp_path / "ytqueue-data").is_dir()
