"""The consumer group of a query without ``kafka.group.id``: its own, stable across its restarts, findable."""

from __future__ import annotations

import ast
import json

import pytest

from tests.kafka.helpers import Topic, ids_in, run_to_files

pytestmark = pytest.mark.spark


def group_of(query) -> str:
    """The group a query commits under, as its progress shows it (``sources[0].latestOffset.group``)."""
    latest = query.lastProgress["sources"][0]["latestOffset"]
    if isinstance(latest, str):  # JSON; on PySpark 4.0 the str() of a dict
        latest = json.loads(latest) if latest.startswith('{"') else ast.literal_eval(latest)
    return latest["group"]


def stream(spark, topic: Topic, **options):
    reader = (
        spark.readStream.format("ytqueue")
        .option("kafka.bootstrap.servers", topic.bootstrap)
        .option("subscribe", topic.name)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_the_default_group_is_the_querys_own_and_kept_across_restarts(spark, kafka_bootstrap, checkpoint, tmp_path):
    topic = Topic(kafka_bootstrap, checkpoint)
    ids = topic.produce(6)
    out = str(tmp_path / "out")
    first = run_to_files(stream(spark, topic), checkpoint, out)
    group = group_of(first)
    assert group.startswith("spark-kafka-source-") and group != topic.group
    topic.group = group
    assert topic.group_offsets() == topic.ends()
    ids += topic.produce(4)
    second = run_to_files(stream(spark, topic), checkpoint, out)
    assert group_of(second) == group, "a restart of the same checkpoint commits under the same group"
    assert topic.group_offsets() == topic.ends()
    assert ids_in(spark, out) == sorted(ids)
    other = run_to_files(stream(spark, topic), str(tmp_path / "other-checkpoint"), str(tmp_path / "other"))
    assert group_of(other) != group, "another checkpoint is another query, with a group of its own"


def test_a_named_group_is_used_as_given(spark, kafka_bootstrap, checkpoint, tmp_path):
    topic = Topic(kafka_bootstrap, checkpoint)
    topic.produce(4)
    query = run_to_files(stream(spark, topic, **{"kafka.group.id": topic.group}), checkpoint, str(tmp_path / "o"))
    assert group_of(query) == topic.group
    assert topic.group_offsets() == topic.ends()


@pytest.mark.parametrize("options", [{}, {"groupIdPrefix": "mine"}])
def test_starting_from_the_group_without_naming_one_is_refused_in_one_line(spark, kafka_bootstrap, checkpoint, options):
    topic = Topic(kafka_bootstrap, checkpoint)
    with pytest.raises(Exception, match=r"'startingOffsets': group .*set kafka.group.id") as failure:
        stream(spark, topic, startingOffsets="group", **options)
    assert "Traceback" not in str(failure.value)
