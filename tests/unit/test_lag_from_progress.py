"""``lag_from_progress``: rows behind from a progress's ``latestOffset`` (executors) or, where PySpark reports none
(``read_mode=driver``), from the ends the batch's end offset carries."""

from __future__ import annotations

import json

from spyt_queue.lag import lag_from_progress
from spyt_queue.offsets import LATEST_ENDS


def _progress(end: dict, latest: dict | None) -> dict:
    return {"sources": [{"endOffset": json.dumps(end), "latestOffset": json.dumps(latest) if latest else None}]}


def test_latest_offset_of_the_progress() -> None:
    assert lag_from_progress(_progress({"partitions": {"0": 3}}, {"partitions": {"0": 10}})) == {"0": 7}


def test_ends_carried_by_the_end_offset_when_the_progress_has_no_latest_offset() -> None:
    end = {"partitions": {"0": 3, "1": 5}, LATEST_ENDS: {"0": 10, "1": 5}}
    assert lag_from_progress(_progress(end, None)) == {"0": 7, "1": 0}


def test_reported_latest_offset_wins_over_the_carried_ends() -> None:
    end = {"partitions": {"0": 3}, LATEST_ENDS: {"0": 4}}
    assert lag_from_progress(_progress(end, {"partitions": {"0": 10}})) == {"0": 7}


def test_nothing_known_is_no_lag() -> None:
    assert lag_from_progress(_progress({"partitions": {"0": 3}}, None)) == {}


def test_offsets_behind_latest_are_sparks_three_metrics() -> None:
    from spyt_queue.lag import offsets_behind_latest

    progress = _progress({"partitions": {"t:0": 3, "t:1": 5}}, {"partitions": {"t:0": 10, "t:1": 6}})
    assert offsets_behind_latest(progress) == {
        "minOffsetsBehindLatest": 1.0,
        "maxOffsetsBehindLatest": 7.0,
        "avgOffsetsBehindLatest": 4.0,
    }
    assert offsets_behind_latest(_progress({"partitions": {}}, None)) == {}


def test_spark_offsets_nest_partitions_under_their_topic_or_queue() -> None:
    from spyt_queue.lag import spark_offsets

    kafka = {"version": 1, "source": "kafka:subscribe=a,b", "partitions": {"a:0": 5, "a:10": 1, "a:2": 3, "b:0": 7}}
    assert spark_offsets(kafka) == {"a": {"0": 5, "2": 3, "10": 1}, "b": {"0": 7}}
    yt = {"version": 1, "source": "yt://home/q#1-2-3-4", "partitions": {"0": 4, "1": 9}}
    assert spark_offsets(json.dumps(yt)) == {"//home/q": {"0": 4, "1": 9}}


def test_offsets_held_as_the_str_of_a_dict_as_pyspark_4_0_holds_them() -> None:
    """PySpark 4.0's ``SourceProgress`` keeps ``endOffset``/``latestOffset`` as ``str()`` of a dict (not JSON)."""
    progress = {
        "sources": [{"endOffset": str({"partitions": {"0": 3}}), "latestOffset": str({"partitions": {"0": 9}})}]
    }
    assert lag_from_progress(progress) == {"0": 6}
