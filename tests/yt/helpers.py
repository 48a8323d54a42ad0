"""Helpers for the Spark streaming tests: a queue with a consumer, producing events, running queries."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spyt_queue.yt.admin import column, create_consumer, create_queue
from tests.queries import run_to_end

EVENT_SCHEMA = [column("id", "int64", required=True), column("payload", "string")]
OUTPUT_SCHEMA = [
    column("id", "int64", required=True),
    column("payload", "string"),
    column("tablet", "int64"),
    column("row", "int64"),
]


@dataclass
class Pipeline:
    """A queue, its consumer, an ordered output table and a checkpoint directory."""

    yt: Any
    proxy: str
    queue: str
    consumer: str
    output: str
    checkpoint: str
    next_id: int = 0

    def produce(self, count: int, tablet: int | None = None) -> list[int]:
        """Insert ``count`` events with fresh ids (into ``tablet``, or round-robin over 2+ tablets)."""
        tablets = int(self.yt.get(f"{self.queue}/@tablet_count"))
        rows = []
        for i in range(count):
            row: dict[str, Any] = {"id": self.next_id, "payload": f"event-{self.next_id}"}
            row["$tablet_index"] = tablet if tablet is not None else i % tablets
            rows.append(row)
            self.next_id += 1
        self.yt.insert_rows(self.queue, rows)
        return [r["id"] for r in rows]

    def output_ids(self) -> list[int]:
        """Every ``id`` in the output table, duplicates included."""
        return sorted(r["id"] for r in self.yt.select_rows(f"id from [{self.output}]"))

    def consumer_offsets(self) -> dict[int, int]:
        """Committed offset per partition of the consumer."""
        rows = self.yt.select_rows(f'* from [{self.consumer}] where queue_path = "{self.queue}"')
        return {int(r["partition_index"]): int(r["offset"]) for r in rows}

    def ends(self) -> dict[int, int]:
        """``total_row_count`` per tablet."""
        count = int(self.yt.get(f"{self.queue}/@tablet_count"))
        infos = self.yt.get_tablet_infos(self.queue, list(range(count)))["tablets"]
        return {i: int(t["total_row_count"]) for i, t in enumerate(infos)}

    def reader(self, spark: Any, **options: Any) -> Any:
        """A streaming DataFrame over the queue with the given extra options."""
        reader = (
            spark.readStream.format("ytqueue")
            .option("proxy", self.proxy)
            .option("consumer_path", self.consumer)
            .option("include_service_columns", "true")
        )
        for key, value in options.items():
            reader = reader.option(key, str(value))
        return reader.load(self.queue)

    def start(self, spark: Any, trigger: dict[str, Any], **options: Any) -> Any:
        """Start the standard pipeline (queue -> ordered output) with a ``trigger(**trigger)``; returns the query."""
        df = self.reader(spark, **options).selectExpr(
            "id", "payload", "__spyt_streaming_src_tablet_index as tablet", "__spyt_streaming_src_row_index as row"
        )
        writer = (
            df.writeStream.format("ytqueue")
            .option("proxy", self.proxy)
            .option("path", self.output)
            .option("checkpointLocation", self.checkpoint)
        )
        return writer.trigger(**trigger).start()

    def run(self, spark: Any, available_now: bool = True, timeout: float = 120, **options: Any) -> Any:
        """Run the standard pipeline to completion (AvailableNow, or Once) and return the query."""
        return run_to_end(lambda trigger: self.start(spark, trigger, **options), available_now, timeout)

    def delete_checkpoint(self) -> None:
        """Remove the checkpoint directory (the restart then resumes from the consumer)."""
        shutil.rmtree(self.checkpoint, ignore_errors=True)

    def purge_last_commit(self) -> int:
        """Delete the newest ``commits/N`` entry so Spark replays batch N (as Spark's own tests do)."""
        commits = Path(self.checkpoint) / "commits"
        batches = sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())
        last = batches[-1]
        (commits / str(last)).unlink()
        crc = commits / f".{last}.crc"
        if crc.exists():
            crc.unlink()
        return last


def make_pipeline(yt: Any, proxy: str, root: str, checkpoint: str, tablets: int = 2) -> Pipeline:
    """Create a queue with ``tablets`` tablets, a registered consumer and an ordered output table."""
    queue, consumer, output = f"{root}/queue", f"{root}/consumer", f"{root}/output"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=tablets)
    create_consumer(yt, consumer, queue)
    create_queue(yt, output, OUTPUT_SCHEMA, tablet_count=1)
    return Pipeline(yt, proxy, queue, consumer, output, checkpoint)


def store_stream(spark: Any, proxy: str, queue: str, store: str, group: str, *columns: str, **options: Any) -> Any:
    """A streaming read of ``queue`` committing to the offset store ``store`` (a URI) under ``group``, with the source
    service columns kept as ``tablet`` and ``row`` after ``columns`` (default ``id, payload``)."""
    reader = (
        spark.readStream.format("ytqueue")
        .option("proxy", proxy)
        .option("offsets.store", store)
        .option("offsets.group", group)
        .option("include_service_columns", "true")
    )
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load(queue).selectExpr(
        *(columns or ("id", "payload")),
        "__spyt_streaming_src_tablet_index as tablet",
        "__spyt_streaming_src_row_index as row",
    )


def produce_ids(yt: Any, queue: str, first: int, count: int, tablets: int = 2) -> list[int]:
    """Insert events ``first .. first + count - 1`` round-robin over ``tablets`` tablets; returns their ids."""
    yt.insert_rows(
        queue, [{"id": i, "payload": f"e{i}", "$tablet_index": i % tablets} for i in range(first, first + count)]
    )
    return list(range(first, first + count))


def purge_last_commit(checkpoint: str) -> int:
    """Delete the newest ``commits/N`` so Spark replays batch N (as if the driver died right after the sink)."""
    commits = Path(checkpoint) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    return last
