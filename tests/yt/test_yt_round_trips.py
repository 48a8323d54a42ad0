"""HTTP round trips of the YT backend: a commit costs the same whatever the partition count, a pull costs one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from spyt_queue.errors import ConsumerConflictError
from spyt_queue.spark.partitions import DataLossPolicy
from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.backend import YtQueueBackend
from spyt_queue.yt.client import YtConnection, counting_requests
from spyt_queue.yt.consumer_store import YtConsumerStore


@pytest.fixture
def commands() -> Iterator[Counter[str]]:
    """The commands of the HTTP requests ``yt.wrapper`` sends while the test runs."""
    with counting_requests() as counts:
        yield counts


def test_advance_of_64_partitions_is_one_request_and_still_compare_and_set(yt, yt_proxy, yt_root, commands) -> None:
    queue, consumer = f"{yt_root}/queue", f"{yt_root}/consumer"
    create_queue(yt, queue, [column("id", "int64")], tablet_count=64)
    create_consumer(yt, consumer, queue)
    store = YtConsumerStore(YtConnection(yt_proxy), queue, consumer)
    keys = [str(i) for i in range(64)]
    store.advance({}, {key: 1 for key in keys})  # warm-up: client, connection
    commands.clear()

    store.advance({key: 1 for key in keys}, {key: 2 + int(key) for key in keys})

    advances = commands["advance_consumer"] + commands["execute_batch"]
    assert advances == 1, f"one request carries every partition's advance, got {dict(commands)}"
    assert store.committed() == {key: 2 + int(key) for key in keys}
    stale = {key: 1 for key in keys}
    with pytest.raises(ConsumerConflictError):  # each part is still a compare-and-set: nothing moves
        store.advance(stale, {key: 100 for key in keys})
    assert store.committed() == {key: 2 + int(key) for key in keys}


def test_each_pull_is_one_request_without_a_proxy_discovery_before_it(yt, yt_proxy, yt_root, commands) -> None:
    """The embedded server lists no heavy proxies; ``yt.wrapper`` would still ask ``/hosts`` before every pull."""
    queue, consumer = f"{yt_root}/queue", f"{yt_root}/consumer"
    create_queue(yt, queue, [column("id", "int64")], tablet_count=1)
    create_consumer(yt, consumer, queue)
    yt.insert_rows(queue, [{"id": i} for i in range(30)])
    backend = YtQueueBackend(YtConnection(yt_proxy, config={"proxy": {"request_timeout": 61_000}}), queue, consumer)
    backend.pull_batch_rows = 10
    backend.schema()  # the driver's first call: the client checks discovery here, once
    commands.clear()

    batches = list(backend.read_range("0", 0, 30, DataLossPolicy(True)))

    assert [b.num_rows for b in batches] == [10, 10, 10]
    assert sum(b.column("id").to_pylist() == list(range(i * 10, i * 10 + 10)) for i, b in enumerate(batches)) == 3
    assert commands["pull_consumer"] == 3
    assert commands["hosts"] == 0, f"no discovery before each pull, got {dict(commands)}"


def test_an_advance_is_three_round_trips_without_a_transaction_pinger(yt, yt_proxy, yt_root, commands) -> None:
    """The advance of a micro-batch runs on the driver between two triggers: start, advance, commit, nothing else.

    ``yt.wrapper`` pings a transaction from a thread of its own unless told not to (a copy of the client, a
    ``ping_transaction`` request, up to 100 ms waiting for the thread at commit); a tablet transaction that lives for
    one advance needs none of it."""
    queue, consumer = f"{yt_root}/queue", f"{yt_root}/consumer"
    create_queue(yt, queue, [column("id", "int64")], tablet_count=4)
    create_consumer(yt, consumer, queue)
    store = YtConsumerStore(YtConnection(yt_proxy), queue, consumer)
    keys = [str(i) for i in range(4)]
    store.advance({}, {key: 1 for key in keys})  # warm-up: client, connection
    commands.clear()

    for step in range(1, 4):
        store.advance({key: step for key in keys}, {key: step + 1 for key in keys})

    assert dict(commands) == {"start_transaction": 3, "execute_batch": 3, "commit_transaction": 3}
    assert store.committed() == {key: 4 for key in keys}
    with pytest.raises(ConsumerConflictError):  # still a compare-and-set
        store.advance({key: 1 for key in keys}, {key: 9 for key in keys})
    assert store.committed() == {key: 4 for key in keys}
