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
from tests.contract.stores.harness import (
    HBaseFactory,
    KafkaGroupFactory,
    KuduFactory,
    LostReply,
    MemoryFactory,
    StoreFactory,
    YtConsumerFactory,
    ZooKeeperFactory,
)

FACTORIES = ["memory", "zookeeper", "zookeeper-kafka-layout", "yt-consumer", "kafka-group", "hbase", "kudu"]
KAFKA_PARTITIONS = 13  # the largest partition index the suite uses is 12 (unusual_keys)


@pytest.fixture(scope="module")
def kafka_topic(kafka_bootstrap: str) -> str:
    """One topic for every Kafka case of the module (cases are isolated by group id)."""
    from tests.kafka.helpers import Topic

    return Topic(
        kafka_bootstrap, checkpoint="", partitions=KAFKA_PARTITIONS, name=f"store.conf_{uuid.uuid4().hex[:8]}"
    ).name


@pytest.fixture(params=FACTORIES)
def factory(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    name = request.param
    if name == "memory":
        made: StoreFactory = MemoryFactory()
    elif name == "zookeeper":
        made = ZooKeeperFactory(request.getfixturevalue("zookeeper").hosts)
    elif name == "zookeeper-kafka-layout":
        made = ZooKeeperFactory(request.getfixturevalue("zookeeper").hosts, layout="kafka")
    elif name == "yt-consumer":
        made = YtConsumerFactory(
            request.getfixturevalue("yt"), request.getfixturevalue("yt_proxy"), request.getfixturevalue("yt_root")
        )
    elif name == "kafka-group":
        made = KafkaGroupFactory(
            request.getfixturevalue("kafka_bootstrap"), request.getfixturevalue("kafka_topic"), KAFKA_PARTITIONS
        )
    elif name == "kudu":
        made = KuduFactory(request.getfixturevalue("kudu").master_addresses)
    elif name == "hbase":
        hbase = request.getfixturevalue("hbase")
        made = HBaseFactory(hbase.thrift_host, hbase.thrift_port)
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


def advance_past_a_writer(factory: StoreFactory, mine, writer, old: dict, new: dict) -> bool:
    """``mine.advance(old, new)`` with ``writer`` slipped in after ``mine`` read the positions and before it writes;
    returns whether the advance was refused.

    A compare-and-set store refuses it with :class:`ConsumerConflictError`, or with a transient error (YT: the
    tablet transaction's row lock conflict at commit) whose retry, as the committer makes it, is refused. A store
    without compare-and-set (Kafka) cannot see that writer: its advance goes through (the documented limit).
    """
    ran: list[bool] = []

    def counted() -> None:
        ran.append(True)
        writer()

    with factory.interleave(mine, counted):
        try:
            mine.advance(old, new)
            refused = False
        except ConsumerConflictError:
            refused = True
        except Exception as error:
            if not mine.is_transient(error):
                raise
            with pytest.raises(ConsumerConflictError):
                mine.advance(old, new)
            refused = True
    assert ran == [True], "the writer must have run inside the advance"
    return refused


#: Writers slipping into an advance, by partition number: (committed first, the writer's (old, new), mine's
#: (old, new)). "unchanged-partition": k1 rides along in mine's advance unchanged and must still be compared.
WRITERS_INSIDE = {
    "moved-partition": ({0: 5, 1: 7}, ({1: 7}, {1: 20}), ({0: 5, 1: 7}, {0: 8, 1: 9})),
    "unchanged-partition": ({0: 5, 1: 7}, ({1: 7}, {1: 20}), ({0: 5, 1: 7}, {0: 8, 1: 7})),
    "new-partition": ({0: 5}, ({1: None}, {1: 4}), ({0: 5, 1: None}, {0: 8, 1: 3})),
}


@pytest.mark.parametrize("case", list(WRITERS_INSIDE))
def test_writer_between_read_and_write_fails_the_whole_advance(factory: StoreFactory, source: str, case: str) -> None:
    """With compare-and-set nothing of mine's advance is written; without (Kafka) the writer is overwritten."""
    first, (their_old, their_new), (my_old, my_new) = WRITERS_INSIDE[case]

    def keyed(positions: dict) -> dict:
        return {factory.key(index): value for index, value in positions.items()}

    mine, other = factory.store(source), factory.store(source)
    mine.advance(dict.fromkeys(keyed(first)), keyed(first))
    writer = lambda: other.advance(keyed(their_old), keyed(their_new))  # noqa: E731
    refused = advance_past_a_writer(factory, mine, writer, keyed(my_old), keyed(my_new))
    assert refused is factory.compare_and_set
    expected = {**first, **their_new} if factory.compare_and_set else {**first, **their_new, **my_new}
    assert stored(factory.store(source)) == keyed(expected)


def test_writer_before_the_advance_fails_it_even_on_an_unchanged_partition(factory: StoreFactory, source: str) -> None:
    """What every store detects, Kafka included: positions moved by someone else before the advance read them."""
    k0, k1, k2 = factory.key(0), factory.key(1), factory.key(2)
    mine, other = factory.store(source), factory.store(source)
    mine.advance({k0: None, k1: None}, {k0: 5, k1: 7})
    other.advance({k1: 7}, {k1: 20})
    with pytest.raises(ConsumerConflictError):
        mine.advance({k0: 5, k1: 7}, {k0: 8, k1: 7})  # k1 rides along unchanged: still compared
    other.advance({k2: None}, {k2: 4})
    with pytest.raises(ConsumerConflictError):
        mine.advance({k0: 5, k1: 20, k2: None}, {k0: 8, k1: 20, k2: 3})  # "never committed" is compared too
    assert stored(factory.store(source)) == {k0: 5, k1: 20, k2: 4}


def test_racing_stores_exactly_one_wins(factory: StoreFactory, source: str) -> None:
    """Four stores advance the same positions at once. With compare-and-set exactly one wins; without (Kafka)
    several may, but each commit is whole: the result is one winner's, never a mix."""
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
        except Exception as error:  # a CAS store may refuse with a transient error (YT: row lock conflict)
            outcomes[index] = "transient" if racers[index].is_transient(error) else repr(error)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(racers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [i for i, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == len(racers) and set(outcomes.values()) <= {"won", "conflict", "transient"}, outcomes
    if factory.compare_and_set:
        assert len(winners) == 1, outcomes
    final = stored(factory.store(source))
    assert final in [{k0: 10 + w, k1: 10 + w} for w in winners], (final, outcomes)


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


def test_committer_takes_its_own_position_already_at_its_target_as_applied(
    factory: StoreFactory, source: str
) -> None:
    """The store already holds the target, written by this query (an earlier attempt was applied, its reply lost,
    then a new committer object): the compare-and-set from the stale baseline fails, the committer re-reads, finds
    its target with its own writer, and carries on from there."""
    k0 = factory.key(0)
    committer = Committer(factory.store(source), backoff_seconds=0)
    committer.advance_to({k0: 2}, writer="mine")
    factory.store(source).advance({k0: 2}, {k0: 5}, writer="mine")  # our own earlier attempt, applied
    if factory.keeps_writer:
        assert committer.advance_to({k0: 5}, writer="mine") is True
        assert committer.advance_to({k0: 6}, writer="mine") is True
        assert stored(factory.store(source)) == {k0: 6}
    else:  # nothing in the store says whose advance it was: without a failed attempt of its own, it is a conflict
        with pytest.raises(ConsumerConflictError, match="did not write it"):
            committer.advance_to({k0: 5}, writer="mine")


def test_two_writers_reaching_the_same_target_do_not_both_take_it(factory: StoreFactory, source: str) -> None:
    """Two queries on one group plan the same batch ``[0, 5)`` from the same position: the first advance wins, the
    second finds the positions at its own target but written by the other writer, and must stop (otherwise both
    would process every row and neither would notice)."""
    k0, k1 = factory.key(0), factory.key(1)
    first = Committer(factory.store(source), backoff_seconds=0)
    second = Committer(factory.store(source), backoff_seconds=0)
    first.remember({})
    second.remember({})
    assert first.advance_to({k0: 5, k1: 3}, writer="query-a") is True
    with pytest.raises(ConsumerConflictError, match="did not write it"):
        second.advance_to({k0: 5, k1: 3}, writer="query-b")
    assert stored(factory.store(source)) == {k0: 5, k1: 3}
    if factory.keeps_writer:
        store = factory.store(source)
        assert store.written_by("query-a", {k0: 5, k1: 3}) is True
        assert store.written_by("query-b", {k0: 5, k1: 3}) is False
        # A restarted second query (its checkpoint at the same end) finds the other query's positions: a conflict.
        with pytest.raises(ConsumerConflictError, match="another query wrote them"):
            Committer(factory.store(source), backoff_seconds=0).advance_to({k0: 5, k1: 3}, writer="query-b")
        # The first query restarted at the same end finds its own.
        restarted = Committer(factory.store(source), backoff_seconds=0)
        assert restarted.advance_to({k0: 5, k1: 3}, writer="query-a") is False
    else:
        assert factory.store(source).written_by("query-a", {k0: 5, k1: 3}) is None


def test_lost_reply_with_a_writer_is_recognised_by_the_committer(factory: StoreFactory, source: str) -> None:
    k0 = factory.key(0)
    store = factory.store(source)
    store.advance({k0: None}, {k0: 5}, writer="mine")
    flaky = LostReply(store, factory.lost_reply_error())
    committer = Committer(flaky, backoff_seconds=0)
    assert committer.advance_to({k0: 8}, writer="mine") is True
    assert flaky.lost == 1
    assert stored(factory.store(source)) == {k0: 8}


def test_restarted_committer_refuses_a_store_ahead_of_it(factory: StoreFactory, source: str) -> None:
    k0, k1 = factory.key(0), factory.key(1)
    committer = Committer(factory.store(source), backoff_seconds=0)
    assert committer.advance_to({k0: 5, k1: 0}) is True
    assert committer.advance_to({k0: 5, k1: 0}) is False
    restarted = Committer(factory.store(source), backoff_seconds=0)
    with pytest.raises(ConsumerConflictError, match="ahead"):
        restarted.advance_to({k0: 2, k1: 0})
    assert stored(factory.store(source)) == {k0: 5, k1: 0}


def test_advance_may_move_backwards(factory: StoreFactory, source: str) -> None:
    """Explicit rewinds (a query started below its store's position) move positions back."""
    k0 = factory.key(0)
    factory.store(source).advance({k0: None}, {k0: 3})
    factory.store(source).advance({k0: 3}, {k0: 1})
    assert stored(factory.store(source)) == {k0: 1}


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
    if factory.garbage_error is None:
        # Nothing unreadable fits in the store (Kafka: integer offsets): a foreign entry reads back as written,
        # and judging it against the log is the planner's business.
        assert stored(factory.store(source)) == {k0: factory.FOREIGN_OFFSET, k1: 3}
        factory.store(source).advance({k0: factory.FOREIGN_OFFSET, k1: 3}, {k0: 2, k1: 4})
        assert stored(factory.store(source)) == {k0: 2, k1: 4}
        return
    with pytest.raises(SpytQueueError, match=factory.garbage_error) as raised:
        factory.store(source).committed()
    assert not isinstance(raised.value, ConsumerConflictError) and place in str(raised.value)
    if factory.garbage_blocks_advance:
        with pytest.raises(SpytQueueError) as raised:
            factory.store(source).advance({k0: 1, k1: 3}, {k0: 2, k1: 4})
        assert not isinstance(raised.value, ConsumerConflictError) and place in str(raised.value)
    else:
        # YT: the advance is a CAS on the store's own cluster's rows, which are readable.
        factory.store(source).advance({k0: 1, k1: 3}, {k0: 2, k1: 4})
        with pytest.raises(SpytQueueError, match=factory.garbage_error):
            factory.store(source).committed()  # still refused until the foreign rows are removed


def test_unusual_partition_keys_round_trip(factory: StoreFactory, source: str) -> None:
    keys = factory.unusual_keys()
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
