"""``ytqueue status --checkpoint``: a Kafka query without ``kafka.group.id`` commits under a group of its own, named
after the writer token its checkpoint keeps; status finds that group from the checkpoint exactly as the query named
it, against the real broker (each query's own positions, the group the broker holds them under)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli_status_stores import assert_one_line, ytqueue
from tests.kafka.helpers import Topic, run_to_files


def status_rows(stdout: str) -> dict[str, list[str]]:
    """``partition: [committed, first row, end, lag]`` of a status table."""
    return {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:6]]
        for line in stdout.splitlines()
        if line.startswith("│")
    }


def shown_group(stdout: str) -> str:
    """The group of the table's title (``<topic> via group <group>``)."""
    (title,) = [line for line in stdout.splitlines() if " via group " in line]
    return title.split(" via group ")[1].strip()


@pytest.mark.spark
def test_status_finds_the_own_group_of_each_query_from_its_checkpoint(
    spark, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Two queries without ``kafka.group.id`` on one topic, each with its checkpoint, have read different amounts:
    ``--checkpoint`` shows each query's own committed positions, under the group the broker holds them in; without
    ``--group``, ``--store`` or ``--checkpoint`` the command says what to give."""
    first_checkpoint, second_checkpoint = str(tmp_path / "first"), str(tmp_path / "second")
    topic = Topic(kafka_bootstrap, first_checkpoint)

    def run(checkpoint: str, out: str) -> None:
        stream = (
            spark.readStream.format("ytqueue")
            .option("kafka.bootstrap.servers", kafka_bootstrap)
            .option("subscribe", topic.name)
            .option("startingOffsets", "earliest")
            .load()
        )
        run_to_files(stream, checkpoint, str(tmp_path / out))

    topic.produce(6)
    run(first_checkpoint, "out1")
    topic.produce(4)
    run(second_checkpoint, "out2")

    common = ("status", "--bootstrap-servers", kafka_bootstrap, "--topic", topic.name)
    first, _ = ytqueue(*common, "--checkpoint", first_checkpoint)
    second, _ = ytqueue(*common, "--checkpoint", f"file://{second_checkpoint}")
    for done in (first, second):
        assert done.returncode == 0 and "hint" not in done.stderr, done.stdout + done.stderr
    assert status_rows(first.stdout) == {
        f"{topic.name}:0": ["3", "0", "5", "2"],
        f"{topic.name}:1": ["3", "0", "5", "2"],
        "total": ["", "", "10", "4"],
    }
    assert status_rows(second.stdout) == {
        f"{topic.name}:0": ["5", "0", "5", "0"],
        f"{topic.name}:1": ["5", "0", "5", "0"],
        "total": ["", "", "10", "0"],
    }
    groups = shown_group(first.stdout), shown_group(second.stdout)
    assert groups[0] != groups[1] and all(g.startswith("spark-kafka-source-") for g in groups), groups
    for group, committed in zip(groups, (3, 5), strict=True):
        topic.group = group  # the oracle: the broker holds the positions under the group status names
        assert topic.group_offsets() == {0: committed, 1: committed}

    done, _ = ytqueue(*common)
    assert_one_line(done, "--group", "--checkpoint")
    done, _ = ytqueue(*common, "--checkpoint", str(tmp_path / "nothing-here"))
    assert_one_line(done, f"{tmp_path / 'nothing-here'} is not a directory")
    other = Topic(kafka_bootstrap, first_checkpoint)
    done, _ = ytqueue("status", "--bootstrap-servers", kafka_bootstrap, "--topic", other.name, "--checkpoint",
                      first_checkpoint)  # fmt: skip
    assert_one_line(done, f"holds offsets of kafka:subscribe={topic.name}", f"not of kafka:subscribe={other.name}")
