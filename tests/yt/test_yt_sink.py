"""The ytqueue sink: tablet routing, request batching, session settings, sorted upserts (real Spark, real server)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spyt_queue import session_defaults
from spyt_queue.yt.admin import column, create_queue, create_sorted_table
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.schema import YtSchema
from spyt_queue.yt.table_writer import YtTableWriter

pytestmark = pytest.mark.spark


def test_tablet_index_column_routes_rows(spark, yt, yt_proxy, yt_root) -> None:
    target = f"{yt_root}/routed"
    create_queue(yt, target, [column("id", "int64")], tablet_count=3)
    df = spark.createDataFrame([(i, i % 3) for i in range(12)], "id long, `$tablet_index` long")
    df.write.format("ytqueue").mode("append").option("proxy", yt_proxy).option("path", target).save()
    for tablet in range(3):
        rows = yt.pull_queue(target, offset=0, partition_index=tablet)
        assert sorted(r["id"] for r in rows) == [i for i in range(12) if i % 3 == tablet]


def test_sorted_target_upserts(spark, yt, yt_proxy, yt_root) -> None:
    target = f"{yt_root}/kv"
    create_sorted_table(yt, target, [column("k", "string", sort_order="ascending"), column("v", "int64")])
    write = spark.createDataFrame([("a", 1), ("b", 2)], "k string, v long")
    write.write.format("ytqueue").mode("append").option("proxy", yt_proxy).option("path", target).save()
    again = spark.createDataFrame([("a", 10)], "k string, v long")
    again.write.format("ytqueue").mode("append").option("proxy", yt_proxy).option("path", target).save()
    assert sorted((r["k"], r["v"]) for r in yt.select_rows(f"* from [{target}]")) == [("a", 10), ("b", 2)]


def test_dyn_batch_size_bounds_every_insert_request(yt, yt_proxy, yt_root) -> None:
    target = f"{yt_root}/batched"
    create_queue(yt, target, [column("id", "int64")])
    schema = YtSchema.parse(yt.get(f"{target}/@schema"))
    writer = YtTableWriter(YtConnection(yt_proxy), target, schema, dyn_batch_size=3)
    batches = [pa.RecordBatch.from_pydict({"id": list(range(i, i + 5))}) for i in (0, 5)]
    stats = writer.write(iter(batches))
    assert (stats.rows, stats.requests) == (10, 4)
    assert int(yt.get_tablet_infos(target, [0])["tablets"][0]["total_row_count"]) == 10


def test_spyt_session_setting_becomes_the_default_batch_size(spark) -> None:
    assert "dyn_batch_size" not in session_defaults(spark)
    spark.conf.set("spark.yt.write.dynBatchSize", "1234")
    try:
        assert session_defaults(spark) == {"dyn_batch_size": "1234"}
        spark.conf.set("spark.ytsaurus.write.dynBatchSize", "99")
        assert session_defaults(spark) == {"dyn_batch_size": "99"}  # spark.ytsaurus.* wins, as in SPYT
    finally:
        spark.conf.unset("spark.yt.write.dynBatchSize")
        spark.conf.unset("spark.ytsaurus.write.dynBatchSize")
