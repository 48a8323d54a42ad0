"""A queue whose schema grows (``alter_table`` adding a column to the unmounted queue) under a running query, and
after a restart. Spark fixes a streaming query's schema when it starts; the source never drops the new column's
values silently: the running query stops with one line naming the column and saying to restart, and the restart
(from the same checkpoint, nothing lost or read twice) reads the new column."""

from __future__ import annotations

import time
from typing import Any

import pytest

from spyt_queue.yt.admin import column, create_consumer, create_queue

pytestmark = pytest.mark.spark


def _start(spark: Any, proxy: str, queue: str, consumer: str, checkpoint: str, seen: list, **options: Any) -> Any:
    reader = spark.readStream.format("ytqueue").option("proxy", proxy).option("consumer_path", consumer)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    df = reader.load(queue)
    return (
        df.writeStream.foreachBatch(lambda batch, _: seen.extend(r.asDict() for r in batch.collect()))
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="300 milliseconds")
        .start()
    )


def _wait(condition, query: Any, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert query.isActive, f"the query stopped while waiting for {what}: {query.exception()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.parametrize("read_format", ["yson", "dsv"])
def test_a_column_added_under_a_running_query_stops_it_and_the_restart_reads_it(
    spark, yt, yt_proxy, yt_root, checkpoint, read_format
) -> None:
    queue, consumer = f"{yt_root}/grow", f"{yt_root}/grow_consumer"
    create_queue(yt, queue, [column("id", "int64"), column("payload", "string")], tablet_count=1)
    create_consumer(yt, consumer, queue)
    yt.insert_rows(queue, [{"id": i, "payload": f"p{i}"} for i in range(3)])
    seen: list[dict] = []
    query = _start(spark, yt_proxy, queue, consumer, checkpoint, seen, read_format=read_format)
    try:
        _wait(lambda: len(seen) >= 3, query, "the first rows")
        yt.unmount_table(queue, sync=True)
        schema = [column("id", "int64"), column("payload", "string"), column("region", "string")]
        yt.alter_table(queue, schema=schema)
        yt.mount_table(queue, sync=True)
        yt.insert_rows(queue, [{"id": i, "payload": f"p{i}", "region": f"r{i}"} for i in range(3, 6)])
        deadline = time.monotonic() + 90
        while query.isActive and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not query.isActive, f"the query went on without the new column: {seen}"
        error = str(query.exception())
    finally:
        if query.isActive:
            query.stop()
    assert "gained column(s) 'region'" in error and "restart the query" in error, error[:2000]
    assert sorted(r["id"] for r in seen) == [0, 1, 2], "no row of the grown schema read without its new column"
    restarted = _start(spark, yt_proxy, queue, consumer, checkpoint, seen, read_format=read_format)
    try:
        _wait(lambda: len(seen) >= 6, restarted, "the rows with the new column")
    finally:
        restarted.stop()
    assert sorted(r["id"] for r in seen) == list(range(6)), "nothing lost, nothing read twice"
    assert {r["id"]: r.get("region") for r in seen if r["id"] >= 3} == {3: "r3", 4: "r4", 5: "r5"}
