"""CPU per row of the embedded server's ``schemaful_dsv`` writer: the row writer against the columnar one.

Run: ``.venv/bin/python bench/bench_dsv_writer.py [--rows 50000] [--rounds 5] [--server-rows 400000]``.

Both writers get the same rows, decoded from the binary YSON the server stores, in one process, one after the other,
best of ``--rounds`` (process CPU time). The shapes: what the ``ytqueue`` source pulls (``$row_index``, an
``int64`` id and a 40-byte payload); the same with escapes and nulls; one column of each plain kind. The decoding of
the stored YSON into rows, which a DSV pull pays before either writer (a YSON pull sends the stored bytes as they
are), is printed beside them. Every output is checked to be the same bytes from both writers. Then, through the
embedded server (``--server-rows`` rows of the source's shape in 4 tablets, 50,000-row raw pulls with ``yt.wrapper``),
the server's CPU per row for the whole of a pull in ``schemaful_dsv`` (as the source asks for it) and in binary YSON,
one after the other. No assertions on timings.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yt.yson as yson
from yt.wrapper import SchemafulDsvFormat, YsonFormat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spyt_queue.local import LocalYtServer
from spyt_queue.local.formats import (
    _schemaful_dsv_columns,
    _schemaful_dsv_config,
    _schemaful_dsv_rows,
    dumps_fragment,
    loads_fragment,
)
from spyt_queue.yt.admin import column, create_queue
from spyt_queue.yt.backend import skip_empty_proxy_discovery
from spyt_queue.yt.client import make_yt_client

PULL = {"missing_value_mode": "print_sentinel", "missing_value_sentinel": "\\N"}  # what the source asks for


def shapes(count: int) -> dict[str, tuple[list[dict[bytes, Any]], list[str]]]:
    """Tables of ``count`` rows, as the server holds them after decoding its stored YSON."""
    rng = random.Random(1)
    plain = [{b"$row_index": i, b"id": i, b"payload": bytes(rng.choices(range(97, 123), k=40))} for i in range(count)]
    escaped = [
        {
            b"$row_index": i,
            b"id": None if i % 50 == 0 else i,
            b"payload": b"a\tb\\c\nd" * 5 if i % 10 == 0 else bytes(rng.choices(range(97, 123), k=40)),
        }
        for i in range(count)
    ]
    kinds = [
        {
            b"i": rng.randint(-(2**63), 2**63 - 1),
            b"u": yson.YsonUint64(rng.randint(0, 2**64 - 1)),
            b"b": i % 2 == 0,
            b"d": rng.random() * 1e6,
            b"s": "é" * 5,
        }
        for i in range(count)
    ]
    return {
        "source pull ($row_index, id, 40 B payload)": (plain, ["$row_index", "id", "payload"]),
        "same, 10% escapes, 2% nulls": (escaped, ["$row_index", "id", "payload"]),
        "int64, uint64, bool, double, utf-8": (kinds, ["i", "u", "b", "d", "s"]),
    }


def best_cpu(action: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """The least process CPU time of ``rounds`` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.process_time()
        result = action()
        best = min(best, time.process_time() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--server-rows", type=int, default=400_000, help="0: no server part")
    args = parser.parse_args()
    per_row = 1e6 / args.rows
    print(f"{args.rows} rows, best of {args.rounds}, CPU us/row")
    print(f"{'table':45s} {'decode':>7s} {'rows':>7s} {'columns':>8s} {'ratio':>6s}")
    for label, (table, columns) in shapes(args.rows).items():
        stored = dumps_fragment(table)
        config = _schemaful_dsv_config({"columns": columns, **PULL})
        decode, rows = best_cpu(lambda stored=stored: loads_fragment(stored), args.rounds)
        _schemaful_dsv_columns(rows, config)  # imports pyarrow outside the timing
        old, old_bytes = best_cpu(lambda rows=rows, config=config: _schemaful_dsv_rows(rows, config), args.rounds)
        new, new_bytes = best_cpu(lambda rows=rows, config=config: _schemaful_dsv_columns(rows, config), args.rounds)
        if new_bytes != old_bytes:
            raise SystemExit(f"{label}: the writers' outputs differ")
        print(f"{label:45s} {decode * per_row:7.2f} {old * per_row:7.2f} {new * per_row:8.2f} {old / new:6.2f}")
    if args.server_rows:
        server_pulls(args.server_rows)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pulls(rows: int) -> None:
    """Server CPU per row of whole pulls, DSV then YSON, through the embedded server."""
    tablets, pull = 4, 50_000
    with tempfile.TemporaryDirectory() as data, LocalYtServer(data_dir=data) as server:
        assert server.pid is not None
        client = make_yt_client(server.proxy)
        skip_empty_proxy_discovery(client)
        path = "//tmp/bench_dsv"
        create_queue(client, path, [column("id", "int64"), column("payload", "string")], tablet_count=tablets)
        rng = random.Random(2)
        for first in range(0, rows, 50_000):
            batch = [
                {"$tablet_index": i % tablets, "id": i, "payload": bytes(rng.choices(range(97, 123), k=40)).decode()}
                for i in range(first, min(rows, first + 50_000))
            ]
            client.insert_rows(path, batch)
        formats = {
            "schemaful_dsv": SchemafulDsvFormat(
                columns=["$row_index", "id", "payload"], enable_escaping=True, attributes=dict(PULL)
            ),
            "yson": YsonFormat(format="binary"),
        }
        spent_by: dict[str, list[float]] = {name: [] for name in formats}
        for _round in range(3):  # alternating; the first round also waits out the server's work after the inserts
            for name, fmt in formats.items():
                spent_by[name].append(pull_all(client, server.pid, path, tablets, rows, pull, name, fmt))
        for name, spent in spent_by.items():
            rounds = ", ".join(f"{value:.2f}" for value in spent)
            print(f"server CPU per row of a {name} pull: {min(spent[1:]):.2f} us (rounds: {rounds})")


def pull_all(client: Any, pid: int, path: str, tablets: int, rows: int, pull: int, name: str, fmt: Any) -> float:
    """The server's CPU microseconds per row for pulling every row of ``path`` in ``fmt``."""
    before, pulled = cpu_seconds(pid), 0
    for tablet in range(tablets):
        offset = 0
        while offset < rows // tablets:
            body = client.pull_queue(path, offset, tablet, max_row_count=pull, format=fmt, raw=True).read()
            count = body.count(b"\n") if name == "schemaful_dsv" else len(loads_fragment(body))
            if not count:
                break
            offset += count
            pulled += count
    return (cpu_seconds(pid) - before) / pulled * 1e6


if __name__ == "__main__":
    main()
