"""The consumer group of a query without ``kafka.group.id``: its own, stable across its restarts, findable (in
the driver log when the query starts, on every PySpark line; in the progress where Spark asks the source for it)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions

from spyt_queue.spark.compat import HAS_READ_LIMITS
from tests.kafka.helpers import Topic, ids_in, run_to_files

pytestmark = pytest.mark.spark


def committing_groups(topic: Topic) -> set[str]:
    """The broker's groups holding a committed offset of ``topic`` (the oracle: what the broker says)."""
    listed = topic.admin.list_consumer_groups(request_timeout=30).result()
    found = set()
    for listing in listed.valid:
        request = [ConsumerGroupTopicPartitions(listing.group_id)]
        (future,) = topic.admin.list_consumer_group_offsets(request, request_timeout=30).values()
        offsets = future.result().topic_partitions or []
        if any(tp.topic == topic.name and tp.offset >= 0 for tp in offsets):
            found.add(listing.group_id)
    return found


def group_of(query, topic: Topic) -> str:
    """The one group committing ``topic``'s offsets; where the progress names a group (``latestOffset.group``:
    PySpark 4.2+ asks the source for its ``reportLatestOffset``; 4.0/4.1 show the offset itself), the same one."""
    (group,) = committing_groups(topic)
    latest = query.lastProgress["sources"][0]["latestOffset"]
    if isinstance(latest, str):  # JSON; on PySpark 4.0 the str() of a dict
        latest = json.loads(latest) if latest.startswith('{"') else ast.literal_eval(latest)
    if isinstance(latest, dict) and "group" in latest:
        assert latest["group"] == group, latest
    return group


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
    group = group_of(first, topic)
    assert group.startswith("spark-kafka-source-") and group != topic.group
    topic.group = group
    assert topic.group_offsets() == topic.ends()
    ids += topic.produce(4)
    second = run_to_files(stream(spark, topic), checkpoint, out)
    assert group_of(second, topic) == group, "a restart of the same checkpoint commits under the same group"
    assert topic.group_offsets() == topic.ends()
    assert ids_in(spark, out) == sorted(ids)
    other = run_to_files(stream(spark, topic), str(tmp_path / "other-checkpoint"), str(tmp_path / "other"))
    groups = committing_groups(topic)
    assert len(groups) == 2 and group in groups, "another checkpoint is another query, with a group of its own"
    latest = other.lastProgress["sources"][0]["latestOffset"]
    if isinstance(latest, dict) and "group" in latest:
        assert latest["group"] in groups - {group}, latest


def test_a_named_group_is_used_as_given(spark, kafka_bootstrap, checkpoint, tmp_path):
    topic = Topic(kafka_bootstrap, checkpoint)
    topic.produce(4)
    query = run_to_files(stream(spark, topic, **{"kafka.group.id": topic.group}), checkpoint, str(tmp_path / "o"))
    assert group_of(query, topic) == topic.group
    assert topic.group_offsets() == topic.ends()


@pytest.mark.parametrize("options", [{}, {"groupIdPrefix": "mine"}])
def test_starting_from_the_group_without_naming_one_is_refused_in_one_line(spark, kafka_bootstrap, checkpoint, options):
    topic = Topic(kafka_bootstrap, checkpoint)
    with pytest.raises(Exception, match=r"'startingOffsets': group .*set kafka.group.id") as failure:
        stream(spark, topic, startingOffsets="group", **options)
    assert "Traceback" not in str(failure.value)


# A user's driver: the same query started twice from one checkpoint, then once from another, each run with new
# records to read; the driver's stderr
# (where Spark copies its Python streaming runner's) is what the test reads.
DRIVER = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Producer
    from pyspark.sql import SparkSession

    bootstrap, topic, workdir = sys.argv[1:]
    spark = (SparkSession.builder.master("local[1]").appName("default-group-log")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    producer = Producer({"bootstrap.servers": bootstrap})
    for checkpoint in ("first", "first", "second"):
        for value in (b"a", b"b"):  # new records for each run to read and commit
            producer.produce(topic, value=value)
        producer.flush(30)
        df = (spark.readStream.format("ytqueue").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").load())
        query = (df.writeStream.format("noop").option("checkpointLocation", f"{workdir}/{checkpoint}")
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        sys.stderr.write(f"END OF RUN {checkpoint}\\n")
        sys.stderr.flush()
    print("RESULT done", flush=True)
    spark.stop()
    """
)


@pytest.mark.timeout(900)
def test_the_group_is_in_the_driver_log_when_the_query_starts(kafka_bootstrap, tmp_path):
    """Each start of a query without ``kafka.group.id`` logs one line naming its group, in the driver's own log
    (stderr), whatever the PySpark line: the group the broker then holds the query's offsets under."""
    topic = Topic(kafka_bootstrap, str(tmp_path / "unused"))
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    python = sys.executable
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    done = subprocess.run(
        [python, str(script), kafka_bootstrap, topic.name, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert "RESULT done" in done.stdout, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    runs = done.stderr.split("END OF RUN ")
    named = []
    for run in runs[:3]:
        lines = [line for line in run.splitlines() if "commits under its own group" in line]
        assert len(lines) == 1, f"expected one line naming the group:\n{run[-5000:]}"
        found = re.search(r"group (spark-kafka-source-[0-9a-f]+-[0-9a-f]+)", lines[0])
        assert found, lines[0]
        named.append(found.group(1))
    assert named[0] == named[1] != named[2], named  # the restart keeps its group, another checkpoint has its own
    committed = committing_groups(topic)
    if HAS_READ_LIMITS:
        assert committed == {named[0], named[2]}
    else:  # 4.0/4.1: an AvailableNow run is one batch, committed by the next run (README's versions table)
        assert committed == {named[0]}, committed
