"""Throughput of the local YTsaurus server through ``yt.wrapper``: ``insert_rows`` and ``pull_queue``.

Run: ``.venv/bin/python bench/bench_local_server.py [--rows 1000000] [--batch 50000] [--pull 100000] [--tablets 4]``.

Each is measured two ways in one run, on the same server and rows:

- ``rows``: what a plain ``yt.wrapper`` user does, ``insert_rows`` of dicts and ``list(pull_queue(...))`` (the
  client encodes and parses rows one by one in Python; its cost is part of the figure);
- ``raw``: the same commands with ``raw=True`` and binary YSON bodies, parsed in one call as the ``ytqueue``
  source does (the server and transport cost, the client's per-row Python work left out).

The client skips the ``/hosts`` discovery before each heavy request when the server lists no heavy proxies (as the
source's executors do) and sends bodies uncompressed (``content_encoding=identity``: loopback). Prints rows/s and
the goals (insert 300,000 rows/s, pull 1,000,000 rows/s), and rows per CPU-second of the server, of the client
and of both together: on a machine whose cores are busy with other work the wall-time figure falls while the CPU
figures hold. No assertions.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yt.yson as yson
from yt.wrapper import YsonFormat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spyt_queue.local import LocalYtServer
from spyt_queue.yt.backend import skip_empty_proxy_discovery
from spyt_queue.yt.client import make_yt_client

INSERT_GOAL = 300_000
PULL_GOAL = 1_000_000


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def create(client, path: str, tablets: int) -> None:
    """An ordered dynamic table ``{a: int64, b: string}`` with ``tablets`` tablets, mounted."""
    client.create(
        "table",
        path,
        recursive=True,
        attributes={
            "dynamic": True,
            "tablet_count": tablets,
            "schema": [{"name": "a", "type": "int64"}, {"name": "b", "type": "string"}],
        },
    )
    client.mount_table(path, sync=True)


def insert(client, path: str, batches: list, raw: bool) -> float:
    """Seconds to insert every batch (dicts, or pre-encoded binary YSON with ``raw``)."""
    fmt = YsonFormat(format="binary")
    began = time.perf_counter()
    for batch in batches:
        if raw:
            client.insert_rows(path, batch, format=fmt, raw=True)
        else:
            client.insert_rows(path, batch)
    return time.perf_counter() - began


def pull(client, path: str, tablets: int, max_rows: int, raw: bool) -> tuple[int, float]:
    """Rows and seconds to pull every tablet to its end (parsed rows, or raw YSON parsed in one call each)."""
    infos = client.get_tablet_infos(path, list(range(tablets)))["tablets"]
    fmt = YsonFormat(format="binary")
    pulled = 0
    began = time.perf_counter()
    for tablet, info in enumerate(infos):
        offset = 0
        while offset < info["total_row_count"]:
            if raw:
                data = client.pull_queue(path, offset, tablet, max_row_count=max_rows, format=fmt, raw=True).read()
                rows = yson.loads(data, yson_type="list_fragment", always_create_attributes=False, encoding=None)
                rows = list(rows)
                key = b"$row_index"
            else:
                rows = list(client.pull_queue(path, offset=offset, partition_index=tablet, max_row_count=max_rows))
                key = "$row_index"
            if not rows:
                break
            offset = rows[-1][key] + 1
            pulled += len(rows)
    return pulled, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=50_000, help="rows per insert_rows request")
    parser.add_argument("--pull", type=int, default=100_000, help="max_row_count per pull_queue")
    parser.add_argument("--tablets", type=int, default=4)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ytqueue-bench-") as data_dir, LocalYtServer(data_dir) as server:
        client = make_yt_client(server.proxy, config={"proxy": {"content_encoding": "identity"}})
        skip_empty_proxy_discovery(client)
        print(
            f"local server {server.proxy}; {args.rows:,} rows of {{a: int64, b: 20-byte string}}, "
            f"{args.tablets} tablets, insert batches of {args.batch:,}, pulls of {args.pull:,}"
        )
        batches = []
        for start in range(0, args.rows, args.batch):
            count = min(args.batch, args.rows - start)
            tablet = (start // args.batch) % args.tablets
            batches.append(
                [{"$tablet_index": tablet, "a": i, "b": f"value-{i:014d}"} for i in range(start, start + count)]
            )
        encoded = [yson.dumps(batch, yson_type="list_fragment", yson_format="binary") for batch in batches]

        results: list[tuple[str, float, int, float, float]] = []
        assert server.pid is not None
        measures: list[tuple[str, Callable[[], tuple[int, float]], int]] = [
            ("insert_rows, rows", lambda: (args.rows, insert(client, "//tmp/bench/rows", batches, False)), INSERT_GOAL),
            ("insert_rows, raw", lambda: (args.rows, insert(client, "//tmp/bench/raw", encoded, True)), INSERT_GOAL),
            ("pull_queue, rows", lambda: pull(client, "//tmp/bench/rows", args.tablets, args.pull, False), PULL_GOAL),
            ("pull_queue, raw", lambda: pull(client, "//tmp/bench/raw", args.tablets, args.pull, True), PULL_GOAL),
        ]
        create(client, "//tmp/bench/rows", args.tablets)
        create(client, "//tmp/bench/raw", args.tablets)
        for label, measure, goal in measures:
            server_cpu, client_cpu = cpu_seconds(server.pid), time.process_time()
            rows, seconds = measure()
            server_cpu, client_cpu = cpu_seconds(server.pid) - server_cpu, time.process_time() - client_cpu
            results.append((label, rows / seconds, goal, rows / max(server_cpu, 1e-9), rows / max(client_cpu, 1e-9)))
            print(f"  {label:<18} {rows:>9,} rows in {seconds:6.2f}s")

        print()
        for label, rate, goal, server_rate, client_rate in results:
            verdict = "OK" if rate >= goal else "BELOW"
            ceiling = 1 / (1 / server_rate + 1 / client_rate)
            print(
                f"{label:<18}: {rate:>10,.0f} rows/s  (goal {goal:,})  {verdict:<5}  rows per CPU-second: "
                f"server {server_rate:>10,.0f}, client {client_rate:>10,.0f}, both {ceiling:>10,.0f}"
            )
        print(
            f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores. One client thread waits for each "
            "answer, so on idle cores rows/s approaches 'both' (rows per CPU-second of server and client together)."
        )


if __name__ == "__main__":
    main()
