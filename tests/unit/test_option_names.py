"""The unknown-option check: every reader's and writer's declared names, pass-through prefixes, suggestions."""

from __future__ import annotations

import pytest

from spyt_queue.connect import check_source_options
from spyt_queue.errors import OptionError
from spyt_queue.kafka.sink import KAFKA_SINK_OPTIONS
from spyt_queue.options import Options
from spyt_queue.sink_options import check_sink_options
from spyt_queue.yt.sink import YT_SINK_OPTIONS

KAFKA = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t"}


def refused(check, raw: dict[str, str]) -> str:
    with pytest.raises(OptionError) as caught:
        check(Options(raw))
    return str(caught.value)


def test_every_documented_yt_source_option_is_known() -> None:
    check_source_options(
        Options(
            {
                "path": "//q",
                "proxy": "p",
                "token": "t",
                "consumer_path": "//c",
                "yt.proxy.request_timeout": "1",
                "max_rows_per_partition": "1",
                "maxOffsetsPerTrigger": "1",
                "max_rows_per_trigger": "1",
                "startingOffsets": "earliest",
                "endingOffsets": "latest",
                "failOnDataLoss": "true",
                "include_service_columns": "true",
                "parsing_type_v3": "true",
                "binary_strings": "true",
                "pull_batch_rows": "5",
                "read_format": "dsv",
                "maxRecordsPerPartition": "5",
                "minPartitions": "2",
                "offsets.store": "consumer",
                "offsets.group": "g",
                "connect_timeout": "5",
            }
        )
    )


def test_names_are_case_insensitive_and_prefixes_open() -> None:
    check_source_options(Options({**KAFKA, "STARTINGOFFSETS": "earliest", "kafka.anything.at.all": "x"}))
    check_source_options(Options({"path": "//q", "yt.any.key": "1", "Max_Rows_Per_Partition": "3"}))


def test_misspelt_prefix_is_suggested() -> None:
    message = refused(check_source_options, {**KAFKA, "kafak.group.id": "g"})
    assert "did you mean 'kafka.group.id'?" in message


def test_unknown_name_without_a_close_match_points_to_the_tables() -> None:
    message = refused(check_source_options, {"path": "//q", "zzz": "1"})
    assert message == (
        "Invalid option 'zzz': not an option of the YTsaurus queue source "
        "(see the option tables in docs/: reading.md, kafka.md, writing-yt.md, hbase.md, kudu.md; "
        "yt.* options are passed through)"
    )


def test_sinks_accept_what_spark_passes_and_refuse_reading_options() -> None:
    spark_given = {"path": "//t", "checkpointlocation": "/c", "queryname": "q"}
    check_sink_options(Options({**spark_given, "dyn_batch_size": "5"}), YT_SINK_OPTIONS, "the YT sink", "yt.")
    check_sink_options(Options({**spark_given, "kafka.acks": "1"}), KAFKA_SINK_OPTIONS, "the Kafka sink", "kafka.")
    message = refused(lambda o: check_sink_options(o, YT_SINK_OPTIONS, "the YT sink", "yt."), {"startingOffsets": "x"})
    assert "it is a reading option" in message
    # The sources' own options come from their declarations, passed by each sink (no hand-kept list).
    from spyt_queue.kafka.options import KAFKA_SOURCE_OPTIONS
    from spyt_queue.yt.declarations import YT_SOURCE_OPTIONS

    for sink, known, name, sources in (
        ("the YT sink", YT_SINK_OPTIONS, "include_service_columns", YT_SOURCE_OPTIONS),
        ("the YT sink", YT_SINK_OPTIONS, "read_format", YT_SOURCE_OPTIONS),
        ("the Kafka sink", KAFKA_SINK_OPTIONS, "subscribePattern", KAFKA_SOURCE_OPTIONS),
    ):
        message = refused(
            lambda o, k=known, w=sink, src=sources: check_sink_options(o, k, w, source_options=src), {name: "x"}
        )
        assert f"Invalid option '{name.lower()}'" in message and "it is a reading option" in message, message
