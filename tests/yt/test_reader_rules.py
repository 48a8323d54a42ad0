"""Reader rules that Spark runs exercise only indirectly, tested on the reader itself against the real server."""

from __future__ import annotations

import time

import pytest

from spyt_queue.errors import CommitError, DataLossError, SpytQueueError
from spyt_queue.options import Options
from spyt_queue.settings import ReaderSettings
from spyt_queue.spark.compat import ReadAllAvailable, ReadMaxRows
from spyt_queue.spark.partitions import DataLossPolicy
from spyt_queue.spark.stream_reader import QueueStreamReader
from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.options import yt_backend_from_options


@pytest.fixture
def queue(yt, yt_proxy, yt_root):
    path, consumer = f"{yt_root}/q", f"{yt_root}/c"
    create_queue(yt, path, [column("id", "int64")], tablet_count=1)
    create_consumer(yt, consumer, path)
    yt.insert_rows(path, [{"id": i} for i in range(10)])
    return {"proxy": yt_proxy, "path": path, "consumer_path": consumer}


def reader(queue: dict, **options: str) -> QueueStreamReader:
    parsed = Options({**queue, **options})
    backend = yt_backend_from_options(parsed, streaming=True)
    return QueueStreamReader(backend, ReaderSettings.parse(parsed), backend.default_store())


def test_initial_offset_is_not_committed_before_any_batch(yt, queue) -> None:
    """startingOffsets=earliest with a consumer ahead: the consumer moves only once a batch is in the sink."""
    yt.advance_consumer(queue["consumer_path"], queue["path"], partition_index=0, old_offset=0, new_offset=7)
    r = reader(queue, startingOffsets="earliest")
    initial = r.initialOffset()
    assert initial["partitions"] == {"0": 0}
    end = r.latestOffset(initial, ReadAllAvailable())
    assert end["partitions"] == {"0": 10}
    assert r.store.committed() == {"0": 7}, "the untouched initial offset must not rewind the consumer"
    r.latestOffset(end, ReadAllAvailable())  # batch 0 is in the sink: now the consumer follows the query
    assert r.store.committed() == {"0": 10}


def test_a_replayed_first_batch_reads_from_its_journaled_start(yt, queue) -> None:
    """``startingOffsets=latest``: rows that arrive between ``initialOffset`` and ``latestOffset`` form batch 0.
    When Spark replays batch 0 after a restart it hands a *recomputed* initial offset (latest has moved on); the
    batch must still cover the rows of the first run, from the start journaled in its end (issue 8.3)."""
    first = reader(queue, startingOffsets="latest")
    initial = first.initialOffset()
    assert initial["partitions"] == {"0": 10}
    yt.insert_rows(queue["path"], [{"id": i} for i in range(10, 15)])
    end = first.latestOffset(initial, ReadAllAvailable())  # batch 0 = [10, 15), logged by Spark
    assert end["partitions"] == {"0": 15} and end["batch_start"] == {"0": 10}
    yt.insert_rows(queue["path"], [{"id": i} for i in range(15, 20)])
    restarted = reader(queue, startingOffsets="latest")
    recomputed = restarted.initialOffset()
    assert recomputed["partitions"] == {"0": 20}
    (journaled,) = restarted.partitions(recomputed, end)
    task = journaled.inner  # the first batch a reader plans carries the batch journal around its ranges
    assert (task.start, task.end) == (10, 15)
    assert [i for b in restarted.read(task) for i in b.column("id").to_pylist()] == list(range(10, 15))


def test_the_final_available_now_commit_failing_fails_the_run(yt, queue) -> None:
    """The last AvailableNow check commits the last batch; if that fails there is no next trigger to retry it,
    so the run must fail instead of ending as if committed (issue 8, smaller ones)."""
    r = reader(queue, startingOffsets="earliest")
    r.committer.retries = 0
    r.prepareForTriggerAvailableNow()
    end = r.latestOffset(r.initialOffset(), ReadMaxRows(1000))
    assert end["partitions"] == {"0": 10}
    yt.unmount_table(queue["consumer_path"], sync=True)  # every advance now fails with a transient error
    try:
        with pytest.raises(CommitError, match="final commit"):
            r.latestOffset(end, ReadMaxRows(1000))
    finally:
        yt.mount_table(queue["consumer_path"], sync=True)
    assert r.latestOffset(end, ReadMaxRows(1000)) == end, "once YT is back the final check commits and ends"
    assert r.store.committed() == {"0": 10}


def test_min_rows_per_trigger_delays_until_max_trigger_delay(yt, queue) -> None:
    """The first trigger of a run is never delayed (Spark's last-trigger time starts at 0); later ones wait for
    ``minOffsetsPerTrigger`` rows, or for ``maxTriggerDelay`` since the last trigger that fired (issue 34.2)."""
    r = reader(queue, startingOffsets="earliest", minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    limit = r.getDefaultReadLimit()
    assert isinstance(limit, ReadMaxRows), "with a minimum configured, ReadAllAvailable must mean Trigger.Once"
    initial = r.initialOffset()
    first = r.latestOffset(initial, limit)
    assert first["partitions"] == {"0": 10}, "10 rows < minOffsetsPerTrigger, but the first trigger fires at once"
    yt.insert_rows(queue["path"], [{"id": i} for i in range(10, 15)])
    assert r.latestOffset(first, limit) == first, "5 rows < minOffsetsPerTrigger: no batch yet"
    assert r.latestOffset(first, ReadAllAvailable())["partitions"] == {"0": 15}, "Trigger.Once never waits"
    r._last_batch_at = time.monotonic() - 3601  # an hour has passed since the last batch
    assert r.latestOffset(first, limit)["partitions"] == {"0": 15}
    r.stop()


def test_min_rows_per_trigger_never_delays_the_first_batch_of_a_restart(yt, queue) -> None:
    """A restart resumes from its checkpoint: its first trigger reads what waits at once, not after maxTriggerDelay."""
    first_run = reader(queue, startingOffsets="earliest", minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    logged = first_run.latestOffset(first_run.initialOffset(), first_run.getDefaultReadLimit())
    first_run.stop()
    yt.insert_rows(queue["path"], [{"id": i} for i in range(10, 13)])
    restarted = reader(queue, startingOffsets="earliest", minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    limit = restarted.getDefaultReadLimit()
    following = restarted.latestOffset(logged, limit)
    assert following["partitions"] == {"0": 13}, "3 rows < minOffsetsPerTrigger, but a restart's first trigger fires"
    yt.insert_rows(queue["path"], [{"id": 13}])
    assert restarted.latestOffset(following, limit) == following, "later triggers of the run wait again"
    restarted.stop()


def test_row_index_gaps_inside_a_pull_are_reported(queue, monkeypatch) -> None:
    """Defensive check of read_range: a real YT pull never returns a gap or rows before the offset, so the
    server's answer is altered here (fault injection) to prove the check would catch it."""
    backend = reader(queue).backend
    real_pull = backend._pull

    def pull_with_gap(tablet, offset, count):
        return [row for row in real_pull(tablet, offset, count) if row[b"$row_index"] != 7]

    monkeypatch.setattr(backend, "_pull", pull_with_gap)
    with pytest.raises(DataLossError, match=r"rows \[7, 8\) of tablet 0 .* missing from a pull"):
        list(backend.read_range("0", 5, 10, DataLossPolicy(True)))
    batches = list(backend.read_range("0", 5, 10, DataLossPolicy(False)))
    assert [i for b in batches for i in b.column("id").to_pylist()] == [5, 6, 8, 9]

    monkeypatch.setattr(backend, "_pull", lambda tablet, offset, count: real_pull(tablet, offset - 2, count))
    with pytest.raises(SpytQueueError, match="asked for rows from 5 but got row 3"):
        list(backend.read_range("0", 5, 10, DataLossPolicy(True)))


def test_the_commit_of_the_last_batch_overlaps_the_bounds_of_the_next(yt, queue, monkeypatch) -> None:
    """``latestOffset`` commits ``start`` and fetches the bounds of the next batch side by side (one fixed cost per
    micro-batch instead of two), and still returns only once the commit is done. The advance here waits (bounded)
    for the bounds request to be in flight: run one after the other, it would wait in vain."""
    import threading

    r = reader(queue, startingOffsets="earliest")
    end = r.latestOffset(r.initialOffset(), ReadAllAvailable())
    bounds_in_flight, overlapped = threading.Event(), []
    real_bounds, real_advance = r.backend.bounds, r.store.advance

    def bounds():
        bounds_in_flight.set()
        return real_bounds()

    def advance(old, new, writer=None):
        overlapped.append(bounds_in_flight.wait(timeout=10))
        real_advance(old, new, writer)

    monkeypatch.setattr(r.backend, "bounds", bounds)
    monkeypatch.setattr(r.store, "advance", advance)
    yt.insert_rows(queue["path"], [{"id": i} for i in range(10, 13)])

    following = r.latestOffset(end, ReadAllAvailable())

    assert overlapped == [True]
    assert r.store.committed() == {"0": 10}, "the commit is done when latestOffset returns"
    assert following["partitions"] == {"0": 13}
    r.stop()


def test_a_conflicting_commit_still_stops_the_query_while_the_bounds_fail(yt, queue, monkeypatch) -> None:
    """Side by side, the commit's verdict comes first: a consumer moved by another query is reported even when the
    bounds request failed at the same time (transiently, which alone would only skip the trigger)."""
    from spyt_queue.errors import ConsumerConflictError

    r = reader(queue, startingOffsets="earliest")
    end = r.latestOffset(r.initialOffset(), ReadAllAvailable())
    yt.advance_consumer(queue["consumer_path"], queue["path"], partition_index=0, old_offset=0, new_offset=3)

    def bounds():
        raise TimeoutError("bounds timed out")

    monkeypatch.setattr(r.backend, "bounds", bounds)
    with pytest.raises(ConsumerConflictError):
        r.latestOffset(end, ReadAllAvailable())
    r.stop()


def test_an_empty_first_batch_never_moves_a_consumer_back(yt, queue) -> None:
    """``startingOffsets=earliest`` under a consumer that is ahead, with ``minOffsetsPerTrigger`` delaying the first
    batch: Spark runs an empty batch 0 ending at the initial offset and commits it. Nothing is in the sink, so the
    consumer stays where it is (it was moved back to the query's start)."""
    yt.advance_consumer(queue["consumer_path"], queue["path"], partition_index=0, old_offset=0, new_offset=7)
    r = reader(queue, startingOffsets="earliest", minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    initial = r.initialOffset()
    r._last_batch_at = time.monotonic()  # a trigger of this run fired already: the next one may be delayed
    end = r.latestOffset(initial, r.getDefaultReadLimit())
    assert end == initial, "10 rows < minOffsetsPerTrigger: batch 0 is empty"
    r.commit(end)
    assert r.store.committed() == {"0": 7}
    assert r.latestOffset(end, r.getDefaultReadLimit()) == end, "still delayed: the next trigger commits nothing"
    assert r.store.committed() == {"0": 7}
    r.stop()


@pytest.mark.parametrize("available_now", [True, False], ids=["available-now", "continuous"])
def test_unreachable_bounds_are_retried_then_fail_the_query(queue, monkeypatch, available_now) -> None:
    """The ends of the partitions cannot be fetched: retried ``fetchOffset.numRetries`` times
    ``fetchOffset.retryIntervalMs`` apart, then the query fails with UnreachableError. It never answers "no new
    batch" (which Spark takes for caught up: an AvailableNow run ended mid-backlog as if it had read everything)."""
    from spyt_queue.errors import UnreachableError

    r = reader(queue, startingOffsets="earliest", max_rows_per_partition="4", **{
        "fetchOffset.numRetries": "2", "fetchOffset.retryIntervalMs": "10"})
    if available_now:
        r.prepareForTriggerAvailableNow()
    limit = r.getDefaultReadLimit()
    end = r.latestOffset(r.initialOffset(), limit)
    assert end["partitions"] == {"0": 4}
    real_bounds, failures = r.backend.bounds, []

    def bounds():
        if len(failures) < budget:
            failures.append(1)
            raise TimeoutError("proxy unreachable")
        return real_bounds()

    monkeypatch.setattr(r.backend, "bounds", bounds)
    budget = 2  # within the retries: the batch is planned
    following = r.latestOffset(end, limit)
    assert following["partitions"] == {"0": 8} and len(failures) == 2
    failures.clear()
    budget = 3  # one more than the retries: the query fails, naming the options that wait longer
    with pytest.raises(UnreachableError, match=r"in 3 attempt\(s\) 10 ms apart .*fetchOffset.numRetries"):
        r.latestOffset(following, limit)
    r.stop()
