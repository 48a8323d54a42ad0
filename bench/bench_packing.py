"""Where packing a batch's ranges into one task stops paying: Spark's mean ``addBatch`` per micro-batch of a YT queue
with 4 tablets, all ranges in one task vs one task per tablet, side by side for growing batch sizes.

    .venv/bin/python bench/bench_packing.py [--sizes 250,1000,5000,10000,25000] [--batches 6] [--tablets 4]

For each size ``n`` (rows per tablet per batch) a fresh queue gets ``batches * n`` rows per tablet; two streaming
queries drain it into ``noop`` (AvailableNow, ``maxOffsetsPerTrigger = tablets * n``), one with
``min_rows_per_task`` above the batch size (one task) and one with ``min_rows_per_task=0`` (one task per tablet),
alternating which goes first. ``min_rows_per_task``'s default is about where the two meet. Starts the embedded YT
server and a SparkSession (``local[2]``); asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def drain(spark: Any, proxy: str, queue: str, consumer: str, per_batch: int, pack: int, work: Path) -> list[float]:
    """Run one query to the end of the queue; ``addBatch`` ms of every batch but the first. A query whose Python
    runner did not start in time (Spark's "Python worker failed to connect back" on an overloaded machine) is
    started again, up to 3 times."""
    for attempt in range(3):
        try:
            return _drain(spark, proxy, queue, consumer, per_batch, pack, work)
        except Exception as error:  # StreamingQueryException from awaitTermination
            if "connect back" not in str(error) or attempt == 2:
                raise
            print("    (the query's Python runner did not start in time: starting it again)", flush=True)
    raise AssertionError("unreachable")


def _drain(spark: Any, proxy: str, queue: str, consumer: str, per_batch: int, pack: int, work: Path) -> list[float]:
    query = (
        spark.readStream.format("ytqueue")
        .option("proxy", proxy)
        .option("consumer_path", consumer)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_batch))
        .option("min_rows_per_task", str(pack))
        .load(queue)
        .writeStream.format("noop")
        .option("checkpointLocation", str(work / f"cp-{time.time_ns()}"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(1200)
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    return [p["durationMs"].get("addBatch", 0) for p in progress[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="250,1000,5000,10000,25000", help="rows per tablet per batch")
    parser.add_argument("--batches", type=int, default=6, help="micro-batches per query (the first is not counted)")
    parser.add_argument("--tablets", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from spyt_queue import register
    from spyt_queue.local import LocalYtServer
    from spyt_queue.yt.admin import column, create_consumer, create_queue
    from spyt_queue.yt.client import make_yt_client

    work = Path(tempfile.mkdtemp(prefix="packing-bench-"))
    server = LocalYtServer(data_dir=work / "yt").start()
    results: list[tuple[int, float, float]] = []
    try:
        client = make_yt_client(server.proxy)
        root = f"//tmp/bench-packing-{int(time.time())}"
        client.create("map_node", root, recursive=True)
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.streaming.numRecentProgressUpdates", "100000")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        try:
            for round_, size in enumerate(int(s) for s in args.sizes.split(",")):
                queue = f"{root}/q{size}"
                create_queue(client, queue, [column("id", "int64"), column("payload", "string")], args.tablets)
                total = size * args.batches * args.tablets
                for first in range(0, total, 50_000):
                    client.insert_rows(
                        queue,
                        [
                            {"$tablet_index": i % args.tablets, "id": i, "payload": f"payload-{i:032d}"}
                            for i in range(first, min(total, first + 50_000))
                        ],
                    )
                per_batch = size * args.tablets
                figures: dict[str, list[float]] = {}
                modes = [("packed", per_batch + 1), ("unpacked", 0)]
                for label, pack in modes if round_ % 2 == 0 else modes[::-1]:
                    consumer = f"{queue}-{label}"
                    create_consumer(client, consumer, queue)
                    figures[label] = drain(spark, server.proxy, queue, consumer, per_batch, pack, work)
                packed, unpacked = statistics.mean(figures["packed"]), statistics.mean(figures["unpacked"])
                results.append((size, packed, unpacked))
                print(
                    f"  {size:>6} rows/tablet: addBatch 1 task {packed:6.0f} ms, "
                    f"{args.tablets} tasks {unpacked:6.0f} ms",
                    flush=True,
                )
        finally:
            spark.stop()
    finally:
        server.stop()
    print(f"\nmean addBatch per micro-batch, {args.tablets} tablets, noop sink, local[2] (batches 2..{args.batches})")
    print(
        f"{'rows/tablet':>11} {'rows/batch':>10} {'1 task ms':>9} {f'{args.tablets} tasks ms':>10} {'1 task / N':>10}"
    )
    for size, packed, unpacked in results:
        print(
            f"{size:>11,} {size * args.tablets:>10,} {packed:>9.0f} {unpacked:>10.0f} "
            f"{packed / max(1.0, unpacked):>10.2f}"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
