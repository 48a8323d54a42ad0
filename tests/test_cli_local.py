"""``ytqueue local`` runs the embedded server in the foreground, prints its proxy, and stops on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from spyt_queue.ytclient import make_yt_client


def test_ytqueue_local_serves_until_interrupted(tmp_path: Path) -> None:
    ytqueue = Path(sys.executable).with_name("ytqueue")
    process = subprocess.Popen(
        [str(ytqueue), "local", "--port", "0", "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, COLUMNS="200"),
    )
    try:
        proxy = None
        for _ in range(20):
            line = process.stdout.readline()
            match = re.search(r"proxy=(\S+)", line)
            if match:
                proxy = match.group(1)
                break
        assert proxy, "ytqueue local did not print its proxy address"
        client = make_yt_client(proxy)
        client.create("map_node", "//home/demo", recursive=True)
        assert client.exists("//home/demo")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert process.returncode is not None
    assert (tmp_path / "data").is_dir()
