"""``read_mode=driver`` reads a batch's ranges side by side (``DriverStreamReader``, one backend copy and so one
``yt.wrapper`` client per thread): the same rows in the same order as reading them one after the other, and the same
error when a range fails, against real tablets of the embedded server."""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pytest
import yt.yson as yson
from yt.packages.requests import Session

from spyt_queue.connect import backend_for
from spyt_queue.deadletter_targets import prepared_target
from spyt_queue.errors import DataLossError
from spyt_queue.options import Options
from spyt_queue.settings import ReaderSettings
from spyt_queue.spark.compat import ReadAllAvailable
from spyt_queue.spark.driver_reader import DRIVER_READ_THREADS, DriverStreamReader
from spyt_queue.spark.stream_reader import QueueStreamReader
from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.options import yt_backend_from_options

TABLETS = 6


@pytest.fixture
def queue(yt, yt_proxy, yt_root) -> dict[str, str]:
    path, consumer = f"{yt_root}/q", f"{yt_root}/c"
    create_queue(yt, path, [column("id", "int64"), column("payload", "string")], tablet_count=TABLETS)
    create_consumer(yt, consumer, path)
    rows = [{"$tablet_index": i % TABLETS, "id": i, "payload": f"p\t{i}\\"} for i in range(600)]
    yt.insert_rows(path, rows)
    return {"proxy": yt_proxy, "path": path, "consumer_path": consumer, "include_service_columns": "true"}


def planner(queue: dict[str, str], **options: str) -> QueueStreamReader:
    parsed = Options({**queue, "startingOffsets": "earliest", **options})
    backend = yt_backend_from_options(parsed, streaming=True)
    return QueueStreamReader(backend, ReaderSettings.parse(parsed), backend.default_store())


def one_after_the_other(reader: QueueStreamReader, start: dict, end: dict) -> list[pa.RecordBatch]:
    """The batch read range after range, as the driver read it before."""
    return [batch for partition in reader.partitions(start, end) for batch in reader.read(partition)]


def outcome(read: Any) -> tuple[str, Any]:
    try:
        return "rows", pa.Table.from_batches(read()).to_pylist()
    except Exception as error:  # every error, to compare type and text
        return "error", (type(error).__name__, str(error))


@pytest.mark.parametrize("options", [{}, {"min_rows_per_task": "0"}, {"maxRecordsPerPartition": "30"}])
def test_a_batch_read_side_by_side_has_the_rows_of_a_read_range_after_range(queue, options) -> None:
    """Packed ranges, one range per partition, partitions cut in pieces: the same rows in the same order, and every
    range read by a pool thread with a client of its own."""
    reader = DriverStreamReader(planner(queue, **options))
    start = reader.initialOffset()
    end = reader.planner.latestOffset(start, ReadAllAvailable())
    side_by_side = outcome(lambda: list(reader.readBetweenOffsets(start, end)))
    reference = outcome(lambda: one_after_the_other(planner(queue, **options), start, end))
    assert side_by_side == reference
    assert side_by_side[0] == "rows" and len(side_by_side[1]) == 600
    copies = reader._thread_backends  # (thread, backend) -> that thread's copy, whose client is the thread's own
    assert copies and all(copy._thread_client and copy is not reader.planner.backend for copy in copies.values())
    assert len({thread for thread, _ in copies}) == len(copies) <= DRIVER_READ_THREADS
    rows, end_offset = reader.read(start)  # the same through read(), which plans first
    assert pa.Table.from_batches(list(rows)).to_pylist() == side_by_side[1]
    assert end_offset["partitions"] == end["partitions"]
    reader.stop()


@pytest.mark.parametrize("failing", [[3], [1, 4], [0, 5]])
def test_a_failing_range_fails_the_batch_with_the_error_of_a_read_range_after_range(yt, queue, failing) -> None:
    """Rows trimmed from planned ranges with failOnDataLoss=true: the batch fails with the ``DataLossError`` a read
    range after range raises, naming the first failing tablet in the planned order."""
    reader = DriverStreamReader(planner(queue, min_rows_per_task="0"))
    start = reader.initialOffset()
    end = reader.planner.latestOffset(start, ReadAllAvailable())
    for tablet in failing:
        yt.trim_rows(queue["path"], tablet, 60)
    side_by_side = outcome(lambda: list(reader.readBetweenOffsets(start, end)))
    reference = outcome(lambda: one_after_the_other(planner(queue, min_rows_per_task="0"), start, end))
    assert side_by_side == reference
    kind, (name, text) = side_by_side
    assert kind == "error" and name == DataLossError.__name__, side_by_side
    assert f"tablet {failing[0]} of" in text
    reader.stop()


def test_rows_trimmed_under_fail_on_data_loss_false_are_skipped_as_a_read_range_after_range_skips_them(
    yt, queue
) -> None:
    reader = DriverStreamReader(planner(queue, min_rows_per_task="0", failOnDataLoss="false"))
    start = reader.initialOffset()
    end = reader.planner.latestOffset(start, ReadAllAvailable())
    for tablet in (1, 4):
        yt.trim_rows(queue["path"], tablet, 60)
    side_by_side = outcome(lambda: list(reader.readBetweenOffsets(start, end)))
    reference = outcome(
        lambda: one_after_the_other(planner(queue, min_rows_per_task="0", failOnDataLoss="false"), start, end)
    )
    assert side_by_side == reference
    assert side_by_side[0] == "rows" and len(side_by_side[1]) == 600 - 2 * 60
    reader.stop()


def test_dead_letters_of_ranges_read_side_by_side_go_through_each_threads_own_client(yt, yt_proxy, yt_root) -> None:
    """Bad rows in every tablet with ``deadLetter.path``: each pool thread writes its dead letters with the client
    it reads with (``yt.wrapper`` clients are not thread-safe), never the process-wide one, and every bad row has
    its letter once."""
    path, consumer, dead = f"{yt_root}/bad", f"{yt_root}/bad_c", f"{yt_root}/dead"
    create_queue(yt, path, [column("id", "int64"), column("n", "uint64")], tablet_count=TABLETS)
    create_consumer(yt, consumer, path)
    rows = [
        {"$tablet_index": i % TABLETS, "id": i, "n": yson.YsonUint64(2**64 - 1 if i < TABLETS else i)}
        for i in range(60)
    ]
    yt.insert_rows(path, rows)
    options = {
        "proxy": yt_proxy,
        "path": path,
        "consumer_path": consumer,
        "min_rows_per_task": "0",
        "deadLetter.path": dead,
        "deadLetter.create": "true",
    }
    parsed = Options({**options, "startingOffsets": "earliest"})
    backend = backend_for(parsed, streaming=True)
    prepared_target(parsed)
    reader = DriverStreamReader(QueueStreamReader(backend, ReaderSettings.parse(parsed), backend.default_store()))
    start = reader.initialOffset()
    end = reader.planner.latestOffset(start, ReadAllAvailable())
    sessions: dict[str, set[tuple[int, int]]] = {"pull_consumer": set(), "insert_rows": set()}
    original = Session.send

    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        command = request.path_url.split("?", 1)[0].rsplit("/", 1)[-1]
        if command in sessions:
            sessions[command].add((threading.get_ident(), id(self)))
        return original(self, request, **kwargs)

    Session.send = send  # type: ignore[method-assign]
    try:
        read = pa.Table.from_batches(list(reader.readBetweenOffsets(start, end))).to_pylist()
    finally:
        Session.send = original  # type: ignore[method-assign]
        reader.stop()
    assert sorted(r["id"] for r in read) == list(range(TABLETS, 60))
    assert sorted(r["offset"] for r in yt.select_rows(f"* from [{dead}]")) == [0] * TABLETS
    assert sessions["insert_rows"] and sessions["insert_rows"] <= sessions["pull_consumer"]
