"""Driver cost of one trigger and of one commit of the ``ytqueue`` source with 1, 64, 256 and 1024 partitions.

    .venv/bin/python bench/bench_scale.py [--counts 1,64,256,1024] [--runs 5] [--proxy host:port]

For each tablet count: a queue with one row in every tablet, a consumer, and the source's stream reader as Spark's
driver drives it. "trigger" is ``latestOffset`` (bounds of every tablet, planning), "commit" is ``commit(end)``
moving every partition of the consumer (one tablet transaction). Prints milliseconds and HTTP round trips of
each (counted on the client's HTTP session); the round trips must not grow with the partition count. Asserts
nothing. Without ``--proxy`` it starts the embedded local server.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.client import counting_requests, make_yt_client


def measure(proxy: str, root: str, tablets: int, runs: int) -> tuple[float, Counter[str], float, Counter[str]]:
    """Seconds and round trips (by command) of one trigger and of one commit with ``tablets`` partitions."""
    from spyt_queue.options import Options
    from spyt_queue.settings import ReaderSettings
    from spyt_queue.spark.stream_reader import QueueStreamReader
    from spyt_queue.yt.options import yt_backend_from_options

    client = make_yt_client(proxy)
    queue, consumer = f"{root}/queue{tablets}", f"{root}/consumer{tablets}"
    create_queue(client, queue, [column("id", "int64")], tablet_count=tablets)
    create_consumer(client, consumer, queue)
    options = Options({"proxy": proxy, "consumer_path": consumer, "path": queue, "startingOffsets": "earliest"})
    backend = yt_backend_from_options(options, True)
    reader = QueueStreamReader(backend, ReaderSettings.parse(options), backend.default_store())
    start = reader.initialOffset()
    reader.latestOffset(start, None)  # warm-up: schema, clients, connections
    trigger_s, commit_s = 0.0, 0.0
    trigger_calls: Counter[str] = Counter()
    commit_calls: Counter[str] = Counter()
    for run in range(runs):
        client.insert_rows(queue, [{"$tablet_index": i, "id": run} for i in range(tablets)])
        with counting_requests() as counts:
            began = time.perf_counter()
            end = reader.latestOffset(start, None)
            trigger_s += time.perf_counter() - began
        trigger_calls = counts
        with counting_requests() as counts:
            began = time.perf_counter()
            reader.commit(end)
            commit_s += time.perf_counter() - began
        commit_calls = counts
        start = end
    return trigger_s / runs, trigger_calls, commit_s / runs, commit_calls


def _calls(counts: Counter[str]) -> str:
    return f"{sum(counts.values()):>3} round trips ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--counts", default="1,64,256,1024")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--proxy", default=None)
    args = parser.parse_args()
    server = None
    proxy = args.proxy
    if proxy is None:
        from spyt_queue.local import LocalYtServer

        server = LocalYtServer(data_dir=Path(tempfile.mkdtemp(prefix="ytqueue-scale-")) / "yt").start()
        proxy = server.proxy
    try:
        root = f"//tmp/bench-scale-{int(time.time())}"
        make_yt_client(proxy).create("map_node", root, recursive=True)
        print(f"driver cost per trigger (latestOffset) and per commit, {args.runs} runs each, proxy {proxy}")
        for tablets in (int(c) for c in args.counts.split(",")):
            trigger_s, trigger_calls, commit_s, commit_calls = measure(proxy, root, tablets, args.runs)
            print(
                f"{tablets:>5} partitions: trigger {trigger_s * 1000:7.1f} ms, {_calls(trigger_calls)}\n"
                f"{'':>19}commit  {commit_s * 1000:7.1f} ms, {_calls(commit_calls)}"
            )
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
