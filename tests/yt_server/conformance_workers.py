"""Worker processes of the conformance suite's concurrency test (started with the ``spawn`` method, so
everything here must be importable and picklable; each process builds its own ``YtClient``)."""

from __future__ import annotations

import os
import traceback
from typing import Any


def queue_worker(
    proxy: str,
    queue: str,
    consumer: str,
    worker: int,
    workers: int,
    rows_per_worker: int,
    batch: int,
    barrier: Any,
    results: Any,
) -> None:
    """Write ``rows_per_worker`` rows spread over all tablets while consuming partition ``worker`` through
    ``pull_consumer`` + CAS ``advance_consumer``; after all writers are done, drain the partition.

    Puts ``("ok", worker, rows_read, final_offset, cas_advances)`` or ``("error", worker, traceback)``
    on ``results``.
    """
    try:
        from conformance import configure_client

        from spyt_queue.yt.client import make_yt_client

        client = configure_client(make_yt_client(proxy, token=os.environ.get("YT_TOKEN")))
        offset = 0
        read: list[tuple[int, int, str]] = []
        advances = 0

        def consume() -> int:
            nonlocal offset, advances
            rows = list(client.pull_consumer(consumer, queue, offset=offset, partition_index=worker, max_row_count=7))
            if not rows:
                return 0
            indexes = [row["$row_index"] for row in rows]
            if indexes != list(range(offset, offset + len(rows))):
                raise AssertionError(f"worker {worker}: pulled {indexes} at offset {offset}")
            if any(row["$tablet_index"] != worker for row in rows):
                raise AssertionError(f"worker {worker}: foreign rows {rows}")
            new_offset = offset + len(rows)
            client.advance_consumer(consumer, queue, partition_index=worker, old_offset=offset, new_offset=new_offset)
            advances += 1
            read.extend((row["$tablet_index"], row["$row_index"], row["data"]) for row in rows)
            offset = new_offset
            return len(rows)

        for start in range(0, rows_per_worker, batch):
            rows = [
                {"$tablet_index": (worker + i) % workers, "data": f"w{worker}-{i}"}
                for i in range(start, min(start + batch, rows_per_worker))
            ]
            client.insert_rows(queue, rows)
            consume()

        barrier.wait(timeout=120)
        total = client.get_tablet_infos(queue, [worker])["tablets"][0]["total_row_count"]
        guard = 0
        while offset < total:
            if consume() == 0:
                guard += 1
                if guard > 100:
                    raise AssertionError(f"worker {worker}: stuck at {offset} of {total}")
        results.put(("ok", worker, read, offset, advances))
    except BaseException:
        results.put(("error", worker, traceback.format_exc()))
