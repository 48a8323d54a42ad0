"""CPU per row of the embedded server's ``schemaful_dsv`` writer: the row writer against the columnar one.

Run: ``.venv/bin/python bench/bench_dsv_writer.py [--rows 50000] [--rounds 5]``.

Both writers get the same rows, decoded from the binary YSON the server stores, in one process, one after the other,
best of ``--rounds`` (process CPU time). The shapes: what the ``ytqueue`` source pulls (``$row_index``, an
``int64`` id and a 40-byte payload); the same with escapes and nulls; one column of each plain kind. The decoding of
the stored YSON into rows, which a DSV pull pays before either writer (a YSON pull sends the stored bytes as they
are), is printed beside them. Every output is checked to be the same bytes from both writers. No assertions on
timings.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yt.yson as yson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spyt_queue.local.formats import (
    _schemaful_dsv_columns,
    _schemaful_dsv_config,
    _schemaful_dsv_rows,
    dumps_fragment,
    loads_fragment,
)

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


if __name__ == "__main__":
    main()
