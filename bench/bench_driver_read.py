"""``read_mode=driver``: the driver's read of one batch, its ranges one after the other against side by side.

Run: ``.venv/bin/python bench/bench_driver_read.py [--tablets 4,16] [--rows-per-tablet 250] [--rounds 15]
[--delay-ms 0,5]``.

Against the embedded server: a queue of ``--tablets`` tablets holding ``--rows-per-tablet`` rows each, read as one
batch by ``DriverStreamReader.readBetweenOffsets`` (what ``latestOffset`` reads after planning), with one read thread
(the ranges one after the other, as before) and with ``DRIVER_READ_THREADS``, the two alternating round by round
in one process. The default packing gives one range per tablet here. ``--delay-ms``: each request also waits that
long on its way to the server (a forwarder in this process), as a request to a cluster's proxy waits on the network
and the cluster, which the embedded server, one Python process on the same machine, does not: with no delay the
pulls of a batch queue up for the server's one interpreter either way. Prints the median and p90 wall milliseconds
per batch and their ratio; no assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spyt_queue.local import LocalYtServer
from spyt_queue.options import Options
from spyt_queue.settings import ReaderSettings
from spyt_queue.spark import driver_reader
from spyt_queue.spark.compat import ReadAllAvailable
from spyt_queue.spark.driver_reader import DriverStreamReader
from spyt_queue.spark.stream_reader import QueueStreamReader
from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.client import make_yt_client
from spyt_queue.yt.options import yt_backend_from_options


def reader(proxy: str, path: str, consumer: str) -> DriverStreamReader:
    options = Options({"proxy": proxy, "path": path, "consumer_path": consumer, "startingOffsets": "earliest"})
    backend = yt_backend_from_options(options, streaming=True)
    planner = QueueStreamReader(backend, ReaderSettings.parse(options), backend.default_store())
    return DriverStreamReader(planner)


@contextlib.contextmanager
def delayed(upstream: str, delay_ms: float) -> Iterator[str]:
    """A TCP forwarder to ``upstream`` (``host:port``) holding each chunk a client sends for ``delay_ms``; yields its
    address (``upstream`` itself for no delay)."""
    if delay_ms <= 0:
        yield upstream
        return
    host, port = upstream.rsplit(":", 1)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def pump(source: socket.socket, target: socket.socket, wait: float) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if wait:
                    time.sleep(wait)
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                client, _ = listener.accept()
                server = socket.create_connection((host, int(port)))
                for end in (client, server):  # no Nagle: the delay added is the only one
                    end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                for a, b, wait in ((client, server, delay_ms / 1000), (server, client, 0.0)):
                    threading.Thread(target=pump, args=(a, b, wait), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tablets", default="4,16")
    parser.add_argument("--rows-per-tablet", type=int, default=250)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--delay-ms", default="0,5")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data, LocalYtServer(data_dir=data) as server:
        yt = make_yt_client(server.proxy)
        for tablets in map(int, args.tablets.split(",")):
            path, consumer = f"//tmp/bench_driver_read_{tablets}", f"//tmp/bench_driver_read_{tablets}_c"
            create_queue(yt, path, [column("id", "int64"), column("payload", "string")], tablet_count=tablets)
            create_consumer(yt, consumer, path)
            rows = [
                {"$tablet_index": i % tablets, "id": i, "payload": "x" * 40}
                for i in range(tablets * args.rows_per_tablet)
            ]
            yt.insert_rows(path, rows)
            for delay in map(float, args.delay_ms.split(",")):
                with delayed(server.proxy, delay) as proxy:
                    measure(proxy, path, consumer, tablets, len(rows), args, delay)


def measure(
    proxy: str, path: str, consumer: str, tablets: int, rows: int, args: argparse.Namespace, delay: float
) -> None:
    """One line: the batch read one range after the other and side by side, alternating round by round."""
    parallel = driver_reader.DRIVER_READ_THREADS
    readers = {threads: reader(proxy, path, consumer) for threads in (1, parallel)}
    start = readers[1].initialOffset()
    end = readers[1].planner.latestOffset(start, ReadAllAvailable())
    times: dict[int, list[float]] = {1: [], parallel: []}
    for round_ in range(args.rounds + 1):
        for threads, one in readers.items():
            driver_reader.DRIVER_READ_THREADS = threads  # the size of the pool this reader's first read makes
            began = time.perf_counter()
            count = sum(batch.num_rows for batch in one.readBetweenOffsets(start, end))
            if round_:  # the first round warms clients and pools up
                times[threads].append((time.perf_counter() - began) * 1000)
            if count != rows:
                raise SystemExit(f"read {count} rows of {rows}")
    driver_reader.DRIVER_READ_THREADS = parallel
    for one in readers.values():
        one.stop()
    serial, side = statistics.median(times[1]), statistics.median(times[parallel])
    p90 = {k: statistics.quantiles(v, n=10)[-1] for k, v in times.items()}
    print(
        f"{tablets:3d} tablets x {args.rows_per_tablet} rows, +{delay:g} ms per request: one after the other "
        f"{serial:6.1f} ms (p90 {p90[1]:.1f}), side by side ({parallel} threads) {side:6.1f} ms "
        f"(p90 {p90[parallel]:.1f}): {side / serial:.2f}x"
    )


if __name__ == "__main__":
    main()
