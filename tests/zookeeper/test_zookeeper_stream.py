"""End to end with positions in a real ZooKeeper (``offsets.store=zookeeper://...``): a YT queue and a Kafka topic
stream into sinks, the checkpoint is deleted, and the restart resumes from ZooKeeper with nothing lost or read twice."""

from __future__ import annotations

import shutil
import time
import uuid

import pytest
from typer.testing import CliRunner

from spyt_queue.cli import app
from spyt_queue.yt.admin import column, create_queue, create_sorted_table
from spyt_queue.zookeeper.store import ZooKeeperStore
from tests.kafka.helpers import Topic, ids_in, run_to_files
from tests.yt.helpers import EVENT_SCHEMA, OUTPUT_SCHEMA, produce_ids, store_stream

pytestmark = pytest.mark.spark


def _run(df, proxy: str, target: str, checkpoint: str, trigger: dict) -> object:
    return (
        df.writeStream.format("ytqueue")
        .option("proxy", proxy)
        .option("path", target)
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .start()
    )


def _committed(uri: str, source: str, group: str) -> dict[str, int | None]:
    store = ZooKeeperStore.from_uri(uri, source, group)
    try:
        return store.committed()
    finally:
        store.close()


def test_yt_queue_without_consumer_resumes_from_zookeeper(spark, yt, yt_proxy, yt_root, zookeeper, tmp_path) -> None:
    queue, output = f"{yt_root}/queue", f"{yt_root}/out"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=2)
    create_queue(yt, output, OUTPUT_SCHEMA, tablet_count=1)
    root, group = f"/spyt-{uuid.uuid4().hex[:8]}", "enricher"
    store_uri = zookeeper.uri(root)
    checkpoint = str(tmp_path / "chk")
    first = produce_ids(yt, queue, 0, 40)
    query = _run(
        store_stream(spark, yt_proxy, queue, store_uri, group, max_rows_per_partition=5),
        yt_proxy,
        output,
        checkpoint,
        {"availableNow": True},
    )
    query.awaitTermination(120)
    assert query.exception() is None
    source = f"yt:{queue}#{yt.get(queue + '/@id')}"
    assert _committed(store_uri, source, group) == {"0": 20, "1": 20}, "the final batch is committed to ZooKeeper"
    shutil.rmtree(checkpoint)
    second = produce_ids(yt, queue, 40, 20)
    query = _run(
        store_stream(spark, yt_proxy, queue, store_uri, group), yt_proxy, output, checkpoint, {"availableNow": True}
    )
    query.awaitTermination(120)
    assert query.exception() is None
    ids = sorted(r["id"] for r in yt.select_rows(f"id from [{output}]"))
    assert ids == first + second, "resumed from ZooKeeper: nothing lost, nothing read twice"

    result = CliRunner().invoke(
        app, ["status", "--proxy", yt_proxy, "--queue", queue, "--store", store_uri, "--offsets-group", group]
    )
    assert result.exit_code == 0, result.output
    assert "zookeeper://" in result.output and "30" in result.output


def test_a_stopped_stream_resumes_from_zookeeper_into_an_idempotent_target(
    spark, yt, yt_proxy, yt_root, zookeeper, tmp_path
) -> None:
    """Stopped mid-stream (its last batch not yet committed to ZooKeeper), checkpoint deleted: the restart re-reads
    at most that batch, which the sorted target keyed by the source coordinates absorbs: every row exactly once."""
    queue, output = f"{yt_root}/queue", f"{yt_root}/sorted"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=2)
    create_sorted_table(
        yt,
        output,
        [
            column("tablet", "int64", sort_order="ascending"),
            column("row", "int64", sort_order="ascending"),
            column("id", "int64"),
            column("payload", "string"),
        ],
    )
    store_uri, group = zookeeper.uri(f"/spyt-{uuid.uuid4().hex[:8]}"), "stopped"
    checkpoint = str(tmp_path / "chk")
    ids = produce_ids(yt, queue, 0, 60)
    query = _run(
        store_stream(spark, yt_proxy, queue, store_uri, group, max_rows_per_partition=3),
        yt_proxy,
        output,
        checkpoint,
        {"processingTime": "100 milliseconds"},
    )
    try:
        deadline = time.time() + 90
        while time.time() < deadline and sum(p["numInputRows"] for p in query.recentProgress) < 12:
            assert query.exception() is None, query.exception()
            time.sleep(0.2)
    finally:
        query.stop()
    shutil.rmtree(checkpoint)
    query = _run(
        store_stream(spark, yt_proxy, queue, store_uri, group), yt_proxy, output, checkpoint, {"availableNow": True}
    )
    query.awaitTermination(120)
    assert query.exception() is None
    rows = list(yt.select_rows(f"id from [{output}]"))
    assert sorted(r["id"] for r in rows) == ids


def test_kafka_topic_resumes_from_zookeeper_and_leaves_the_group_alone(
    spark, kafka_bootstrap, zookeeper, checkpoint, tmp_path
) -> None:
    topic = Topic(kafka_bootstrap, checkpoint)
    store_uri = zookeeper.uri(f"/spyt-{uuid.uuid4().hex[:8]}")
    first = topic.produce(30)
    path_one, path_two = str(tmp_path / "one"), str(tmp_path / "two")
    stream = topic.stream(spark, startingOffsets="earliest", max_rows_per_partition=4, **{"offsets.store": store_uri})
    run_to_files(stream, checkpoint, path_one)
    source = f"kafka:subscribe={topic.name}"
    assert _committed(store_uri, source, topic.group) == {f"{topic.name}:0": 15, f"{topic.name}:1": 15}
    assert topic.group_offsets() == {}, "positions went to ZooKeeper, not to the Kafka group"
    shutil.rmtree(checkpoint)
    second = topic.produce(10)
    run_to_files(topic.stream(spark, startingOffsets="store", **{"offsets.store": store_uri}), checkpoint, path_two)
    assert sorted(ids_in(spark, path_one) + ids_in(spark, path_two)) == first + second
