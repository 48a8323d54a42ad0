"""``ytqueue local`` beyond loopback (issue 31, item 5): an unauthenticated root server on the network is refused; with
a token it warns, prints addresses clients can use (never ``0.0.0.0``) and admits only clients sending the token."""

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

import pytest
import yt.wrapper

from spyt_queue.yt.client import make_yt_client

YTQUEUE = str(Path(sys.executable).with_name("ytqueue"))
TOKEN = "lt_9fQ2xWm4Zr7Kp1Vb"  # the server's token: searched for in everything it prints


def _run(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [YTQUEUE, "local", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )


def test_a_wildcard_bind_without_a_token_is_refused(tmp_path: Path) -> None:
    """``--host 0.0.0.0`` without a token: one line naming YTQUEUE_LOCAL_TOKEN and 127.0.0.1, nothing served."""
    env = {k: v for k, v in os.environ.items() if k != "YTQUEUE_LOCAL_TOKEN"}
    process = _run("--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path / "d"), env=env)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 1, out
    assert "YTQUEUE_LOCAL_TOKEN" in out and "127.0.0.1" in out and "proxy=" not in out, out
    assert "Traceback" not in out, out


def test_a_wildcard_bind_with_a_token_warns_and_admits_only_the_token(tmp_path: Path) -> None:
    """With ``YTQUEUE_LOCAL_TOKEN``: a warning saying what the server is not safe for, ``export YT_PROXY`` with an
    address a client can use, a bogus or missing token refused (yt.wrapper's YtTokenError), the token admitted; the
    token itself is never printed."""
    env = dict(os.environ, COLUMNS="200", YTQUEUE_LOCAL_TOKEN=TOKEN)
    process = _run("--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path / "d"), env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    printed: list[str] = []
    try:
        proxy = None
        deadline = time.time() + 30
        while proxy is None and time.time() < deadline:
            try:
                printed.append(lines.get(timeout=1))
            except queue.Empty:
                continue
            match = re.search(r"export YT_PROXY=(\S+)", printed[-1])
            proxy = match.group(1) if match else None
        assert proxy, "".join(printed)
        assert proxy.startswith("127.0.0.1:"), proxy
        for token in (None, "bogus"):
            with pytest.raises(yt.wrapper.errors.YtTokenError):
                make_yt_client(proxy, token).create("map_node", "//home/intruder", recursive=True)
        client = make_yt_client(proxy, TOKEN)
        client.create("map_node", "//home/demo", recursive=True)
        assert client.exists("//home/demo") and not client.exists("//home/intruder")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    time.sleep(0.2)
    while not lines.empty():
        printed.append(lines.get())
    out = "".join(printed)
    assert "WARNING" in out and "reachable from other machines" in out and "plain HTTP" in out, out
    assert "export YT_TOKEN" in out, out
    assert TOKEN not in out, out


def test_loopback_needs_no_token_and_prints_no_warning(tmp_path: Path) -> None:
    """The default bind (127.0.0.1) stays as it was: no token, no warning."""
    env = {k: v for k, v in os.environ.items() if k != "YTQUEUE_LOCAL_TOKEN"}
    process = _run("--port", "0", "--data-dir", str(tmp_path / "d"), env=env)
    try:
        line = ""
        deadline = time.time() + 30
        while "proxy=" not in line and time.time() < deadline:
            line = process.stdout.readline()
        assert make_yt_client(re.search(r"proxy=(\S+)", line).group(1)).exists("/")
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
    assert "WARNING" not in line + out
