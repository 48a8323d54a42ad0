"""Kafka source -> YT sorted table keyed by the record's coordinates: exactly once through a forced replay.

Not collected on its own (no ``test_`` prefix): ``tests/clusters/standalone/test_standalone_cluster.py`` runs it, with
the shared stream scenarios, in a test session whose SparkSession is a driver of the standalone cluster, so that its
tasks run in executor processes of the workers.
"""

from __future__ import annotations

from typing import Any

import pytest

from spyt_queue.yt.admin import column, create_sorted_table
from tests.kafka.helpers import Topic
from tests.yt.helpers import purge_last_commit

pytestmark = pytest.mark.spark


def _run(spark: Any, topic: Topic, target: str, proxy: str, checkpoint: str) -> None:
    df = topic.stream(spark, startingOffsets="group", max_rows_per_partition=15).selectExpr(
        "partition AS src_partition", "offset AS src_offset", "cast(cast(value AS string) AS bigint) AS id"
    )
    query = (
        df.writeStream.format("ytqueue")
        .option("proxy", proxy)
        .option("path", target)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert not query.isActive, "the query did not finish within 300 s"
    assert query.exception() is None, query.exception()


def test_kafka_into_a_sorted_yt_table_is_exactly_once_through_a_replay(
    spark, kafka_bootstrap, yt, yt_proxy, yt_root, checkpoint
) -> None:
    topic = Topic(kafka_bootstrap, checkpoint)
    target = f"{yt_root}/target"
    create_sorted_table(
        yt,
        target,
        [
            column("src_partition", "int32", sort_order="ascending"),
            column("src_offset", "int64", sort_order="ascending"),
            column("id", "int64"),
        ],
    )
    ids = topic.produce(60)
    _run(spark, topic, target, yt_proxy, checkpoint)
    assert purge_last_commit(checkpoint) >= 1  # several batches (15 rows per partition each)
    ids += topic.produce(20)
    _run(spark, topic, target, yt_proxy, checkpoint)  # replays the last batch, then reads the new records
    written = sorted(int(r["id"]) for r in yt.select_rows(f"id FROM [{target}]"))
    assert written == ids, "every record exactly once"
    assert topic.group_offsets() == topic.ends() == {0: 40, 1: 40}
