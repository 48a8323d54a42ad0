"""``ytqueue produce``: JSON lines into a queue as a user runs it, checked against the queue's schema, in batches;
and ``ytqueue local`` with the embedded server's settings."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spyt_queue import cli
from spyt_queue.cli import app
from spyt_queue.yt import admin
from spyt_queue.yt.client import make_yt_client
from tests.cli.test_cli_commands import assert_ok, assert_one_line_error


def run(*args: str, input: str | None = None):
    """Invoke ``ytqueue`` in-process with ``input`` on standard input (stdout and stderr kept apart)."""
    return CliRunner().invoke(
        app, list(args), input=input, env={"YT_PROXY": None, "COLUMNS": "200"}, prog_name="ytqueue"
    )


SCHEMA = "id:int64:required,payload:string,amount:double,at:timestamp,ok:boolean,small:uint8"


def _queue(yt, yt_root: str, tablets: int = 2) -> str:
    queue = f"{yt_root}/queue"
    admin.create_queue(yt, queue, admin.parse_schema(SCHEMA), tablet_count=tablets)
    return queue


def _rows(yt, queue: str) -> list[dict]:
    return list(yt.select_rows(f"[$tablet_index], [$row_index], id, payload, amount, at, ok, small from [{queue}]"))


def test_produce_appends_json_lines_from_stdin_round_robin_with_typed_values(yt, yt_proxy: str, yt_root: str) -> None:
    queue = _queue(yt, yt_root)
    lines = [
        '{"id": 1, "payload": "a", "amount": 2, "at": "2026-01-31T12:00:00Z", "ok": true, "small": 255}',
        "",
        '{"id": 2, "payload": null}',
        '{"id": 3, "$tablet_index": 0, "at": 1769860800000000}',
        '{"id": 4, "at": "2026-01-31T13:00:00.000001+01:00"}',
    ]
    result = run("produce", queue, "--proxy", yt_proxy, input="\n".join(lines) + "\n")
    out = assert_ok(result)
    assert f"wrote 4 rows to {queue} (tablet 0: 3, tablet 1: 1)" in out, out
    assert f"next: ytqueue status --queue {queue}" in out
    rows = {r["id"]: r for r in _rows(yt, queue)}
    assert set(rows) == {1, 2, 3, 4}
    # Without a $tablet_index, rows go round-robin: ids 1, 2, 4 take tablets 0, 1, 0; id 3 asked for tablet 0.
    assert [rows[i]["$tablet_index"] for i in (1, 2, 3, 4)] == [0, 1, 0, 0]
    assert rows[1]["amount"] == 2.0 and rows[1]["ok"] is True and rows[1]["small"] == 255
    # Instants are exact microseconds since the epoch in UTC, whatever offset the text carries.
    assert rows[1]["at"] == 1769860800000000 == rows[3]["at"]
    assert rows[4]["at"] == 1769860800000001
    assert rows[2]["payload"] is None and rows[2]["at"] is None


def test_produce_from_a_file_in_batches_with_progress_lines_and_a_final_count(
    yt, yt_proxy: str, yt_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "PRODUCE_PROGRESS_INTERVAL_S", 0.0)
    queue = _queue(yt, yt_root)
    data = tmp_path / "events.jsonl"
    data.write_text("".join(f'{{"id": {i}, "payload": "p{i}"}}\n' for i in range(25)))
    result = run("produce", queue, "--file", str(data), "--batch-rows", "10", "--tablet", "1", "--proxy", yt_proxy)
    out = assert_ok(result)
    assert result.stderr.splitlines() == ["... 10 rows written (line 10)", "... 20 rows written (line 20)"]
    assert f"wrote 25 rows to {queue} (tablet 1: 25)" in out
    rows = _rows(yt, queue)
    assert sorted(r["id"] for r in rows) == list(range(25))
    assert {r["$tablet_index"] for r in rows} == {1}
    assert [r["id"] for r in sorted(rows, key=lambda r: r["$row_index"])] == list(range(25)), "input order kept"


@pytest.mark.parametrize(
    ("line", "fragments"),
    [
        ('{"id": 1, "payload": "a",, }', ["line 2, character 26: not valid JSON"]),
        ("[1, 2]", ["line 2: expected a JSON object", "got an array"]),
        ('{"id": 1, "paylod": "a"}', ["line 2, column 'paylod': not a column of", "its columns: id, payload, amount"]),
        ('{"id": "7"}', ["line 2, column 'id': expected an integer (int64), got a string \"7\""]),
        ('{"payload": "a"}', ["line 2, column 'id': is required"]),
        ('{"id": 1, "small": 256}', ["line 2, column 'small': 256 is out of the range of uint8 [0, 255]"]),
        ('{"id": 1, "amount": true}', ["line 2, column 'amount': expected a number (double), got a boolean"]),
        ('{"id": 1, "payload": 5}', ["line 2, column 'payload': expected a string (string), got a number 5"]),
        ('{"id": 1, "at": "2026-01-31T12:00:00"}', ["line 2, column 'at':", "has no UTC offset"]),
        ('{"id": 1, "$tablet_index": 2}', ["line 2, column '$tablet_index': expected a tablet index 0..1"]),
    ],
)
def test_a_bad_line_fails_in_one_line_naming_the_line_and_column_and_writes_nothing(
    yt, yt_proxy: str, yt_root: str, line: str, fragments: list[str]
) -> None:
    queue = _queue(yt, yt_root)
    text = '{"id": 0}\n' + line + '\n{"id": 9}\n'
    error = assert_one_line_error(run("produce", queue, "--proxy", yt_proxy, input=text), *fragments)
    assert error.endswith("nothing was written"), error
    assert _rows(yt, queue) == []


def test_a_bad_line_after_full_batches_says_what_was_written_and_where_to_resume(
    yt, yt_proxy: str, yt_root: str
) -> None:
    queue = _queue(yt, yt_root)
    text = "".join(f'{{"id": {i}}}\n' for i in range(1, 13)) + "not json\n"
    assert_one_line_error(
        run("produce", queue, "--batch-rows", "5", "--proxy", yt_proxy, input=text),
        "line 13, character 1: not valid JSON",
        "10 row(s) from the lines before line 11 were written; resume from line 11 (e.g. tail -n +11 FILE)",
    )
    assert sorted(r["id"] for r in _rows(yt, queue)) == list(range(1, 11))


def test_produce_refuses_what_is_not_a_queue_and_a_tablet_out_of_range(
    yt, yt_proxy: str, yt_root: str, tmp_path: Path
) -> None:
    queue = _queue(yt, yt_root)
    assert_one_line_error(
        run("produce", f"{yt_root}/nope", "--proxy", yt_proxy, input='{"id": 1}\n'),
        f"{yt_root}/nope does not exist",
        "ytqueue create-queue",
    )
    static = f"{yt_root}/static"
    yt.create("table", static, attributes={"schema": [admin.column("id", "int64")]})
    assert_one_line_error(run("produce", static, "--proxy", yt_proxy, input='{"id": 1}\n'), f"{static} is not a queue")
    assert_one_line_error(
        run("produce", queue, "--tablet", "2", "--proxy", yt_proxy, input='{"id": 1}\n'),
        "--tablet 2 is out of range",
        "2 tablet(s), 0..1",
    )
    assert_one_line_error(
        run("produce", queue, "--file", str(tmp_path / "missing.jsonl"), "--proxy", yt_proxy),
        "cannot read --file",
        "missing.jsonl",
    )
    invalid = tmp_path / "latin1.jsonl"
    invalid.write_bytes(b'{"id": 1}\n{"id": 2, "payload": "caf\xe9"}\n')
    assert_one_line_error(
        run("produce", queue, "--file", str(invalid), "--proxy", yt_proxy), "line 2, byte 26: not UTF-8 text"
    )
    assert _rows(yt, queue) == []


# -- ytqueue local takes the embedded server's settings --------------------------------------------------------


def _start_local(tmp_path: Path, *options: str) -> tuple[subprocess.Popen[str], str]:
    ytqueue = Path(sys.executable).with_name("ytqueue")
    process = subprocess.Popen(
        [str(ytqueue), "local", "--port", "0", "--data-dir", str(tmp_path / "data"), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, COLUMNS="200"),
    )
    line = ""
    while "proxy=" not in line:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            raise AssertionError(f"ytqueue local exited with {process.returncode}")
    return process, re.search(r"proxy=(\S+)", line).group(1)


def test_local_takes_the_server_settings_and_produce_names_the_lines_yt_refused(tmp_path: Path) -> None:
    """``ytqueue local --max-rows-per-transaction N --cluster-name C``: a batch over N rows for one tablet is
    refused by the server (YT error 1717), and ``ytqueue produce`` says which lines were not written."""
    process, proxy = _start_local(tmp_path, "--max-rows-per-transaction", "5", "--cluster-name", "primary")
    try:
        client = make_yt_client(proxy)
        queue, consumer = "//home/me/queue", "//home/me/consumer"
        admin.create_queue(client, queue, admin.parse_schema("id:int64:required"), tablet_count=2)
        admin.create_consumer(client, consumer, queue)
        ten = "".join(f'{{"id": {i}}}\n' for i in range(10))
        # Round-robin puts 5 rows of a 10-row batch into each tablet: within the limit.
        assert_ok(run("produce", queue, "--proxy", proxy, input=ten))
        result = run("produce", queue, "--tablet", "0", "--proxy", proxy, input=ten)
        assert_one_line_error(result, "YT refused lines 1-10:", "1717", "nothing was written")
        assert len(list(client.select_rows(f"id from [{queue}]"))) == 10
        client.advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=1)
        assert [r["queue_cluster"] for r in client.select_rows(f"queue_cluster from [{consumer}]")] == ["primary"]
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


def test_local_option_errors_are_one_line() -> None:
    assert_one_line_error(run("local", "--max-rows-per-transaction", "0"), "--max-rows-per-transaction", exit_code=2)
    assert_one_line_error(run("local", "--log-level", "LOUD", "--port", "0"), "--log-level must be")
