"""End to end on a real HBase: a ``ytqueue`` stream into the ``spyt_hbase`` sink with its positions in the HBase
offset store (``offsets.store=hbase://...``). A replay of every row converges to the same cells, and a restart with
the checkpoint deleted resumes from HBase with nothing lost or read twice."""

from __future__ import annotations

import shutil
import uuid

import pytest
from typer.testing import CliRunner

from spyt_queue.cli import app
from spyt_queue.stores.registry import open_store
from spyt_queue.yt.admin import create_queue
from tests.spark.helpers import EVENT_SCHEMA

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
    query.awaitTermination(180)
    assert query.exception() is None, query.exception()


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
