"""Conformance: concurrent writers/readers in separate processes.

YTsaurus serializes appends per tablet: every committed row gets exactly one ``$row_index`` and the
indexes of a tablet are contiguous from 0 (ordered-dynamic-tables.md "Data model"); consumer offsets
are plain rows of a sorted table, so CAS advances (``old_offset``) by owners of disjoint partitions
never conflict (consumer_client.cpp ``Advance``).
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
from collections import Counter

from conformance import (
    consumer_offsets,
    create_consumer,
    create_queue,
    register_consumer,
    select,
    tablet_infos,
)
from conformance_workers import queue_worker

WORKERS = 4
ROWS_PER_WORKER = 40
BATCH = 4


def test_concurrent_processes_write_and_consume_exactly_once(yt, yt_root, yt_proxy):
    """Four spawned processes, each with its own client, insert into all tablets of one queue and
    concurrently consume their own partition with ``pull_consumer`` + CAS ``advance_consumer``. At the
    end every row is present exactly once, row indexes are contiguous per tablet, every row was read
    exactly once by the owner of its tablet, and the consumer offsets equal the tablet sizes."""
    queue = create_queue(yt, f"{yt_root}/q", tablet_count=WORKERS)
    consumer = create_consumer(yt, f"{yt_root}/c")
    register_consumer(yt, queue, consumer)

    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(WORKERS)
    results = context.Queue()
    processes = [
        context.Process(
            target=queue_worker,
            args=(yt_proxy, queue, consumer, w, WORKERS, ROWS_PER_WORKER, BATCH, barrier, results),
            daemon=True,
        )
        for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    outcomes = []
    try:
        for _ in range(WORKERS):
            outcomes.append(results.get(timeout=180))
    except queue_module.Empty:
        raise AssertionError(f"workers did not report in time; got {outcomes}") from None
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()

    errors = [o for o in outcomes if o[0] == "error"]
    assert not errors, "\n".join(o[2] for o in errors)

    written = {f"w{w}-{i}" for w in range(WORKERS) for i in range(ROWS_PER_WORKER)}
    rows = select(yt, f"* from [{queue}]")
    assert Counter(r["data"] for r in rows) == Counter(written)

    totals = [info["total_row_count"] for info in tablet_infos(yt, queue, WORKERS)]
    assert sum(totals) == WORKERS * ROWS_PER_WORKER
    for tablet in range(WORKERS):
        indexes = sorted(r["$row_index"] for r in rows if r["$tablet_index"] == tablet)
        assert indexes == list(range(totals[tablet])), f"tablet {tablet} row indexes are not contiguous"

    read = Counter()
    for _, worker, worker_rows, final_offset, advances in outcomes:
        assert final_offset == totals[worker]
        assert advances >= 1
        assert [index for _, index, _ in worker_rows] == list(range(totals[worker]))
        assert {tablet for tablet, _, _ in worker_rows} <= {worker}
        read.update(data for _, _, data in worker_rows)
    assert read == Counter(written), "every row must be consumed exactly once"

    assert consumer_offsets(yt, consumer, queue) == dict(enumerate(totals))
