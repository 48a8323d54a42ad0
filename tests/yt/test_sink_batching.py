"""Sinks without per-row Python work: plain columns go to YT as binary YSON built column by column, and the Kafka
sink asks librdkafka for delivery reports of failed records only. What a user sees must not change."""

from __future__ import annotations

import datetime
import math
import time
import uuid
from typing import Any

import pyarrow as pa
import pytest
import yt.yson as yson
from confluent_kafka import Consumer, TopicPartition

from spyt_queue.errors import BadRecordError
from spyt_queue.kafka import clients
from spyt_queue.kafka.sink import KafkaWriteTask
from spyt_queue.yt.admin import column, create_queue, create_sorted_table
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.client import counting_requests
from spyt_queue.yt.schema import YtSchema
from spyt_queue.yt.table_writer import YtTableWriter
from spyt_queue.yt.yson_rows import encode_rows, fragment
from tests.kafka.helpers import Topic

DEFAULTS = {"acks": "all", "enable.idempotence": True}
EDGE_INTS = [None, 0, 1, -1, 63, 64, -64, -65, 127, 128, 300, 2**31, -(2**31) - 1, 2**62, 2**63 - 1, -(2**63)]


def _mixed_batch() -> pa.RecordBatch:
    n = len(EDGE_INTS)
    return pa.RecordBatch.from_pydict(
        {
            "i64": pa.array(EDGE_INTS, pa.int64()),
            "i8": pa.array([None if v is None else v % 100 - 50 for v in EDGE_INTS], pa.int8()),
            "i32": pa.array([None if v is None else v % 1000 for v in EDGE_INTS], pa.int32()),
            "s": pa.array([None, "", "é" * 70, "a" * 200] + ["z"] * (n - 4)),
            "b": pa.array([None, True, False] + [True] * (n - 3)),
            "f32": pa.array([None, 1.5, -0.0, float("inf")] + [2.0] * (n - 4), pa.float32()),
            "f64": pa.array([math.pi, None, float("-inf"), 1e300] + [-2.5] * (n - 4), pa.float64()),
            "bin": pa.array([b"\x00\xff" * 5000, None, b""] + [b"\x01"] * (n - 3), pa.binary()),
            "$tablet_index": pa.array([0] * n, pa.int32()),
        }
    )


def test_encoded_rows_are_the_bytes_yson_writes_for_the_same_dicts() -> None:
    batch = _mixed_batch()
    expected = yson.dumps(batch.to_pylist(), yson_type="list_fragment", yson_format="binary")
    assert fragment(encode_rows(batch)) == expected
    part = batch.slice(3, 5)
    assert fragment(encode_rows(batch).slice(3, 5)) == yson.dumps(
        part.to_pylist(), yson_type="list_fragment", yson_format="binary"
    )
    assert fragment(encode_rows(batch.slice(0, 0))) == b""


def _writer(yt, yt_proxy: str, path: str, batch_size: int = 50_000) -> YtTableWriter:
    return YtTableWriter(YtConnection(yt_proxy), path, YtSchema.parse(yt.get(f"{path}/@schema")), batch_size)


def test_plain_columns_are_encoded_in_bulk_and_other_types_are_converted_in_python(yt, yt_proxy, yt_root) -> None:
    target = f"{yt_root}/kinds"
    create_sorted_table(
        yt,
        target,
        [
            column("k", "int64", sort_order="ascending"),
            column("v", "string"),
            column("u", "uint64"),
            column("t", "timestamp"),
            column("y", "any"),
        ],
    )
    writer = _writer(yt, yt_proxy, target)
    plain = pa.RecordBatch.from_pydict({"k": [1], "v": ["a"]})
    assert writer._fast_path(iter([plain]))[1]
    for name, array in (
        ("u", pa.array([1], pa.int64())),  # unsigned targets are range-checked row by row
        ("t", pa.array([datetime.datetime(2026, 1, 1)], pa.timestamp("us"))),
        ("y", pa.array([b"{a=1}"], pa.binary())),  # yson columns parse the bytes
    ):
        batches, fast = writer._fast_path(iter([pa.RecordBatch.from_arrays([pa.array([1]), array], ["k", name])]))
        assert not fast, name
        assert len(list(batches)) == 1  # the peeked batch is not lost


@pytest.mark.spark
def test_spark_write_of_plain_columns_round_trips_in_batches(spark, yt, yt_proxy, yt_root) -> None:
    target = f"{yt_root}/plain"
    create_sorted_table(
        yt,
        target,
        [
            column("k", "int64", sort_order="ascending"),
            column("s", "string"),
            column("d", "double"),
            column("f", "float"),
            column("b", "boolean"),
            column("i", "int32"),
            column("raw", "string"),
        ],
    )
    rows = [
        (k, None if k % 5 == 0 else f"s{k}é", k / 4, float(k % 3), k % 2 == 0, -k, bytes([65 + k % 26]) * 3)
        for k in range(-20, 37)
    ]
    df = spark.createDataFrame(rows, "k long, s string, d double, f float, b boolean, i int, raw binary")
    df.repartition(3).write.format("ytqueue").mode("append").option("proxy", yt_proxy).option(
        "dyn_batch_size", "7"
    ).save(target)
    got = sorted(
        tuple(r[c] for c in ("k", "s", "d", "f", "b", "i", "raw")) for r in yt.select_rows(f"* from [{target}]")
    )
    assert got == [(k, s, d, f, b, i, raw.decode()) for k, s, d, f, b, i, raw in rows]


def test_a_refused_request_names_the_first_row_of_the_encoded_chunk(yt, yt_proxy, yt_root) -> None:
    target = f"{yt_root}/refused"
    create_queue(yt, target, [column("id", "int64"), column("v", "string")], tablet_count=1)
    writer = _writer(yt, yt_proxy, target, batch_size=4)
    good = pa.RecordBatch.from_pydict({"id": [1, 2, 3, 4], "v": ["a"] * 4, "$tablet_index": [0] * 4})
    bad = pa.RecordBatch.from_pydict({"id": [5, 6], "v": ["b", "c"], "$tablet_index": [7, 0]})
    with pytest.raises(BadRecordError, match=r"insert_rows of 2 rows into .*refused failed \(first row \{'id': 5"):
        writer.write(iter([good, bad]))
    assert int(yt.get_tablet_infos(target, [0])["tablets"][0]["total_row_count"]) == 4  # the first chunk stays


def _read_all(bootstrap: str, topic: str, partitions: int, count: int) -> list[Any]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages: list[Any] = []
    deadline = time.monotonic() + 60
    while len(messages) < count and time.monotonic() < deadline:
        messages += [m for m in consumer.consume(100, timeout=1.0) if m.error() is None]
    consumer.close()
    return messages


@pytest.mark.spark
def test_kafka_sink_produces_every_column_of_every_row(spark, kafka_bootstrap, tmp_path) -> None:
    """Records are produced column by column: topic, key, value, partition and headers of each row arrive
    (null key and empty headers included), in two topics picked per row."""
    first, second = Topic(kafka_bootstrap, str(tmp_path / "a"), 3), Topic(kafka_bootstrap, str(tmp_path / "b"), 3)
    rows = [
        (
            first.name if i % 2 else second.name,
            None if i % 5 == 0 else f"k{i}",
            f"v{i}".encode(),
            i % 3,
            [("n", str(i).encode())] if i % 4 else [],
        )
        for i in range(40)
    ]
    schema = "topic string, key string, value binary, partition int, headers array<struct<key: string, value: binary>>"
    spark.createDataFrame(rows, schema).repartition(2).write.format("ytqueue").mode("append").option(
        "kafka.bootstrap.servers", kafka_bootstrap
    ).save()
    got = sorted(
        (
            (m.topic(), None if m.key() is None else m.key().decode(), m.value(), m.partition(), m.headers() or [])
            for topic in (first, second)
            for m in _read_all(kafka_bootstrap, topic.name, 3, 20)
        ),
        key=repr,
    )
    assert got == sorted(rows, key=repr)


def test_kafka_sink_asks_for_failure_reports_only_without_dead_letters(kafka_bootstrap) -> None:
    """Without a dead-letter target, acknowledged records cost no Python callback; a refused record still fails
    the task (tests/yt/test_dead_letter.py: test_kafka_sink_refused_record_stops_the_query_by_default)."""
    topic = Topic(kafka_bootstrap, "unused", 1)
    writer = KafkaWriteTask({"bootstrap.servers": kafka_bootstrap, **DEFAULTS}, topic.name)
    batch = pa.RecordBatch.from_pydict({"value": [b"a", b"b"]})
    assert writer.write(iter([batch])).records == 2
    used = clients._key({"bootstrap.servers": kafka_bootstrap, **DEFAULTS, "delivery.report.only.error": True})
    assert used in clients._PRODUCERS


def test_each_insert_request_is_one_round_trip_without_a_proxy_discovery(yt, yt_proxy, yt_root) -> None:
    """The embedded server lists no heavy proxies: the sink's ``insert_rows`` go without a ``/hosts`` before each."""
    target = f"{yt_root}/trips"
    create_queue(yt, target, [column("id", "int64")], tablet_count=1)
    writer = _writer(yt, yt_proxy, target, batch_size=5)
    writer.client  # noqa: B018 - the first use of a client checks discovery, once
    with counting_requests() as commands:
        stats = writer.write(iter([pa.RecordBatch.from_pydict({"id": list(range(15))})]))
    assert (stats.requests, commands["insert_rows"]) == (3, 3)
    assert commands["hosts"] == 0, f"no discovery before each insert, got {dict(commands)}"
