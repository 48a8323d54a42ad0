"""The one offset-store contract (``spyt_queue.stores.base.OffsetStore``), run against every store's real server.

Each case names the promise it checks; ``harness.py`` says how to add a store.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from spyt_queue.committer import Committer
from spyt_queue.errors import ConsumerConflictError, SpytQueueError
from tests.stores.harness import LostReply, MemoryFactory, StoreFactory, ZooKeeperFactory

FACTORIES = ["memory", "zookeeper", "zookeeper-kafka-layout"]


@pytest.fixture(params=FACTORIES)
def factory(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    name = request.param
    if name == "memory":
        made: StoreFactory = MemoryFactory()
    elif name == "zookeeper":
        made = ZooKeeperFactory(request.getfixturevalue("zookeeper").hosts)
    elif name == "zookeeper-kafka-layout":
        made = ZooKeeperFactory(request.getfixturevalue("zookeeper").hosts, layout="kafka")
    else:  # pragma: no cover
        raise AssertionError(name)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def source() -> str:
    """A source id with '/' and ':' in it, unique to the test."""
    return f"yt:/home/me/queue#{uuid.uuid4().hex[:8]}-0-0-1"


def stored(store) -> dict[str, int]:
    """What the store holds, without partitions reported as never committed."""
    return {key: value for key, value in store.committed().items() if value is not None}


def test_empty_store_has_no_positions(factory: StoreFactory, source: str) -> None:
    assert stored(factory.store(source)) == {}


def test_first_advance_is_read_back_by_a_new_store(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    factory.store(source).advance({k0: None, k1: None}, {k0: 5, k1: 7})
    assert stored(factory.store(source)) == {k0: 5, k1: 7}


def test_advance_with_one_stale_partition_moves_nothing(factory: StoreFactory, source: str) -> None:
    k0, k1, k2 = factory.key(0), factory.key(1), factory.key(2)
    store = factory.store(source)
    store.advance({k0: None, k1: None}, {k0: 5, k1: 7})
    with pytest.raises(ConsumerConflictError):
        store.advance({k0: 5, k1: 6, k2: None}, {k0: 10, k1: 10, k2: 10})
    assert stored(factory.store(source)) == {k0: 5, k1: 7}


def test_cas_conflict_between_two_stores_changes_nothing(factory: StoreFactory, source: str) -> None:
    k0 = factory.key(0)
    first, second = factory.store(source), factory.store(source)
    first.advance({k0: None}, {k0: 5})
    second.advance({k0: 5}, {k0: 9})
    with pytest.raises(ConsumerConflictError):
        first.advance({k0: 5}, {k0: 6})
    assert stored(factory.store(source)) == {k0: 9}
    with pytest.raises(ConsumerConflictError):
        factory.store(source).advance({k0: None}, {k0: 1})  # "never committed" is stale too
    assert stored(factory.store(source)) == {k0: 9}


def test_writer_between_read_and_write_fails_the_whole_advance(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    mine, other = factory.store(source), factory.store(source)
    mine.advance({k0: None, k1: None}, {k0: 5, k1: 7})
    with factory.interleave(mine, lambda: other.advance({k1: 7}, {k1: 20})), pytest.raises(ConsumerConflictError):
        mine.advance({k0: 5, k1: 7}, {k0: 8, k1: 9})
    assert stored(factory.store(source)) == {k0: 5, k1: 20}  # k0 not half-written


def test_writer_moving_an_unchanged_partition_meanwhile_fails_the_advance(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    mine, other = factory.store(source), factory.store(source)
    mine.advance({k0: None, k1: None}, {k0: 5, k1: 7})
    with factory.interleave(mine, lambda: other.advance({k1: 7}, {k1: 20})), pytest.raises(ConsumerConflictError):
        mine.advance({k0: 5, k1: 7}, {k0: 8, k1: 7})  # k1 rides along unchanged: still compared
    assert stored(factory.store(source)) == {k0: 5, k1: 20}


def test_writer_creating_a_new_partition_meanwhile_fails_the_advance(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    mine, other = factory.store(source), factory.store(source)
    mine.advance({k0: None}, {k0: 5})
    with factory.interleave(mine, lambda: other.advance({k1: None}, {k1: 4})), pytest.raises(ConsumerConflictError):
        mine.advance({k0: 5, k1: None}, {k0: 8, k1: 3})
    assert stored(factory.store(source)) == {k0: 5, k1: 4}


def test_racing_stores_exactly_one_wins(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    factory.store(source).advance({k0: None, k1: None}, {k0: 1, k1: 1})
    racers = [factory.store(source) for _ in range(4)]
    for racer in racers:
        racer.committed()  # connected before the start line
    start, outcomes = threading.Barrier(len(racers)), {}

    def race(index: int) -> None:
        start.wait()
        try:
            racers[index].advance({k0: 1, k1: 1}, {k0: 10 + index, k1: 10 + index})
            outcomes[index] = "won"
        except ConsumerConflictError:
            outcomes[index] = "conflict"

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(racers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [i for i, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == len(racers) and len(winners) == 1
    assert stored(factory.store(source)) == {k0: 10 + winners[0], k1: 10 + winners[0]}


def test_lost_reply_is_recognised_by_the_committer(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    store = factory.store(source)
    store.advance({k0: None, k1: None}, {k0: 5, k1: 7})
    flaky = LostReply(store, factory.lost_reply_error())
    committer = Committer(flaky, backoff_seconds=0)
    assert committer.advance_to({k0: 8, k1: 7}) is True
    assert flaky.lost == 1  # the first attempt was applied and its reply lost
    assert stored(factory.store(source)) == {k0: 8, k1: 7}
    assert committer.advance_to({k0: 8, k1: 7}) is False  # idempotent


def test_committer_reports_another_writer(factory: StoreFactory, source: str) -> None:
    k0 = factory.key(0)
    committer = Committer(factory.store(source), backoff_seconds=0)
    committer.advance_to({k0: 5})
    factory.store(source).advance({k0: 5}, {k0: 50})
    with pytest.raises(ConsumerConflictError):
        committer.advance_to({k0: 6})
    assert stored(factory.store(source)) == {k0: 50}


def test_transient_errors_are_classified(factory: StoreFactory, source: str) -> None:
    store = factory.store(source)
    assert store.is_transient(factory.lost_reply_error())
    assert not store.is_transient(ValueError("bad"))
    assert not store.is_transient(ConsumerConflictError("moved"))


def test_new_partitions_join_later(factory: StoreFactory, source: str) -> None:
    k0, k1, k2 = factory.key(0), factory.key(1), factory.key(2)
    store = factory.store(source)
    store.advance({k0: None}, {k0: 5})
    store.advance({k0: 5, k1: None, k2: None}, {k0: 5, k1: 3, k2: 0})
    assert stored(factory.store(source)) == {k0: 5, k1: 3, k2: 0}


def test_groups_on_one_source_do_not_see_each_other(factory: StoreFactory, source: str) -> None:
    k0 = factory.key(0)
    blue, green = factory.store(source, "blue"), factory.store(source, "green/team:1")
    blue.advance({k0: None}, {k0: 5})
    assert stored(green) == {}
    green.advance({k0: None}, {k0: 2})
    assert stored(factory.store(source, "blue")) == {k0: 5}
    assert stored(factory.store(source, "green/team:1")) == {k0: 2}


def test_sources_in_one_group_do_not_see_each_other(factory: StoreFactory, source: str) -> None:
    k0 = factory.key(0)
    factory.store(source).advance({k0: None}, {k0: 5})
    # A Kafka-layout store keys positions by group and topic, as Kafka does: any source of the group sees them.
    expected = {} if factory.isolates_sources else {k0: 5}
    assert stored(factory.store(source + "-other")) == expected
    assert stored(factory.store("kafka:subscribe=events")) == expected


def test_garbage_gives_an_error_naming_the_place(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    store = factory.store(source)
    store.advance({k1: None}, {k1: 3})
    place = factory.write_garbage(store, k0)
    with pytest.raises(SpytQueueError, match="not a decimal offset") as raised:
        factory.store(source).committed()
    assert place in str(raised.value)
    with pytest.raises(SpytQueueError) as raised:
        factory.store(source).advance({k0: 1, k1: 3}, {k0: 2, k1: 4})
    assert not isinstance(raised.value, ConsumerConflictError) and place in str(raised.value)


def test_partition_keys_with_colons_round_trip(factory: StoreFactory, source: str) -> None:
    keys = factory.colon_keys()
    store = factory.store(source)
    store.advance(dict.fromkeys(keys), {key: i * 10 for i, key in enumerate(keys)})
    assert stored(factory.store(source)) == {key: i * 10 for i, key in enumerate(keys)}
    store.advance({key: i * 10 for i, key in enumerate(keys)}, {key: i * 10 + 1 for i, key in enumerate(keys)})
    assert stored(factory.store(source)) == {key: i * 10 + 1 for i, key in enumerate(keys)}


def test_unchanged_partitions_may_ride_along(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    store = factory.store(source)
    store.advance({k0: None, k1: None}, {k0: 5, k1: 7})
    store.advance({k0: 5, k1: 7}, {k0: 5, k1: 7})  # nothing moves, nothing fails
    store.advance({k0: 5, k1: 7}, {k0: 5, k1: 8})
    assert stored(factory.store(source)) == {k0: 5, k1: 8}
