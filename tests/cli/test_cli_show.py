"""``ytqueue show PATH``: the rows of a dynamic table, the way to look at an output table (issue 32, item 3)."""

from __future__ import annotations

import uuid

from spyt_queue.yt import admin
from tests.cli.test_cli_commands import assert_one_line_error, run
from tests.conftest import make_client


def test_show_prints_a_sorted_table_in_key_order_and_an_ordered_one_with_row_positions(yt_proxy: str) -> None:
    yt = make_client(yt_proxy)
    root = f"//tmp/spyt_queue_tests/show-{uuid.uuid4().hex[:8]}"
    out, log = f"{root}/out", f"{root}/log"
    admin.create_sorted_table(
        yt, out, [admin.column("k", "int64", sort_order="ascending"), admin.column("payload", "string")]
    )
    admin.create_queue(yt, log, [admin.column("payload", "string")], tablet_count=2)
    yt.insert_rows(out, [{"k": 2, "payload": "world"}, {"k": 1, "payload": "hello"}])
    yt.insert_rows(log, [{"$tablet_index": 1, "payload": "only"}])

    result = run("show", out, "--proxy", yt_proxy)
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert f"{out} (sorted)" in lines[0], result.stdout
    body = [line for line in lines if "hello" in line or "world" in line]
    assert len(body) == 2 and "hello" in body[0] and "world" in body[1], result.stdout
    assert lines[-1] == "2 rows", result.stdout

    result = run("show", log, "--proxy", yt_proxy)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "tablet index" in result.stdout and "row index" in result.stdout, result.stdout
    (row,) = [line for line in result.stdout.splitlines() if "only" in line]
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == ["1", "0", "only"], row

    result = run("show", out, "--limit", "1", "--proxy", yt_proxy)
    assert result.stdout.splitlines()[-1] == "1 row, and more: --limit 5 shows more", result.stdout


def test_show_of_a_missing_table_is_one_line_naming_create_table(yt_proxy: str) -> None:
    missing = f"//tmp/spyt_queue_tests/show-{uuid.uuid4().hex[:8]}/nothing"
    result = run("show", missing, "--proxy", yt_proxy)
    assert_one_line_error(result, f"{missing} does not exist", "ytqueue create-table")
