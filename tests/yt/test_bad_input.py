"""Common mistakes with YTsaurus queues get one clear line, fast: misspelt options, bad values, a proxy that is not
there, a consumer that is not registered. Each test drives a Spark query and checks the first line of the error
the user sees and that it came back within a bound (generous: never a tight timing)."""

from __future__ import annotations

import pytest

from spyt_queue.yt.admin import column, create_consumer, create_queue, create_sorted_table
from tests.yt.user_errors import SLACK_S, failure, first_line, free_port, query_failure

pytestmark = pytest.mark.spark

DEFAULT_CONNECT_TIMEOUT_S = 20  # documented default of connect_timeout


def clean(line: str) -> None:
    """The first line carries the whole message: no traceback, no masking secondary error."""
    assert "Traceback" not in line and "UnboundLocalError" not in line, line


# -- misspelt options ------------------------------------------------------------------------------------------------


def test_misspelt_reader_option_fails_at_load_suggesting_the_right_name(spark, pipe) -> None:
    error, seconds = failure(lambda: pipe.reader(spark, max_rows_per_partiton=5))
    line = first_line(error)
    assert "Invalid option 'max_rows_per_partiton': not an option of the YTsaurus queue source; did you mean " in line
    assert "'max_rows_per_partition'?" in line
    clean(line)
    assert seconds < SLACK_S
    # the same for a batch read
    error, _ = failure(
        lambda: (
            spark.read.format("ytqueue").option("proxy", pipe.proxy).option("failOnDataLos", "false").load(pipe.queue)
        )
    )
    assert (
        "Invalid option 'failondatalos': not an option of the YTsaurus queue source; did you mean 'failOnDataLoss'?"
        in (first_line(error))
    )


def test_kafka_option_on_a_yt_source_says_what_it_belongs_to(spark, pipe) -> None:
    error, _ = failure(lambda: pipe.reader(spark, subscribe="events"))
    assert "Invalid option 'subscribe': not an option of the YTsaurus queue source: it is an option of the Kafka" in (
        first_line(error)
    )


def test_misspelt_writer_option_fails_before_writing(spark, pipe, yt) -> None:
    df = spark.createDataFrame([(1, "a", 0, 0)], "id long, payload string, tablet long, row long")
    writer = df.write.format("ytqueue").mode("append").option("proxy", pipe.proxy).option("dyn_batch_sise", 10)
    error, seconds = failure(lambda: writer.save(pipe.output))
    line = first_line(error)
    assert (
        "Invalid option 'dyn_batch_sise': not an option of the YTsaurus table sink; did you mean 'dyn_batch_size'?"
        in (line)
    )
    clean(line)
    assert seconds < SLACK_S
    assert pipe.output_ids() == []  # nothing was written


def test_misspelt_stream_writer_option_fails_at_start(spark, pipe) -> None:
    pipe.produce(4)
    df = pipe.reader(spark).selectExpr("id", "payload", "0L as tablet", "0L as row")
    writer = (
        df.writeStream.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("path", pipe.output)
        .option("checkpointLocation", pipe.checkpoint)
        .option("producer_allow_gap", "true")
        .trigger(availableNow=True)
    )
    try:
        query = writer.start()
    except Exception as error:
        line = first_line(error)
    else:
        line = first_line(query_failure(query))
    assert "Invalid option 'producer_allow_gap': not an option of the YTsaurus table sink; did you mean " in line
    assert pipe.output_ids() == []


def test_a_reading_option_on_the_sink_says_where_it_belongs(spark, pipe) -> None:
    df = spark.createDataFrame([(1, "a", 0, 0)], "id long, payload string, tablet long, row long")
    writer = df.write.format("ytqueue").mode("append").option("proxy", pipe.proxy).option("consumer_path", "//c")
    error, _ = failure(lambda: writer.save(pipe.output))
    line = first_line(error)
    assert "Invalid option 'consumer_path': a writer takes it only with transactional=true" in line, line
    assert "(a consumer_path to read from belongs on spark.readStream)" in line, line


def test_pass_through_and_spark_provided_options_stay_open(spark, pipe) -> None:
    """``yt.*`` reaches yt.wrapper; Spark's own checkpointLocation and queryName reach the sink; aliases and any case
    are accepted."""
    pipe.produce(6)
    df = pipe.reader(spark, **{"yt.proxy.request_timeout": 30000, "MaxRowsPerPartition": 2, "connect_timeout": 10})
    query = (
        df.selectExpr(
            "id", "payload", "__spyt_streaming_src_tablet_index as tablet", "__spyt_streaming_src_row_index as row"
        )
        .writeStream.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("path", pipe.output)
        .option("yt.proxy.request_timeout", "30000")
        .option("dynBatchSize", "2")
        .option("checkpointLocation", pipe.checkpoint)
        .queryName("bad_input_pass_through")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert pipe.output_ids() == list(range(6))


# -- bad values ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("max_rows_per_partition", "-5", "Invalid option 'max_rows_per_partition': expected an integer >= 1, got -5"),
        ("failOnDataLoss", "maybe", "Invalid option 'failOnDataLoss': expected true or false, got 'maybe'"),
        ("connect_timeout", "0", "Invalid option 'connect_timeout': expected a number of seconds > 0, got '0'"),
    ],
)
def test_bad_value_is_one_line_at_load(spark, pipe, option, value, expected) -> None:
    error, seconds = failure(lambda: pipe.reader(spark, **{option: value}))
    line = first_line(error)
    assert expected in line
    clean(line)
    assert seconds < SLACK_S


def test_bad_value_only_wrong_for_a_stream_is_one_line_at_start(spark, pipe) -> None:
    df = pipe.reader(spark, endingOffsets="latest")  # valid for spark.read: load() can not tell
    query = df.writeStream.format("noop").option("checkpointLocation", pipe.checkpoint).start()
    line = first_line(query_failure(query))
    assert "Invalid option 'endingOffsets': only batch queries (spark.read) take an ending position" in line
    clean(line)


def test_bad_writer_value_is_one_line(spark, pipe) -> None:
    df = spark.createDataFrame([(1, "a", 0, 0)], "id long, payload string, tablet long, row long")
    writer = df.write.format("ytqueue").mode("append").option("proxy", pipe.proxy).option("dyn_batch_size", "-5")
    error, _ = failure(lambda: writer.save(pipe.output))
    line = first_line(error)
    assert "Invalid option 'dyn_batch_size': expected an integer >= 1, got -5" in line
    clean(line)


# -- a proxy that is not there ---------------------------------------------------------------------------------------


def test_unreachable_proxy_fails_at_load_within_connect_timeout_naming_it(spark) -> None:
    proxy = f"localhost:{free_port()}"
    reader = spark.readStream.format("ytqueue").option("proxy", proxy).option("consumer_path", "//c")
    error, seconds = failure(lambda: reader.option("connect_timeout", 3).load("//q"))
    line = first_line(error)
    assert f"YTsaurus proxy {proxy} did not answer within 3 s (Connection refused)" in line
    clean(line)
    assert seconds < 3 + SLACK_S


def test_unreachable_proxy_default_timeout_is_bounded(spark) -> None:
    proxy = f"localhost:{free_port()}"
    error, seconds = failure(lambda: spark.read.format("ytqueue").option("proxy", proxy).load("//q").count())
    assert f"YTsaurus proxy {proxy} did not answer within {DEFAULT_CONNECT_TIMEOUT_S} s" in first_line(error)
    assert seconds < DEFAULT_CONNECT_TIMEOUT_S + SLACK_S


def test_unreachable_proxy_on_the_sink_fails_within_connect_timeout(spark) -> None:
    proxy = f"localhost:{free_port()}"
    df = spark.createDataFrame([(1,)], "id long")
    writer = df.write.format("ytqueue").mode("append").option("proxy", proxy).option("connect_timeout", "2")
    error, seconds = failure(lambda: writer.save("//out"))
    line = first_line(error)
    assert f"YTsaurus proxy {proxy} did not answer within 2 s" in line
    clean(line)
    assert seconds < 2 + SLACK_S


# -- a queue that is not there ---------------------------------------------------------------------------------------


def test_missing_queue_names_the_path_given_to_load(spark, yt_proxy, yt_root) -> None:
    missing = f"{yt_root}/no-such-queue"
    error, seconds = failure(lambda: spark.read.format("ytqueue").option("proxy", yt_proxy).load(missing))
    line = first_line(error)
    assert f"Queue {missing} does not exist on " in line and "(check the path given to load())" in line, line
    clean(line)
    assert seconds < SLACK_S


# -- a consumer that is not registered -------------------------------------------------------------------------------


def test_unregistered_consumer_fails_when_the_query_starts_saying_how_to_register(
    spark, yt, yt_proxy, yt_root, checkpoint
) -> None:
    queue, other, consumer = f"{yt_root}/queue", f"{yt_root}/other", f"{yt_root}/consumer"
    create_queue(yt, queue, [column("id", "int64")], tablet_count=2)
    create_queue(yt, other, [column("id", "int64")], tablet_count=1)
    create_consumer(yt, consumer, other)  # registered for another queue only
    yt.insert_rows(queue, [{"id": 1, "$tablet_index": 0}])
    df = spark.readStream.format("ytqueue").option("proxy", yt_proxy).option("consumer_path", consumer).load(queue)
    query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()
    line = first_line(query_failure(query, timeout=60))
    assert f"Consumer {consumer} (consumer_path) is not registered for queue {queue}: register it with " in line
    assert f"`ytqueue create-consumer {consumer} --queue {queue}`" in line
    assert "register_queue_consumer(" in line
    clean(line)


def test_missing_consumer_says_how_to_create_it(spark, yt, yt_proxy, yt_root, checkpoint) -> None:
    queue, consumer = f"{yt_root}/queue", f"{yt_root}/nobody"
    create_queue(yt, queue, [column("id", "int64")], tablet_count=1)
    df = spark.readStream.format("ytqueue").option("proxy", yt_proxy).option("consumer_path", consumer).load(queue)
    query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()
    line = first_line(query_failure(query, timeout=60))
    assert (
        f"Consumer {consumer} (consumer_path) does not exist: create and register it with `ytqueue create-consumer"
        in (line)
    )


# -- first use (issue 32): what a new user meets, one line each ------------------------------------------------------


def shown_lines(error: BaseException) -> list[str]:
    """The non-empty lines a console shows of ``error`` (Spark adds a ``SQLSTATE`` line to a one-line message)."""
    return [line for line in str(error).splitlines() if line.strip()]


def test_batch_write_without_a_mode_is_refused_by_spark_naming_append(spark, pipe) -> None:
    """PySpark's Python data sources are TableProviders: Spark refuses the default save mode (errorifexists) itself,
    before spyt-queue's writer is asked (docs/writing-yt.md); overwrite is refused by spyt-queue, naming append."""
    df = spark.createDataFrame([(1, "a")], "id long, payload string")
    error, _ = failure(lambda: df.write.format("ytqueue").option("proxy", pipe.proxy).save(pipe.output))
    lines = shown_lines(error)
    assert "cannot be written in the \"ErrorIfExists\" mode" in lines[0] and '"Append"' in lines[0], lines
    assert len(lines) <= 2, lines
    error, _ = failure(
        lambda: df.write.format("ytqueue").option("proxy", pipe.proxy).mode("overwrite").save(pipe.output)
    )
    lines = shown_lines(error)
    assert "can not replace the target (overwrite): use mode('append')" in lines[0], lines
    assert len(lines) <= 2, lines
    assert pipe.output_ids() == []


def test_writing_to_a_missing_table_is_one_line_with_a_create_table_hint(spark, pipe, yt_root) -> None:
    missing = f"{yt_root}/no-such-table"
    df = spark.createDataFrame([(1, "a")], "id long, payload string")
    error, _ = failure(lambda: df.write.format("ytqueue").mode("append").option("proxy", pipe.proxy).save(missing))
    lines = shown_lines(error)
    assert f"Output table {missing} does not exist on {pipe.proxy}: create it, e.g. " in lines[0], lines
    assert f"`ytqueue create-table {missing} --schema id:int64,payload:string`" in lines[0], lines
    assert len(lines) <= 2, lines  # was 57: yt.wrapper's request and response headers
    clean(lines[0])


def test_schema_errors_show_yt_types_and_call_optional_keys_key_columns(spark, pipe, yt, yt_root) -> None:
    out = f"{yt_root}/sorted-out"
    create_sorted_table(
        yt,
        out,
        [
            column("src_tablet", "int64", sort_order="ascending"),
            column("src_row", "int64", sort_order="ascending"),
            column("payload", "string", required=True),
        ],
    )
    df = spark.createDataFrame([(1.5, "a")], "x double, payload string")
    error, _ = failure(lambda: df.write.format("ytqueue").mode("append").option("proxy", pipe.proxy).save(out))
    lines = shown_lines(error)
    assert "column 'x' (double) is not in the table schema" in lines[0], lines
    assert "key column 'src_tablet' (optional<int64>) is missing from the DataFrame" in lines[0], lines
    assert "required column 'src_tablet'" not in lines[0] and "type_name" not in lines[0], lines
    assert len(lines) <= 2, lines


def test_misspelt_bootstrap_servers_gets_a_did_you_mean(spark) -> None:
    reader = spark.readStream.format("ytqueue").option("kafka.bootstrap.server", "localhost:9092")
    error, _ = failure(lambda: reader.option("subscribe", "events").load())
    lines = shown_lines(error)
    assert "Invalid option 'kafka.bootstrap.server': not an option of the YTsaurus queue source; did you mean " in (
        lines[0]
    )
    assert "'kafka.bootstrap.servers'?" in lines[0], lines
    assert len(lines) <= 2, lines


def test_unknown_writer_option_names_each_pass_through_prefix_once(spark, pipe) -> None:
    df = spark.createDataFrame([(1, "a")], "id long, payload string")
    writer = df.write.format("ytqueue").mode("append").option("proxy", pipe.proxy).option("qqq", "1")
    error, _ = failure(lambda: writer.save(pipe.output))
    lines = shown_lines(error)
    assert "Invalid option 'qqq': not an option of the YTsaurus table sink" in lines[0], lines
    assert "; yt.* options are passed through)" in lines[0], lines
    assert len(lines) <= 2, lines


def test_a_mistyped_store_uri_is_shown_so_the_typo_can_be_seen(spark, pipe) -> None:
    typo = "zookeeper:/localhost:2181/spyt"  # one slash short; 30 characters (it was shown as 'zoo…')
    error, _ = failure(lambda: pipe.reader(spark, **{"offsets.store": typo}))
    lines = shown_lines(error)
    assert "Invalid option 'offsets.store': expected one of default, consumer, group or a store URI" in lines[0]
    assert f"got '{typo}'" in lines[0], lines
    assert len(lines) <= 2, lines
    typo = "zookeeper:/alice:zkpw9876@localhost:2181/spyt"
    error, _ = failure(lambda: pipe.reader(spark, **{"offsets.store": typo}))
    assert "got 'zookeeper:/alice:***@localhost:2181/spyt'" in str(error) and "zkpw9876" not in str(error)


def test_a_stream_without_consumer_path_suggests_ytqueue_create_consumer(spark, pipe) -> None:
    df = spark.readStream.format("ytqueue").option("proxy", pipe.proxy).load(pipe.queue)
    try:
        query = df.writeStream.format("noop").option("checkpointLocation", pipe.checkpoint).start()
    except Exception as error:
        line = first_line(error)
    else:
        line = first_line(query_failure(query, timeout=60))
    assert "Invalid option 'consumer_path': a streaming read needs a consumer table" in line, line
    assert f"`ytqueue create-consumer //path/to/consumer --queue {pipe.queue}`" in line, line
    assert "yt create" not in line, line
    clean(line)
