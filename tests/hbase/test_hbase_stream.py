"""End to end on a real HBase: ``ytqueue`` and Kafka streams into the ``spyt_hbase`` sink with their positions in the
HBase offset store (``offsets.store=hbase://...``). A replay of every row converges to the same cells, a restart
with the checkpoint deleted resumes from HBase with nothing lost or read twice, and after a driver killed with
SIGKILL mid-stream every key holds exactly one version per event at its event time."""

from __future__ import annotations

import shutil
import struct
import time
import uuid
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from spyt_queue.cli import app
from spyt_queue.stores.registry import open_store
from spyt_queue.yt.admin import create_queue
from tests.yt.helpers import EVENT_SCHEMA, produce_ids
from tests.yt.killed_driver import kill_driver_midway, start_query

pytestmark = pytest.mark.spark


def _run(spark, yt_proxy: str, queue: str, hbase, table: str, checkpoint: str, run: str, **reader_options) -> None:
    reader = spark.readStream.format("ytqueue").option("proxy", yt_proxy).option("include_service_columns", "true")
    for key, value in reader_options.items():
        reader = reader.option(key, str(value))
    df = reader.load(queue).selectExpr(
        "id",
        "payload",
        f"'{run}' as run",
        # the source position as the cell timestamp: a replay writes the very same versions
        "__spyt_streaming_src_row_index * 2 + __spyt_streaming_src_tablet_index + 1 as position",
    )
    query = (
        df.writeStream.format("spyt_hbase")
        .option("thrift", hbase.thrift_address)
        .option("table", table)
        .option("row_key", "id")
        .option("timestamp_column", "position")
        .option("create_table", "true")
        .option("batch_size", "7")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    _finish(query)


def _finish(query) -> None:
    """Wait (bounded) for an AvailableNow query to end; it must have ended without an error."""
    try:
        finished = query.awaitTermination(600)
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    assert finished, "the query did not read all available rows within 600 s"


def _cells(hbase, table: str) -> dict:
    conn = hbase.connection()
    try:
        return {key: data for key, data in conn.table(table).scan(include_timestamp=True)}
    finally:
        conn.close()


def _produce(yt, queue: str, first: int, count: int) -> list[int]:
    yt.insert_rows(queue, [{"id": i, "payload": f"e{i}", "$tablet_index": i % 2} for i in range(first, first + count)])
    return list(range(first, first + count))


def test_ytqueue_into_hbase_replays_converge_and_resume_from_the_hbase_store(
    spark, yt, yt_proxy, yt_root, hbase, tmp_path
) -> None:
    queue = f"{yt_root}/hbase-queue"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=2)
    table, offsets = f"events_{uuid.uuid4().hex[:8]}", f"offsets_{uuid.uuid4().hex[:8]}"
    store_uri, group = hbase.uri(offsets), "to-hbase"
    store = {"offsets.store": store_uri, "offsets.group": group}
    checkpoint = str(tmp_path / "chk")
    first = _produce(yt, queue, 0, 40)

    _run(spark, yt_proxy, queue, hbase, table, checkpoint, "first", max_rows_per_partition=5, **store)
    source = f"yt:{queue}#{yt.get(queue + '/@id')}"
    offsets_store = open_store(store_uri, source, group)
    assert offsets_store.committed() == {"0": 20, "1": 20}, "the final batch is committed to HBase"
    assert len(offsets_store.history(limit=100)) == 4, "one row per commit: 4 batches of 5 rows per tablet"
    after_first = _cells(hbase, table)
    assert sorted(int(k) for k in after_first) == first

    # A replay of every row (another group, from the earliest row, in other batch sizes) converges to the same
    # cells: same row keys, same values, same versions (the source position is the timestamp).
    _run(
        spark, yt_proxy, queue, hbase, table, str(tmp_path / "replay"), "first",
        startingOffsets="earliest", max_rows_per_partition=3, **{**store, "offsets.group": "replay"},
    )  # fmt: skip
    assert _cells(hbase, table) == after_first

    # Checkpoint deleted: the restart resumes from the HBase store and reads only the new rows.
    shutil.rmtree(checkpoint)
    second = _produce(yt, queue, 40, 20)
    _run(spark, yt_proxy, queue, hbase, table, checkpoint, "second", **store)
    final = _cells(hbase, table)
    assert sorted(int(k) for k in final) == first + second
    runs = {int(k): data[b"d:run"][0].decode() for k, data in final.items()}
    assert {i for i, run in runs.items() if run == "second"} == set(second), "nothing lost, nothing read twice"
    assert offsets_store.committed() == {"0": 30, "1": 30}
    offsets_store.close()

    result = CliRunner().invoke(
        app, ["status", "--proxy", yt_proxy, "--queue", queue, "--store", store_uri, "--offsets-group", group]
    )
    assert result.exit_code == 0, result.output
    assert "hbase://" in result.output and "30" in result.output


# ------------------------------------------------------------------------------------- driver killed mid-stream


def _history(hbase, table: str, keys: list[bytes], column: bytes) -> dict[bytes, list[tuple[bytes, int]]]:
    """Every stored version of ``column`` per row key, newest first, with its timestamp."""
    conn = hbase.connection()
    try:
        t = conn.table(table)
        return {key: t.cells(key, column, versions=10_000, include_timestamp=True) for key in keys}
    finally:
        conn.close()


def _versions_written(hbase, table: str, keys: list[bytes], column: bytes) -> int:
    return sum(len(versions) for versions in _history(hbase, table, keys, column).values())


def _table_with_history(hbase) -> str:
    """A fresh table keeping every version (the sink's create_table keeps one): the tests compare whole histories."""
    table = f"history_{uuid.uuid4().hex[:8]}"
    conn = hbase.connection()
    try:
        conn.create_table(table, {"d": {"max_versions": 10_000}})
    finally:
        conn.close()
    return table


def _kill_then_resume(spark, hbase, tmp_path, spec: dict, keys: list[bytes], total: int, **restart_source) -> None:
    """Run ``spec`` in a driver process, SIGKILL it once 15 versions are in HBase (a batch may be half-written, its
    positions not committed), delete the checkpoint and run the same query to the end in-process; the source
    positions come back from the HBase store."""
    table = spec["sink_options"]["table"]
    kill_driver_midway(tmp_path, spec, lambda: _versions_written(hbase, table, keys, b"d:id") >= 15, timeout=420)
    assert _versions_written(hbase, table, keys, b"d:id") < total, "killed before the end: the restart has work"
    shutil.rmtree(spec["checkpoint"], ignore_errors=True)
    resumed = {**spec, "source": {**spec["source"], **restart_source}}
    _finish(start_query(spark, resumed, {"availableNow": True}))


def _expected_history(
    events: list[tuple[int, int]], cell: Callable[[int], bytes] = lambda i: struct.pack(">q", i)
) -> dict[bytes, list[tuple[bytes, int]]]:
    """Per row key ``id % 5``, every event's cell (default: ``d:id``'s bytes) at its event time, newest first:
    exactly one version per event (a replay rewrites the same version; a server-time replay would add new ones)."""
    expected: dict[bytes, list[tuple[bytes, int]]] = {str(k).encode(): [] for k in range(5)}
    for ident, at in sorted(events, key=lambda e: -e[1]):
        expected[str(ident % 5).encode()].append((cell(ident), at))
    return expected


def test_driver_killed_mid_stream_ytqueue_into_hbase_replays_to_the_exact_versions(
    spark, yt, yt_proxy, yt_root, hbase, tmp_path
) -> None:
    """Chaos, ytqueue -> HBase (Thrift1 gateway): the driver is SIGKILLed while batches run; the restart with the
    checkpoint deleted resumes from the HBase store and replays the uncommitted batch. Every key must hold exactly
    one version per event at the event's time (its queue position), nothing lost, nothing doubled."""
    queue, table, offsets = f"{yt_root}/hbase-chaos", _table_with_history(hbase), f"offsets_{uuid.uuid4().hex[:8]}"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=1)
    ids = produce_ids(yt, queue, 0, 120, tablets=1)
    spec = {
        "source": {
            "proxy": yt_proxy,
            "offsets.store": hbase.uri(offsets),
            "offsets.group": "chaos",
            "include_service_columns": "true",
            "max_rows_per_partition": "3",
        },
        "path": queue,
        # one tablet: the row index is the queue position, the event time (ms; +1 keeps it above 0)
        "select": ["cast(id % 5 as string) as k", "id", "payload", "__spyt_streaming_src_row_index + 1 as at"],
        "sink": "spyt_hbase",
        "sink_options": {
            "thrift": hbase.thrift_address,
            "table": table,
            "row_key": "k",
            "timestamp_column": "at",
            "batch_size": "2",  # a task's rows go out in several calls: a kill can leave a task half-written
        },
        "checkpoint": str(tmp_path / "chk"),
    }
    keys = [str(k).encode() for k in range(5)]
    _kill_then_resume(spark, hbase, tmp_path, spec, keys, len(ids))
    events = [(i, i + 1) for i in ids]
    assert _history(hbase, table, keys, b"d:id") == _expected_history(events)
    assert _history(hbase, table, keys, b"d:payload") == _expected_history(events, lambda i: f"e{i}".encode())
    source = f"yt:{queue}#{yt.get(queue + '/@id')}"
    store = open_store(hbase.uri(offsets), source, "chaos")
    assert store.committed() == {"0": len(ids)}
    store.close()


def test_driver_killed_mid_stream_kafka_into_hbase_resumes_from_the_hbase_store(
    spark, kafka_bootstrap, hbase, tmp_path
) -> None:
    """Chaos, Kafka -> HBase (Thrift2 gateway, one putMultiple per batch with a timestamp per row): the record
    timestamp is the cell timestamp; the driver is SIGKILLed mid-stream, the restart (checkpoint deleted,
    ``startingOffsets=store``) resumes from the HBase store. Every key holds exactly one version per record at the
    record's time; the positions went to HBase, not to the Kafka group."""
    from confluent_kafka import Producer

    from tests.kafka.helpers import Topic

    topic = Topic(kafka_bootstrap, str(tmp_path / "chk"))
    table, offsets = _table_with_history(hbase), f"offsets_{uuid.uuid4().hex[:8]}"
    base = int(time.time()) * 1000 - 3_600_000  # an hour ago: older records would fall to the topic's retention
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    ids = list(range(120))
    for i in ids:  # key id % 5, value the id, event time base + id, round-robin over the 2 partitions
        producer.produce(topic.name, str(i).encode(), str(i % 5).encode(), partition=i % 2, timestamp=base + i)
    assert producer.flush(30) == 0
    spec = {
        "source": {
            "kafka.bootstrap.servers": kafka_bootstrap,
            "subscribe": topic.name,
            "kafka.group.id": topic.group,
            "offsets.store": hbase.uri(offsets),
            "startingOffsets": "earliest",
            "maxOffsetsPerTrigger": "6",
        },
        "select": ["cast(key as string) as k", "cast(cast(value as string) as long) as id", "timestamp as at"],
        "sink": "spyt_hbase",
        "sink_options": {
            "thrift": hbase.thrift2_address,
            "thrift_api": "2",
            "table": table,
            "row_key": "k",
            "timestamp_column": "at",
            "batch_size": "2",
        },
        "checkpoint": topic.checkpoint,
    }
    keys = [str(k).encode() for k in range(5)]
    _kill_then_resume(spark, hbase, tmp_path, spec, keys, len(ids), startingOffsets="store")
    assert _history(hbase, table, keys, b"d:id") == _expected_history([(i, base + i) for i in ids])
    store = open_store(hbase.uri(offsets), f"kafka:subscribe={topic.name}", topic.group)
    assert store.committed() == {f"{topic.name}:0": 60, f"{topic.name}:1": 60}
    store.close()
    assert topic.group_offsets() == {}, "positions went to HBase, not to the Kafka group"
