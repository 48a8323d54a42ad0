"""spyt-queue's formats from a Spark Connect client, against a Connect server started from the installed PySpark.

The server discovers ``ytqueue``, ``spyt_kudu`` and ``spyt_hbase`` itself (its driver Python has spyt-queue
installed); the client sends plans, and may register sources of its own with ``spark.dataSource.register``. Every
option value (addresses, paths, the checkpoint) is read by the server and its executors, not by the client.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from spyt_queue.datasource import YtQueueDataSource
from spyt_queue.lag import lag_from_progress
from spyt_queue.yt.admin import column, create_consumer, create_queue, create_sorted_table
from tests.kafka.helpers import Topic, ids_in, run_to_files
from tests.yt.helpers import Pipeline
from tests.yt.user_errors import first_line, query_failure

pytestmark = pytest.mark.spark

SORTED_BY_SOURCE = [
    column("src_tablet", "int64", sort_order="ascending"),
    column("src_row", "int64", sort_order="ascending"),
    column("id", "int64"),
    column("payload", "string"),
]


def run_to_sorted_table(spark: Any, pipe: Pipeline, target: str) -> Any:
    """Queue -> sorted table keyed by each row's source position, with ``Trigger.AvailableNow``; the finished query."""
    query = (
        pipe.reader(spark, max_rows_per_partition=10)
        .selectExpr(
            "__spyt_streaming_src_tablet_index AS src_tablet",
            "__spyt_streaming_src_row_index AS src_row",
            "id",
            "payload",
        )
        .writeStream.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("path", target)
        .option("checkpointLocation", pipe.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert not query.isActive, "the AvailableNow query did not finish within 240 s"
    assert query.exception() is None, query.exception()
    return query


def test_yt_queue_to_yt_table_exactly_once_with_available_now(connect_spark, pipe) -> None:
    """A stream started from the client runs on the server: batches capped per tablet, progress readable from the
    client, the consumer advanced to the end; a replayed batch (its commit purged) and a restart from the checkpoint
    (started from another client thread) leave every row exactly once in the target."""
    target = f"{pipe.queue}_by_source"
    create_sorted_table(pipe.yt, target, SORTED_BY_SOURCE)
    pipe.produce(40)  # 20 per tablet: two batches of 10 per tablet

    query = run_to_sorted_table(connect_spark, pipe, target)
    progress = query.recentProgress
    assert sum(p.numInputRows for p in progress) == 40  # the attribute: progress["numInputRows"] is None on Connect
    assert [p.numInputRows for p in progress if p.numInputRows] == [20, 20]
    assert lag_from_progress(query.lastProgress) == {"0": 0, "1": 0}
    assert pipe.consumer_offsets() == pipe.ends() == {0: 20, 1: 20}

    replayed = pipe.purge_last_commit()
    assert replayed >= 1
    pipe.produce(10)
    # from another client thread: a classic session finds no Python sink there (README, "Several queries")
    restart = ThreadPoolExecutor(1).submit(run_to_sorted_table, connect_spark, pipe, target)
    restart.result(300)
    ids = sorted(r["id"] for r in pipe.yt.select_rows(f"id from [{target}]"))
    assert ids == list(range(50))
    assert pipe.consumer_offsets() == pipe.ends() == {0: 25, 1: 25}


def test_batch_read_and_batch_write(connect_spark, pipe) -> None:
    """``spark.read`` of a queue (an explicit range), and ``df.write`` of rows the client created into an ordered
    table."""
    pipe.produce(12)
    rows = (
        connect_spark.read.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("startingOffsets", '{"0": 1, "1": -2}')
        .option("endingOffsets", '{"0": 4, "1": -1}')
        .load(pipe.queue)
        .collect()
    )
    # round-robin: tablet 0 holds the even ids, tablet 1 the odd ones; tablet 0's rows 1..3 and all of tablet 1
    assert sorted(r.id for r in rows) == [1, 2, 3, 4, 5, 6, 7, 9, 11]

    log = f"{pipe.queue}_log"
    create_queue(pipe.yt, log, [column("payload", "string")], tablet_count=2)
    client_rows = connect_spark.createDataFrame([("hello",), ("world",)], "payload string")
    client_rows.write.format("ytqueue").option("proxy", pipe.proxy).option("path", log).mode("append").save()
    assert sorted(r["payload"] for r in pipe.yt.select_rows(f"payload from [{log}]")) == ["hello", "world"]


def test_kafka_stream_commits_the_group(connect_spark, kafka_bootstrap, tmp_path) -> None:
    """The Kafka adapter from the client: every record once in the file sink, across a restart from the checkpoint,
    and the group's committed offsets at the end of the topic after each AvailableNow run."""
    topic = Topic(kafka_bootstrap, str(tmp_path / "checkpoint"))
    out = str(tmp_path / "out")
    topic.produce(30)
    stream = topic.stream(connect_spark, startingOffsets="earliest", maxOffsetsPerTrigger=12)
    run_to_files(stream, topic.checkpoint, out)
    assert ids_in(connect_spark, out) == list(range(30))
    assert topic.group_offsets() == topic.ends()

    topic.produce(8)
    run_to_files(topic.stream(connect_spark, startingOffsets="earliest"), topic.checkpoint, out)
    assert ids_in(connect_spark, out) == list(range(38))
    assert topic.group_offsets() == topic.ends()


def test_sources_registered_from_the_client(connect_spark, pipe) -> None:
    """``spyt_queue.register(spark)`` works on a Connect session (it registers through the client; the JVM-side
    pre-fill is skipped), and ``spark.dataSource.register`` of a class the client defines reaches the server: the
    class is pickled by value and the name is known to that session only."""
    pipe.produce(6)
    connect_spark.conf.set("spark.yt.write.dynBatchSize", "2")  # a session default register() carries over
    try:
        import spyt_queue

        spyt_queue.register(connect_spark)
        assert connect_spark.read.format("ytqueue").option("proxy", pipe.proxy).load(pipe.queue).count() == 6
    finally:
        connect_spark.conf.unset("spark.yt.write.dynBatchSize")

    client_defined = type("ClientYtQueue", (YtQueueDataSource,), {"name": classmethod(lambda cls: "ytqueue_client")})
    client_defined.__module__ = "__main__"  # pickled by value: the server needs no module of the client
    connect_spark.dataSource.register(client_defined)
    rows = connect_spark.read.format("ytqueue_client").option("proxy", pipe.proxy).load(pipe.queue).collect()
    assert sorted(r.id for r in rows) == list(range(6))

    other = connect_spark.newSession()
    with pytest.raises(Exception, match="DATA_SOURCE_NOT_FOUND"):
        other.read.format("ytqueue_client").option("proxy", pipe.proxy).load(pipe.queue).collect()


def test_load_errors_come_back_in_one_line(connect_spark, pipe) -> None:
    """An invalid option at ``load()``: the client's ``AnalysisException`` starts with spyt-queue's one-line message."""
    reader = connect_spark.read.format("ytqueue").option("proxy", pipe.proxy).option("max_rows_per_partiton", "5")
    with pytest.raises(Exception) as caught:
        reader.load(pipe.queue).collect()
    line = first_line(caught.value)
    assert type(caught.value).__name__ == "AnalysisException"
    assert line.endswith(
        "OptionError: Invalid option 'max_rows_per_partiton': not an option of the YTsaurus queue source; "
        "did you mean 'max_rows_per_partition'?"
    ), line


@pytest.mark.parametrize(
    ("sink", "described"),
    [("ytqueue", "YTsaurus table sink"), ("spyt_kudu", "spyt_kudu sink"), ("spyt_hbase", "spyt_hbase sink")],
)
def test_sink_errors_come_back_in_one_line(connect_spark, tmp_path, sink: str, described: str) -> None:
    """Each sink format resolves on the server (discovered there); a misspelt option fails the query, and the
    client's ``StreamingQueryException`` names the option and the sink in its first line."""
    query = (
        connect_spark.readStream.format("rate")
        .load()
        .writeStream.format(sink)
        .option("no_such_option", "1")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    error = query_failure(query, timeout=180)
    line = first_line(error)
    assert type(error).__name__ == "StreamingQueryException"
    assert f"OptionError: Invalid option 'no_such_option': not an option of the {described}" in line, line
    assert "Traceback" not in line


def test_stream_only_option_error_names_the_option(connect_spark, pipe) -> None:
    """An option wrong only for a stream fails the query when it starts; the client reads which."""
    query = (
        pipe.reader(connect_spark, endingOffsets="latest")
        .writeStream.format("noop")
        .option("checkpointLocation", pipe.checkpoint)
        .start()
    )
    line = first_line(query_failure(query, timeout=180))
    assert line.endswith(
        "OptionError: Invalid option 'endingOffsets': only batch queries (spark.read) take an ending position"
    ), line


def test_foreach_batch_runs_in_a_python_process_of_the_server(connect_spark, pipe) -> None:
    """``foreachBatch``'s function is pickled and run by the server in a Python process of its own: it writes with
    spyt-queue's sink from there, and what it changes in its closure never reaches the client."""
    target = f"{pipe.queue}_from_batches"
    create_queue(pipe.yt, target, [column("id", "int64"), column("batch", "int64"), column("pid", "int64")])
    pipe.produce(8)
    seen: list[int] = []
    proxy = pipe.proxy

    def write_batch(batch: Any, batch_id: int) -> None:
        import os

        from pyspark.sql.functions import lit

        seen.append(batch_id)  # changes the server-side copy of the list only
        (
            batch.select("id", lit(batch_id).alias("batch"), lit(os.getpid()).alias("pid"))
            .write.format("ytqueue")
            .option("proxy", proxy)
            .option("path", target)
            .mode("append")
            .save()
        )

    query = (
        pipe.reader(connect_spark)
        .writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", pipe.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert query.exception() is None, query.exception()
    rows = list(pipe.yt.select_rows(f"id, batch, pid from [{target}]"))
    assert sorted(r["id"] for r in rows) == list(range(8))
    assert {r["pid"] for r in rows} and os.getpid() not in {r["pid"] for r in rows}
    assert seen == []


def test_client_environment_is_not_the_servers(connect_spark, pipe, monkeypatch) -> None:
    """``YT_PROXY`` set in the client's process does not reach the source, which runs on the server: pass
    ``proxy`` (and ``token``) as options, or set them in the server's environment."""
    monkeypatch.setenv("YT_PROXY", pipe.proxy)
    with pytest.raises(Exception) as caught:
        connect_spark.read.format("ytqueue").load(pipe.queue).collect()
    line = first_line(caught.value)
    assert line.endswith(
        "OptionError: Invalid option 'proxy': no YTsaurus proxy given: set .option('proxy', "
        "'host:port') or the YT_PROXY environment variable (for the embedded local server, the "
        "address printed by 'ytqueue local'); YT_PROXY must be set before the SparkSession starts: Spark's Python "
        "workers keep the environment of its start"
    ), line


def test_readme_recipe(connect_server, connect_spark, yt, yt_proxy, yt_root, checkpoint, capsys) -> None:
    """The "Spark Connect" Python block of docs/clusters.md, run as written against this session's server (the
    addresses, ``//home/me/`` and the checkpoint path replaced), after the tables the README's examples create."""
    from tests.docs.test_readme_examples import DOCS, page_blocks

    (block,) = [
        b for b in page_blocks(DOCS / "clusters.md") if b.key == ("docs/clusters.md", "Spark Connect", "python")
    ]
    code = block.code
    for value, replacement in {
        "sc://localhost:15002": connect_server.url,
        "localhost:8000": yt_proxy,
        "//home/me/": f"{yt_root}/",
        "/tmp/spyt-connect/out": checkpoint,
    }.items():
        assert value in code, f"the Spark Connect block at {block.where} no longer names {value}"
        code = code.replace(value, replacement)
    queue, consumer, out = f"{yt_root}/queue", f"{yt_root}/consumer", f"{yt_root}/out"
    create_queue(yt, queue, [column("id", "int64", required=True), column("payload", "string")], tablet_count=2)
    create_consumer(yt, consumer, queue)
    create_sorted_table(yt, out, [SORTED_BY_SOURCE[0], SORTED_BY_SOURCE[1], column("payload", "string")])
    yt.insert_rows(queue, [{"id": i, "payload": f"p{i}", "$tablet_index": i % 2} for i in range(6)])

    exec(compile(code, f"{block.where} (Spark Connect)", "exec"), {})

    assert sorted(r["payload"] for r in yt.select_rows(f"payload from [{out}]")) == [f"p{i}" for i in range(6)]
    assert "6 rows" in capsys.readouterr().out
