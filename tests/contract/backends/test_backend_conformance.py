"""One conformance suite every queue backend must pass (YTsaurus on the embedded server, Kafka on a real broker).

Each test pins one rule of the read contract the Spark adapter relies on (bounds, ranges, trimmed rows, new
partitions); all run against real servers. Committed positions belong to the stores: ``tests/contract/stores/``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from spyt_queue.errors import DataLossError
from spyt_queue.spark.compat import arrow_schema
from spyt_queue.spark.partitions import DataLossPolicy
from tests.contract.backends.harness import Harness, KafkaHarness, YtHarness


@pytest.fixture(params=["yt", "kafka"])
def log(request: pytest.FixtureRequest) -> Harness:
    """A fresh 2-partition log on each backend."""
    if request.param == "yt":
        return YtHarness(
            request.getfixturevalue("yt"), request.getfixturevalue("yt_proxy"), request.getfixturevalue("yt_root"), 2
        )
    return KafkaHarness(request.getfixturevalue("kafka_bootstrap"), 2)


def read(log: Harness, key: str, start: int, end: int, fail: bool = True) -> list[int]:
    backend = log.backend()
    expected = arrow_schema(backend.schema())
    ids: list[int] = []
    for batch in backend.read_range(key, start, end, DataLossPolicy(fail)):
        assert isinstance(batch, pa.RecordBatch)
        assert batch.schema.equals(expected), "batches must match Spark's Arrow schema exactly"
        ids.extend(log.ids(batch))
    return ids


def test_bounds_are_first_available_and_next_offset(log: Harness) -> None:
    log.produce(0, list(range(5)))
    bounds = log.backend().bounds()
    keys = log.partition_keys()
    assert [(bounds[k].lower, bounds[k].upper) for k in keys] == [(0, 5), (0, 0)]


def test_read_range_is_start_inclusive_end_exclusive(log: Harness) -> None:
    log.produce(0, list(range(10)))
    key = log.partition_keys()[0]
    assert read(log, key, 3, 7) == [3, 4, 5, 6]
    assert read(log, key, 0, 10) == list(range(10))
    assert read(log, key, 10, 10) == []


def test_read_range_spanning_many_pulls(log: Harness) -> None:
    log.produce(1, list(range(2500)))
    backend = log.backend()
    if hasattr(backend, "pull_batch_rows"):
        backend.pull_batch_rows = 300
    if hasattr(backend, "consume_batch"):
        backend.consume_batch = 300
    key = log.partition_keys()[1]
    ids = []
    for batch in backend.read_range(key, 100, 2400, DataLossPolicy(True)):
        ids.extend(log.ids(batch))
    assert ids == list(range(100, 2400))


def test_trimmed_rows_fail_or_are_skipped(log: Harness) -> None:
    log.produce(0, list(range(10)))
    log.trim(0, 4)
    key = log.partition_keys()[0]
    assert log.backend().bounds()[key].lower == 4
    with pytest.raises(DataLossError, match=r"\[2, 4\)"):
        read(log, key, 2, 8)
    assert read(log, key, 2, 8, fail=False) == [4, 5, 6, 7]


def test_own_store_starts_empty_and_is_keyed_by_the_logs_partitions(log: Harness) -> None:
    """The backend's own store (YT consumer, Kafka group) holds nothing for a fresh log, so the ``store``
    starting position resolves to each partition's first available row; what one backend's store commits under
    the log's partition keys, a new backend's store reads back. (The store contract itself is checked by
    ``tests/contract/stores/``.)"""
    from spyt_queue.positions import resolve_positions
    from spyt_queue.settings import Position

    log.produce(0, [1, 2, 3])
    log.trim(0, 1)
    backend = log.backend()
    keys = log.partition_keys()
    committed = backend.default_store().committed()
    assert [committed.get(k) for k in keys] == [None, None]
    start = resolve_positions(Position("store"), backend.bounds(), committed)
    assert [start[k] for k in keys] == [1, 0]
    backend.default_store().advance({keys[0]: None, keys[1]: None}, {keys[0]: 3, keys[1]: 0})
    assert log.backend().default_store().committed() == {keys[0]: 3, keys[1]: 0}


def test_trimmed_prefix_of_a_range_and_fully_trimmed_range(log: Harness) -> None:
    log.produce(0, list(range(10)))
    key = log.partition_keys()[0]
    log.trim(0, 6)
    with pytest.raises(DataLossError, match=r"\[2, 4\)"):
        read(log, key, 2, 4)
    assert read(log, key, 2, 4, fail=False) == []
    log.trim(0, 10)
    with pytest.raises(DataLossError, match=r"\[2, 8\)"):
        read(log, key, 2, 8)
    assert read(log, key, 2, 8, fail=False) == []


def test_added_partitions_appear_from_their_first_row(log: Harness) -> None:
    log.produce(0, [1, 2])
    log.add_partitions(3)
    log.produce(2, [7])
    bounds = log.backend().bounds()
    keys = log.partition_keys()
    assert len(keys) == 3
    assert (bounds[keys[2]].lower, bounds[keys[2]].upper) == (0, 1)
    assert read(log, keys[2], 0, 1) == [7]
