"""End to end into Kudu: a YT queue streams into the spyt_kudu sink with its positions in the same Kudu cluster
(``offsets.store=kudu://...``); the checkpoint is deleted and the restart resumes from Kudu: exactly-once table
state, compared with a state computed independently of the sink."""

from __future__ import annotations

import shutil
import time
import uuid

import pytest

from spyt_queue.sinks.kudu.client import get_client
from spyt_queue.sinks.kudu.store import KuduStore
from spyt_queue.yt.admin import create_queue
from tests.queries import run_to_end
from tests.yt.helpers import EVENT_SCHEMA, produce_ids, store_stream
from tests.yt.killed_driver import kill_driver_midway, start_query

pytestmark = pytest.mark.spark


def _stream(spark, proxy: str, queue: str, store: str, group: str, **options):
    return store_stream(spark, proxy, queue, store, group, "id % 7 as k", "id", "payload", **options)


def _sink(df, kudu, table: str, checkpoint: str, trigger: dict, **options):
    writer = (
        df.writeStream.format("spyt_kudu")
        .option("kudu.master", kudu.master_addresses)
        .option("table", table)
        .option("create_table", "true")
        .option("checkpointLocation", checkpoint)
    )
    for key, value in options.items():
        writer = writer.option(key, str(value))
    return writer.trigger(**trigger).start()


def test_append_keyed_by_source_coordinates_resumes_from_kudu(spark, yt, yt_proxy, yt_root, kudu, tmp_path) -> None:
    queue, table = f"{yt_root}/queue", f"events_{uuid.uuid4().hex[:8]}"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=2)
    store_uri, group = kudu.uri(f"offsets_{uuid.uuid4().hex[:8]}"), "to-kudu"
    checkpoint = str(tmp_path / "chk")
    append = {"planner": "append", "planner.key": "tablet,row"}
    first = produce_ids(yt, queue, 0, 40)
    df = _stream(spark, yt_proxy, queue, store_uri, group, max_rows_per_partition=5)
    run_to_end(lambda trigger: _sink(df, kudu, table, checkpoint, trigger, **append), timeout=180)
    source = f"yt:{queue}#{yt.get(queue + '/@id')}"
    store = KuduStore(kudu.master_addresses, store_uri.rsplit("/", 1)[1], source, group)
    assert store.committed() == {"0": 20, "1": 20}, "the final batch is committed to the Kudu store"
    shutil.rmtree(checkpoint)
    second = produce_ids(yt, queue, 40, 20)
    df = _stream(spark, yt_proxy, queue, store_uri, group)
    run_to_end(lambda trigger: _sink(df, kudu, table, checkpoint, trigger, **append), timeout=180)
    stored = get_client(kudu.master_addresses).table(table).read_all()
    assert sorted(r["id"] for r in stored) == first + second, "resumed from Kudu: nothing lost, nothing twice"
    assert store.committed() == {"0": 30, "1": 30}


def test_stopped_mid_stream_latest_state_is_exactly_once(spark, yt, yt_proxy, yt_root, kudu, tmp_path) -> None:
    """Stopped while batches run (the last one not yet committed to the store), checkpoint deleted: the restart
    replays from the Kudu store; the ``latest`` planner absorbs the replay. The table must equal the state computed
    from the queue alone: per key, the event with the highest row index."""
    queue, table = f"{yt_root}/queue", f"latest_{uuid.uuid4().hex[:8]}"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=1)
    store_uri, group = kudu.uri(f"offsets_{uuid.uuid4().hex[:8]}"), "latest"
    checkpoint = str(tmp_path / "chk")
    latest = {"planner": "latest", "planner.key": "k", "planner.event_time": "row"}
    ids = produce_ids(yt, queue, 0, 70, tablets=1)
    df = _stream(spark, yt_proxy, queue, store_uri, group, max_rows_per_partition=4).repartition("k")
    query = _sink(df, kudu, table, checkpoint, {"processingTime": "100 milliseconds"}, **latest)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and sum(p["numInputRows"] for p in query.recentProgress) < 16:
            assert query.exception() is None, query.exception()
            time.sleep(0.2)
    finally:
        query.stop()
    shutil.rmtree(checkpoint)
    df = _stream(spark, yt_proxy, queue, store_uri, group).repartition("k")
    query = _sink(df, kudu, table, checkpoint, {"availableNow": True}, **latest)
    query.awaitTermination(180)
    assert query.exception() is None
    expected = {}
    for row, i in enumerate(ids):  # one tablet: row index == position in the queue
        expected[i % 7] = (row, i, f"e{i}")
    stored = get_client(kudu.master_addresses).table(table).read_all()
    assert {r["k"]: (r["row"], r["id"], r["payload"]) for r in stored} == expected


def test_driver_killed_mid_batch_then_resumed_from_kudu_gives_the_exact_history(
    spark, yt, yt_proxy, yt_root, kudu, tmp_path
) -> None:
    """Chaos: a driver process streaming into Kudu (history planner) is killed with SIGKILL while batches run
    (a batch may be half-applied, its positions not committed); the restart, checkpoint deleted, resumes from the
    Kudu store and replays. The table must hold exactly the history computed from the queue alone."""
    queue, table = f"{yt_root}/queue", f"history_{uuid.uuid4().hex[:8]}"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=1)
    store_uri = kudu.uri(f"offsets_{uuid.uuid4().hex[:8]}")
    checkpoint = str(tmp_path / "chk")
    ids = produce_ids(yt, queue, 0, 90, tablets=1)
    spec = {
        "source": {
            "proxy": yt_proxy,
            "offsets.store": store_uri,
            "offsets.group": "chaos",
            "include_service_columns": "true",
            "max_rows_per_partition": "3",
        },
        "path": queue,
        "select": ["id % 5 as k", "id", "payload", "__spyt_streaming_src_row_index as row"],
        "repartition": ["k"],
        "sink": "spyt_kudu",
        "sink_options": {
            "kudu.master": kudu.master_addresses,
            "table": table,
            "create_table": "true",
            "planner": "history",
            "planner.key": "k",
            "planner.event_time": "row",
        },
        "checkpoint": checkpoint,
    }
    client = get_client(kudu.master_addresses)
    kill_driver_midway(tmp_path, spec, lambda: client.table_exists(table) and len(client.table(table).read_all()) >= 20)
    written_before_restart = len(client.table(table).read_all())
    assert written_before_restart < len(ids), "killed before the end: the restart has work to do"
    shutil.rmtree(checkpoint, ignore_errors=True)
    restart = {**spec, "source": {k: v for k, v in spec["source"].items() if k != "max_rows_per_partition"}}
    query = start_query(spark, restart, {"availableNow": True})
    query.awaitTermination(180)
    assert query.exception() is None
    expected = set()
    for k in range(5):
        rows = [row for row, i in enumerate(ids) if i % 5 == k]  # one tablet: row index == queue position
        for n, row in enumerate(rows):
            last = n == len(rows) - 1
            expected.add((k, row, ids[row], f"e{ids[row]}", 2**63 - 1 if last else rows[n + 1] - 1, last))
    stored = client.table(table).read_all()
    assert {(r["k"], r["row"], r["id"], r["payload"], r["effective_to"], r["is_current"]) for r in stored} == expected
    assert len(stored) == len(ids)


def test_kafka_topic_into_kudu_resumes_from_the_kudu_store(spark, kafka_bootstrap, kudu, checkpoint) -> None:
    """A Kafka topic through the ``upsert`` planner, keyed by the record key; positions in Kudu, not in the group."""
    from tests.kafka.helpers import Topic

    topic = Topic(kafka_bootstrap, checkpoint)
    table, store_uri = f"kafka_{uuid.uuid4().hex[:8]}", kudu.uri(f"offsets_{uuid.uuid4().hex[:8]}")
    upsert = {"planner": "upsert", "planner.key": "key"}

    def run(**options) -> None:
        df = topic.stream(spark, **{"offsets.store": store_uri}, **options).selectExpr(
            "cast(key as string) as key", "cast(cast(value as string) as long) as id", "partition", "offset"
        )
        query = _sink(df.repartition("key"), kudu, table, checkpoint, {"availableNow": True}, **upsert)
        query.awaitTermination(180)
        assert query.exception() is None

    first = topic.produce(30)
    run(startingOffsets="earliest", max_rows_per_partition=4)
    store = KuduStore(kudu.master_addresses, store_uri.rsplit("/", 1)[1], f"kafka:subscribe={topic.name}", topic.group)
    assert store.committed() == {f"{topic.name}:0": 15, f"{topic.name}:1": 15}
    assert topic.group_offsets() == {}, "positions went to Kudu, not to the Kafka group"
    shutil.rmtree(checkpoint)
    second = topic.produce(10)
    run(startingOffsets="store")
    stored = get_client(kudu.master_addresses).table(table).read_all()
    assert sorted(r["id"] for r in stored) == first + second
    assert {r["key"]: r["id"] for r in stored} == {f"k{i}": i for i in first + second}
