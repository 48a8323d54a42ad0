"""The real Kafka broker of integration/kafka_broker.py does what later tests will rely on.

Topics with several partitions, idempotent produce, group consume + committed offsets visible to the
AdminClient, transactions (aborted records invisible under read_committed) and time-based retention.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.timeout(180)

N_MESSAGES = 1000
N_PARTITIONS = 4


def create_topic(admin: AdminClient, name: str, partitions: int, **config: str) -> None:
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config)],
        operation_timeout=30,
    )
    futures[name].result(timeout=60)
    deadline = time.monotonic() + 30  # metadata reaches the broker's cache asynchronously
    while True:
        topic = admin.list_topics(topic=name, timeout=10).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {name} not visible with {partitions} partitions: {topic}")
        time.sleep(0.1)


def new_consumer(bootstrap: str, **overrides: object) -> Consumer:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": f"g-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
    }
    config.update(overrides)
    return Consumer(config)


def drain(consumer: Consumer, end_offsets: dict[int, int], topic: str, timeout: float = 60.0) -> list:
    """Poll until the consumer's position on every partition reached ``end_offsets``; return the messages."""
    messages = []
    deadline = time.monotonic() + timeout
    tps = [TopicPartition(topic, p) for p in end_offsets]
    while True:
        for msg in consumer.consume(num_messages=500, timeout=0.5):
            if msg.error():
                raise AssertionError(f"consume error: {msg.error()}")
            messages.append(msg)
        positions = {tp.partition: tp.offset for tp in consumer.position(tps)}
        if all(positions.get(p, -1) >= end for p, end in end_offsets.items()):
            return messages
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out: got {len(messages)} messages, positions {positions}, wanted {end_offsets}"
            )


def high_watermarks(consumer: Consumer, topic: str, partitions: int) -> dict[int, int]:
    return {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
        for p in range(partitions)
    }


def test_bootstrap_is_loopback(kafka_broker) -> None:
    host, _, port = kafka_broker.bootstrap_servers.rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0
    md = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers}).list_topics(timeout=10)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", int(port))]


def test_produce_consume_commit(kafka_bootstrap: str, kafka_topic_name: str) -> None:
    topic = kafka_topic_name
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    create_topic(admin, topic, N_PARTITIONS)

    # -- idempotent producer: every record acknowledged exactly once, keys spread over the partitions
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    )
    delivered: list[tuple[int, int, bytes]] = []
    errors: list[KafkaError] = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append((msg.partition(), msg.offset(), msg.value()))

    for i in range(N_MESSAGES):
        producer.produce(topic, key=f"key-{i % 37}".encode(), value=f"value-{i}".encode(), on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0, "records still in the producer queue after 30 s"
    assert errors == []
    assert len(delivered) == N_MESSAGES
    per_partition = defaultdict(int)
    for partition, _, _ in delivered:
        per_partition[partition] += 1
    assert sorted(per_partition) == list(range(N_PARTITIONS)), per_partition

    # -- consume everything back in one group
    group = f"group-{uuid.uuid4().hex[:8]}"
    consumer = new_consumer(kafka_bootstrap, **{"group.id": group})
    try:
        ends = high_watermarks(consumer, topic, N_PARTITIONS)
        assert ends == dict(per_partition)  # offsets 0..n-1 per partition: no duplicates, no gaps
        consumer.subscribe([topic])
        messages = drain(consumer, ends, topic)
        assert sorted(m.value() for m in messages) == sorted(f"value-{i}".encode() for i in range(N_MESSAGES))
        last_seen: dict[bytes, int] = {}
        for m in messages:  # per key (= per partition) the produce order is kept
            i = int(m.value().split(b"-")[1])
            assert last_seen.get(m.key(), -1) < i
            last_seen[m.key()] = i

        # -- commit the group's offsets and read them back through the AdminClient
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, p) for p in range(N_PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == ends
    finally:
        consumer.close()

    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(N_PARTITIONS)])
    result = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    assert result.group_id == group
    assert {tp.partition: tp.offset for tp in result.topic_partitions} == ends
    assert sum(tp.offset for tp in result.topic_partitions) == N_MESSAGES

    # ... and without naming partitions: all partitions the group has committed
    result_all = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    assert {(tp.topic, tp.partition): tp.offset for tp in result_all.topic_partitions} == {
        (topic, p): off for p, off in ends.items()
    }


def test_aborted_transaction_invisible_to_read_committed(kafka_bootstrap: str, kafka_topic_name: str) -> None:
    topic = kafka_topic_name
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    create_topic(admin, topic, 2)

    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"txn-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)

    producer.begin_transaction()
    for i in range(50):
        producer.produce(topic, key=str(i).encode(), value=f"aborted-{i}".encode())
    producer.flush(30)  # the aborted records really are in the log before the abort
    producer.abort_transaction(30)

    producer.begin_transaction()
    for i in range(30):
        producer.produce(topic, key=str(i).encode(), value=f"committed-{i}".encode())
    producer.commit_transaction(30)

    # an open transaction at the end: read_committed must stop before it (last stable offset)
    producer.begin_transaction()
    producer.produce(topic, key=b"0", value=b"pending")
    producer.flush(30)

    committed_reader = new_consumer(kafka_bootstrap, **{"isolation.level": "read_committed"})
    uncommitted_reader = new_consumer(kafka_bootstrap, **{"isolation.level": "read_uncommitted"})
    try:
        tps = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(2)]
        committed_reader.assign(tps)
        uncommitted_reader.assign(tps)

        everything = drain(uncommitted_reader, high_watermarks(uncommitted_reader, topic, 2), topic)
        values = sorted(m.value().decode() for m in everything)
        assert sum(v.startswith("aborted-") for v in values) == 50
        assert sum(v.startswith("committed-") for v in values) == 30
        assert "pending" in values

        producer.commit_transaction(30)  # now the committed reader can reach the high watermark
        visible = drain(committed_reader, high_watermarks(committed_reader, topic, 2), topic)
        assert sorted(m.value().decode() for m in visible) == sorted(
            [f"committed-{i}" for i in range(30)] + ["pending"]
        )
    finally:
        committed_reader.close()
        uncommitted_reader.close()


def test_open_transaction_blocks_read_committed_at_lso(kafka_bootstrap: str, kafka_topic_name: str) -> None:
    topic = kafka_topic_name
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    create_topic(admin, topic, 1)
    plain = Producer({"bootstrap.servers": kafka_bootstrap})
    plain.produce(topic, value=b"before")
    plain.flush(30)
    txn = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"t-{uuid.uuid4().hex[:8]}"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, value=b"in-flight")
    txn.flush(30)
    plain.produce(topic, value=b"after")  # non-transactional, but behind the open transaction
    plain.flush(30)

    reader = new_consumer(kafka_bootstrap, **{"isolation.level": "read_committed"})
    try:
        reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        seen = [m.value() for m in drain(reader, {0: 1}, topic)]
        time.sleep(1.0)  # nothing beyond the last stable offset may show up meanwhile
        seen += [m.value() for m in reader.consume(num_messages=10, timeout=1.0)]
        assert seen == [b"before"]
        txn.abort_transaction(30)
        seen += [m.value() for m in drain(reader, {0: 4}, topic)]  # before, in-flight, marker, after
        assert seen == [b"before", b"after"]
    finally:
        reader.close()


def test_retention_deletes_old_segments(kafka_bootstrap: str, kafka_topic_name: str) -> None:
    """log.retention.check.interval.ms / log.initial.task.delay.ms are short: time retention acts in seconds."""
    topic = kafka_topic_name
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    create_topic(admin, topic, 1, **{"retention.ms": "1000", "segment.ms": "200"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    consumer = new_consumer(kafka_bootstrap)
    tp = TopicPartition(topic, 0)
    try:
        for i in range(5):
            producer.produce(topic, value=f"old-{i}".encode())
        producer.flush(30)
        deadline = time.monotonic() + 60
        while True:
            time.sleep(0.5)
            producer.produce(topic, value=b"new")  # appends roll the expired segment over
            producer.flush(30)
            low, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            if low >= 5:
                break
            assert time.monotonic() < deadline, f"retention never deleted: low={low} high={high}"
    finally:
        consumer.close()


def test_topic_argument_creates_topics_once(kafka_bootstrap: str) -> None:
    """``python -m integration.kafka_broker --topic events:4`` creates its topics (the broker does not auto-create
    them); creating an existing topic again leaves it alone, and a malformed spec names the argument."""
    from integration.kafka_broker import create_topics, parse_topic

    name = f"cli-topic-{uuid.uuid4().hex[:8]}"
    assert parse_topic(f"{name}:4") == (name, 4)
    assert parse_topic(name) == (name, 1)
    for bad in ("events:", "events:0", ":3", "events:x"):
        with pytest.raises(SystemExit, match="--topic expects NAME or NAME:PARTITIONS"):
            parse_topic(bad)
    create_topics(kafka_bootstrap, [parse_topic(f"{name}:4")])
    create_topics(kafka_bootstrap, [(name, 2)])  # exists already: untouched, no error
    metadata = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(name, timeout=30)
    assert len(metadata.topics[name].partitions) == 4
