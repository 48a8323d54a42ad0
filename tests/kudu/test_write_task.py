"""One sink task on a real Kudu, without Spark: one scan per key batch (not per row), one flush per task."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pyarrow as pa
import pytest

from spyt_queue.deadletter import DeadLetter, DeadLetterTarget
from spyt_queue.sinks.kudu import client as kudu_client
from spyt_queue.sinks.kudu.client import ColumnSpec, get_client
from spyt_queue.sinks.kudu.planners import planner_from_options
from spyt_queue.sinks.kudu.sink import KuduWriteTask, write_task


def test_one_scan_per_key_batch_and_one_flush_per_task(kudu, monkeypatch) -> None:
    client = get_client(kudu.master_addresses)
    table = f"task_{uuid.uuid4().hex[:8]}"
    columns = [ColumnSpec("id", "int64", key=True), ColumnSpec("ts", "int64"), ColumnSpec("v", "string")]
    client.create_table(table, columns, hash_columns=["id"])
    calls = {"scan": 0, "flush": 0}
    scan, flush = kudu_client.KuduTable.scan, kudu_client.WriteSession.flush

    def counted_scan(self, *args, **kwargs):
        calls["scan"] += 1
        return scan(self, *args, **kwargs)

    def counted_flush(self):
        calls["flush"] += 1
        return flush(self)

    monkeypatch.setattr(kudu_client.KuduTable, "scan", counted_scan)
    monkeypatch.setattr(kudu_client.WriteSession, "flush", counted_flush)
    options = {"planner": "latest", "planner.key": "id", "planner.event_time": "ts", "planner.last_updated": ""}
    planner = planner_from_options(options)
    config = KuduWriteTask(kudu.master_addresses, table, planner, scan_batch=4)
    ids = [i % 10 for i in range(30)]  # 30 rows, 10 keys
    batch = pa.RecordBatch.from_pydict({"id": ids, "ts": list(range(30)), "v": [str(i) for i in range(30)]})
    result = write_task(config, [batch])
    assert (result.rows, result.keys, result.scans) == (30, 10, 3)
    assert calls == {"scan": 3, "flush": 1}  # ceil(10 keys / 4) scans, whatever the number of rows
    assert result.mutations == {"insert": 10}
    assert {r["id"]: r["ts"] for r in client.table(table).read_all()} == {k: 20 + k for k in range(10)}
    again = write_task(config, [batch])
    assert again.mutations == {} and calls["flush"] == 1, "a replay plans nothing and flushes nothing"


def test_a_task_runs_with_the_cyclic_collector_paused_and_restores_it(kudu, monkeypatch) -> None:
    """The task's row dicts and mutations would set off full collections (a 100k-row upsert task ran 0.56-0.68x a
    raw loop with them); the collector is paused for the task and back on after it, also when the task fails."""
    import gc

    client = get_client(kudu.master_addresses)
    table = f"task_{uuid.uuid4().hex[:8]}"
    client.create_table(table, [ColumnSpec("id", "int64", key=True), ColumnSpec("v", "string")], hash_columns=["id"])
    seen: list[bool] = []
    flush = kudu_client.WriteSession.flush

    def watched_flush(self):
        seen.append(gc.isenabled())
        return flush(self)

    monkeypatch.setattr(kudu_client.WriteSession, "flush", watched_flush)
    config = KuduWriteTask(
        kudu.master_addresses, table, planner_from_options({"planner": "upsert", "planner.key": "id"})
    )
    assert gc.isenabled()
    write_task(config, [pa.RecordBatch.from_pydict({"id": [1, 2], "v": ["a", "b"]})])
    assert seen == [False] and gc.isenabled()
    with pytest.raises(Exception, match="NULL in a key column"):
        write_task(
            config,
            [
                pa.RecordBatch.from_pydict(
                    {"id": [None], "v": ["c"]}, schema=pa.schema([("id", pa.int64()), ("v", pa.string())])
                )
            ],
        )
    assert gc.isenabled()


class _Letters(DeadLetterTarget):
    """A dead-letter target keeping the letters in memory."""

    def __init__(self) -> None:
        self.letters: list[DeadLetter] = []

    def describe(self) -> str:
        return "memory"

    def check(self) -> None:
        pass

    def write(self, letters: Sequence[DeadLetter]) -> None:
        self.letters.extend(letters)

    def count(self) -> dict[str, int]:
        return {"0": len(self.letters)}


def _history_batch(rows: list[tuple[int, int, str, str]]) -> pa.RecordBatch:
    k, ts, v, blob = (list(c) for c in zip(*rows, strict=True))
    return pa.RecordBatch.from_pydict({"k": k, "ts": ts, "v": v, "blob": blob})


@pytest.mark.parametrize("diverting", [False, True], ids=["failing", "dead-letters"])
def test_a_merged_history_version_is_deleted_only_once_the_row_replacing_it_is_in(kudu, diverting: bool) -> None:
    """Stored 20:A, then a late 10:A (same values, planner.values=v) takes its place: INSERT 10, DELETE 20. When Kudu
    refuses the INSERT (a cell above 64 KiB) the DELETE is not sent, so the key keeps 20; a key whose INSERT went
    in has its merged version deleted."""
    client = get_client(kudu.master_addresses)
    table = f"merge_{uuid.uuid4().hex[:8]}"
    columns = [
        ColumnSpec("k", "int64", key=True), ColumnSpec("ts", "int64", key=True), ColumnSpec("v", "string"),
        ColumnSpec("blob", "string"), ColumnSpec("effective_to", "int64"), ColumnSpec("is_current", "bool"),
    ]  # fmt: skip
    client.create_table(table, columns, hash_columns=["k"])
    options = {"planner": "history", "planner.key": "k", "planner.event_time": "ts", "planner.values": "v",
               "planner.last_updated": ""}  # fmt: skip
    target = _Letters()
    dead = target.bind(f"kudu:{table}", "sink") if diverting else None
    config = KuduWriteTask(kudu.master_addresses, table, planner_from_options(options), dead_letters=dead)
    write_task(config, [_history_batch([(1, 20, "A", "small"), (2, 20, "A", "small")])])
    late = _history_batch([(1, 10, "A", "x" * 70_000), (2, 10, "A", "ok")])
    if diverting:
        result = write_task(config, [late])
        assert result.dead_letters == 1 and "value too large for column 'blob'" in target.letters[0].error
        assert result.mutations == {"insert": 1, "delete": 1}
    else:
        with pytest.raises(Exception, match="value too large for column 'blob'"):
            write_task(config, [late])
    stored = sorted((r["k"], r["ts"], r["effective_to"], r["is_current"], r["blob"][:5]) for r in
                    client.table(table).read_all())  # fmt: skip
    if diverting:
        key_2 = [(2, 10, 2**63 - 1, True, "ok")]
    else:  # the failed task's repair: 20 stays current until a replay merges it
        key_2 = [(2, 10, 19, False, "ok"), (2, 20, 2**63 - 1, True, "small")]
    assert stored == [(1, 20, 2**63 - 1, True, "small"), *key_2]
