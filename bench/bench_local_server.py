"""Throughput of the local YTsaurus server through ``yt.wrapper``: ``insert_rows`` and ``pull_queue``.

Run: ``.venv/bin/python bench/bench_local_server.py [--rows 1000000] [--batch 50000] [--tablets 4]``.
Prints rows/s for both (goal: 200,000 rows/s each); no assertions.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from spyt_queue.local import LocalYtServer
from spyt_queue.yt.client import make_yt_client

GOAL = 200_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=50_000, help="rows per insert_rows request")
    parser.add_argument("--pull", type=int, default=100_000, help="max_row_count per pull_queue")
    parser.add_argument("--tablets", type=int, default=4)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ytqueue-bench-") as data_dir, LocalYtServer(data_dir) as server:
        client = make_yt_client(server.proxy)
        queue = "//tmp/bench/queue"
        client.create(
            "table",
            queue,
            recursive=True,
            attributes={
                "dynamic": True,
                "tablet_count": args.tablets,
                "schema": [{"name": "a", "type": "int64"}, {"name": "b", "type": "string"}],
            },
        )
        client.mount_table(queue, sync=True)
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
        began = time.perf_counter()
        for number, batch in enumerate(batches, 1):
            client.insert_rows(queue, batch)
            if number % 5 == 0 or number == len(batches):
                elapsed = time.perf_counter() - began
                print(f"  insert: {number * args.batch:>9,} rows, {number * args.batch / elapsed:>10,.0f} rows/s")
        insert_seconds = time.perf_counter() - began
        insert_rate = args.rows / insert_seconds

        infos = client.get_tablet_infos(queue, list(range(args.tablets)))["tablets"]
        began = time.perf_counter()
        pulled = 0
        for tablet, info in enumerate(infos):
            offset = 0
            while offset < info["total_row_count"]:
                rows = list(client.pull_queue(queue, offset=offset, partition_index=tablet, max_row_count=args.pull))
                if not rows:
                    break
                offset = rows[-1]["$row_index"] + 1
                pulled += len(rows)
            elapsed = time.perf_counter() - began
            print(f"  pull:   {pulled:>9,} rows, {pulled / elapsed:>10,.0f} rows/s")
        pull_rate = pulled / (time.perf_counter() - began)

        print()
        print(f"insert_rows: {insert_rate:>10,.0f} rows/s  (goal {GOAL:,})  {'OK' if insert_rate >= GOAL else 'BELOW'}")
        print(f"pull_queue:  {pull_rate:>10,.0f} rows/s  (goal {GOAL:,})  {'OK' if pull_rate >= GOAL else 'BELOW'}")


if __name__ == "__main__":
    main()
