"""The chaos harness's progress check, without servers: it must see a query's commits go on after Spark has
deleted the oldest commit files (Spark keeps ``spark.sql.streaming.minBatchesToRetain``, 100 by default)."""

from __future__ import annotations

import random
from pathlib import Path

from tests.chaos.harness import batch_in_flight, committed_batches, event_plan


def _commit(checkpoint: Path, *batch_ids: int) -> None:
    commits = checkpoint / "commits"
    commits.mkdir(parents=True, exist_ok=True)
    for batch_id in batch_ids:
        (commits / str(batch_id)).write_text("v1\n{}")


def test_a_checkpoint_without_commits_counts_none(tmp_path: Path) -> None:
    assert committed_batches(tmp_path / "missing") == 0
    _commit(tmp_path / "empty")
    assert committed_batches(tmp_path / "empty") == 0


def test_commits_keep_counting_after_spark_deleted_the_oldest_commit_files(tmp_path: Path) -> None:
    checkpoint = tmp_path / "chk"
    _commit(checkpoint, *range(150, 250))  # what Spark leaves after batch 249: the last 100 commit files
    before = committed_batches(checkpoint)
    assert before == 250
    (checkpoint / "commits" / "150").unlink()  # Spark purges the oldest as it commits the next one
    _commit(checkpoint, 250)
    assert committed_batches(checkpoint) == before + 1


def test_files_that_are_not_batch_commits_are_ignored(tmp_path: Path) -> None:
    checkpoint = tmp_path / "chk"
    _commit(checkpoint, 0, 1, 2)
    (checkpoint / "commits" / ".2.crc").write_text("")
    (checkpoint / "commits" / "3.tmp").write_text("")
    assert committed_batches(checkpoint) == 3


def test_a_batch_is_in_flight_between_its_offsets_and_its_commit(tmp_path: Path) -> None:
    checkpoint = tmp_path / "chk"
    assert not batch_in_flight(checkpoint)
    (checkpoint / "offsets").mkdir(parents=True)
    for batch_id in (0, 1):
        (checkpoint / "offsets" / str(batch_id)).write_text("v1")
    _commit(checkpoint, 0)
    assert batch_in_flight(checkpoint)  # batch 1 planned, not committed
    _commit(checkpoint, 1)
    assert not batch_in_flight(checkpoint)


def test_executor_and_worker_events_join_the_plan() -> None:
    plan = event_plan(4, True, random.Random(3), executor_kills=2, worker_kills=1)
    assert sorted(plan) == sorted(
        ["driver", "driver-fresh", "yt-server", "kafka-broker", "executor", "executor", "worker"]
    )
    # Three events reach every kind once (CI's short run): the only driver kill deletes the checkpoints.
    assert sorted(event_plan(3, True, random.Random(3))) == ["driver-fresh", "kafka-broker", "yt-server"]
