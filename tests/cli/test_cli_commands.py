"""The ``ytqueue`` commands as a user runs them: create what a pipeline needs, report lag, fail in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spyt_queue.cli import app
from spyt_queue.yt import admin


def run(*args: str, env: dict[str, str | None] | None = None):
    """Invoke ``ytqueue`` in-process; returns the click ``Result`` (stdout and stderr kept apart)."""
    return CliRunner().invoke(
        app, list(args), env={"YT_PROXY": None, "COLUMNS": "200", **(env or {})}, prog_name="ytqueue"
    )


def assert_one_line_error(result, *fragments: str, exit_code: int = 1) -> str:
    """The command failed with ``exit_code``, printing one ``Error:`` line naming every fragment, no traceback."""
    output = result.stdout + result.stderr
    assert result.exit_code == exit_code, output
    assert "Traceback" not in output and "╭" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("Error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def assert_ok(result) -> str:
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.stdout


# -- creating what a pipeline needs ---------------------------------------------------------------------------


def test_create_queue_with_compact_schema_and_tablets(yt, yt_proxy: str, yt_root: str) -> None:
    queue = f"{yt_root}/queue"
    out = assert_ok(
        run(
            "create-queue", queue, "--schema", "id:int64:required,payload:string", "--tablets", "3", "--proxy", yt_proxy
        )
    )
    assert f"created queue {queue} (3 tablets" in out
    assert f"next: ytqueue create-consumer //path/to/consumer --queue {queue}" in out
    attributes = yt.get(queue, attributes=["dynamic", "sorted", "tablet_count", "tablet_state", "schema"]).attributes
    assert attributes["dynamic"] and not attributes["sorted"]
    assert attributes["tablet_count"] == 3 and attributes["tablet_state"] == "mounted"
    columns = {c["name"]: c for c in attributes["schema"] if not c["name"].startswith("$")}
    assert columns["id"]["type"] == "int64" and columns["id"]["required"]
    assert columns["payload"]["type"] == "string" and not columns["payload"]["required"]
    yt.insert_rows(queue, [{"$tablet_index": 2, "id": 1, "payload": "x"}])


def test_create_queue_from_a_yson_schema_file_with_composite_types(
    yt, yt_proxy: str, yt_root: str, tmp_path: Path
) -> None:
    schema_file = tmp_path / "schema.yson"
    schema_file.write_text(
        "<strict=%true>[{name=id; type=int64; required=%true}; {name=tags; type_v3={type_name=list; item=string}}]"
    )
    queue = f"{yt_root}/queue"
    assert_ok(run("create-queue", queue, "--schema", str(schema_file), "--proxy", yt_proxy))
    schema = [c for c in yt.get(f"{queue}/@schema") if not c["name"].startswith("$")]
    assert [c["name"] for c in schema] == ["id", "tags"]
    assert schema[1]["type_v3"] == {"type_name": "list", "item": "string"}


def test_create_consumer_creates_and_registers_then_registers_an_existing_one(yt, yt_proxy: str, yt_root: str) -> None:
    first, second = f"{yt_root}/q1", f"{yt_root}/q2"
    for queue in (first, second):
        admin.create_queue(yt, queue, [admin.column("a", "int64")])
    consumer = f"{yt_root}/consumer"
    out = assert_ok(run("create-consumer", consumer, "--queue", first, "--proxy", yt_proxy))
    assert f"created consumer {consumer} for queue {first}" in out
    assert f'.option("consumer_path", "{consumer}").load("{first}")' in out
    assert admin.consumer_registered(yt, first, consumer)
    out = assert_ok(run("create-consumer", consumer, "--queue", second, "--vital", "--proxy", yt_proxy))
    assert f"registered existing consumer {consumer} for queue {second} (vital=true)" in out
    assert admin.consumer_registered(yt, first, consumer) and admin.consumer_registered(yt, second, consumer)


def test_create_producer(yt, yt_proxy: str, yt_root: str) -> None:
    producer = f"{yt_root}/producer"
    out = assert_ok(run("create-producer", producer, "--proxy", yt_proxy))
    assert f"created producer {producer}" in out and f'.option("producer_path", "{producer}")' in out
    assert yt.get(f"{producer}/@treat_as_queue_producer")


def test_create_table_sorted_puts_keys_first_and_ordered_without_keys(yt, yt_proxy: str, yt_root: str) -> None:
    sorted_path, ordered_path = f"{yt_root}/sorted", f"{yt_root}/ordered"
    out = assert_ok(
        run(
            "create-table",
            sorted_path,
            "--schema",
            "v:string,k2:int64,k1:utf8",
            "--sorted-by",
            "k1,k2",
            "--proxy",
            yt_proxy,
        )
    )
    assert f"created sorted table (key k1, k2) {sorted_path}" in out
    schema = yt.get(f"{sorted_path}/@schema")
    assert [(c["name"], c.get("sort_order")) for c in schema] == [("k1", "ascending"), ("k2", "ascending"), ("v", None)]
    yt.insert_rows(sorted_path, [{"k1": "a", "k2": 1, "v": "x"}])
    assert [r["v"] for r in yt.lookup_rows(sorted_path, [{"k1": "a", "k2": 1}])] == ["x"]

    out = assert_ok(run("create-table", ordered_path, "--schema", "v:string", "--tablets", "2", "--proxy", yt_proxy))
    assert f"created ordered table (2 tablets) {ordered_path}" in out
    assert not yt.get(f"{ordered_path}/@sorted") and yt.get(f"{ordered_path}/@tablet_count") == 2


# -- one-line errors ------------------------------------------------------------------------------------------


def test_bad_schema_and_keys_fail_in_one_line_before_anything_is_created(yt, yt_proxy: str, yt_root: str) -> None:
    queue = f"{yt_root}/queue"
    assert_one_line_error(
        run("create-queue", queue, "--schema", "id:int,payload:string", "--proxy", yt_proxy),
        "column 'id' has unknown type 'int'",
        "int64",
    )
    assert_one_line_error(
        run("create-queue", queue, "--schema", "id", "--proxy", yt_proxy), "'id' is neither a schema file nor columns"
    )
    assert_one_line_error(
        run("create-table", queue, "--schema", "k:int64,v:string", "--sorted-by", "key", "--proxy", yt_proxy),
        "key column(s) key are not in the schema (k, v)",
    )
    assert not yt.exists(queue)


def test_existing_path_is_refused_in_one_line(yt, yt_proxy: str, yt_root: str) -> None:
    path = f"{yt_root}/taken"
    yt.create("map_node", path)
    for command in (
        ("create-queue", path, "--schema", "a:int64"),
        ("create-table", path, "--schema", "a:int64"),
        ("create-producer", path),
    ):
        assert_one_line_error(run(*command, "--proxy", yt_proxy), f"{path} already exists (a map_node)")
    queue = f"{yt_root}/queue"
    admin.create_queue(yt, queue, [admin.column("a", "int64")])
    assert_one_line_error(
        run("create-consumer", path, "--queue", queue, "--proxy", yt_proxy),
        f"{path} already exists and is not a consumer",
    )


def test_missing_proxy_names_both_ways_to_give_it() -> None:
    for command in (
        ("status", "--queue", "//q"),
        ("create-queue", "//q", "--schema", "a:int64"),
        ("create-producer", "//p"),
    ):
        assert_one_line_error(run(*command), "no YT proxy", "--proxy", "YT_PROXY")


def test_unreachable_proxy_is_one_line_naming_it() -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert_one_line_error(
        run("status", "--queue", "//q", "--proxy", f"127.0.0.1:{port}"), f"cannot reach 127.0.0.1:{port}"
    )


def test_usage_errors_are_one_line_too() -> None:
    line = assert_one_line_error(
        run("create-queue", "//q", "--schema", "a:int64", "--tablets", "0"), "--tablets", exit_code=2
    )
    assert "ytqueue create-queue --help" in line
    assert_one_line_error(run("create-queue", "--schema", "a:int64"), "Missing argument", exit_code=2)
    assert_one_line_error(run("status", "--bootstrap-servers", "localhost:1", "--topic", "t"), "--topic and --group")


@pytest.mark.parametrize("kind", ["static", "sorted", "missing"])
def test_status_of_a_table_that_is_not_a_queue_says_so(yt, yt_proxy: str, yt_root: str, kind: str) -> None:
    path = f"{yt_root}/{kind}"
    if kind == "static":
        yt.create("table", path, attributes={"schema": [admin.column("a", "int64")]})
    elif kind == "sorted":
        admin.create_sorted_table(
            yt, path, [admin.column("k", "int64", sort_order="ascending"), admin.column("v", "string")]
        )
    result = run("status", "--proxy", yt_proxy, "--queue", path)
    assert_one_line_error(result, f"{path} does not exist" if kind == "missing" else f"{path} is not a queue")


def test_a_missing_queue_is_blamed_on_the_queue_option(yt, yt_proxy: str, yt_root: str) -> None:
    """The CLI names its own ``--queue`` option, not the path given to Spark's ``load()``."""
    missing = f"{yt_root}/no-such-queue"
    for command in (("status",), ("create-consumer", f"{yt_root}/consumer-of-nothing")):
        line = assert_one_line_error(
            run(*command, "--proxy", yt_proxy, "--queue", missing), f"{missing} does not exist", "check --queue"
        )
        assert "load()" not in line, line


def test_debug_shows_the_traceback_before_or_after_the_command(yt, yt_proxy: str, yt_root: str) -> None:
    path = f"{yt_root}/static"
    yt.create("table", path, attributes={"schema": [admin.column("a", "int64")]})
    ytqueue = str(Path(sys.executable).with_name("ytqueue"))
    env = dict(os.environ, YT_PROXY=yt_proxy, COLUMNS="200")
    plain = subprocess.run([ytqueue, "status", "--queue", path], capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode == 1 and plain.stdout == ""
    assert plain.stderr.splitlines() == [
        f"Error: {path} is not a queue: ytqueue reads ordered dynamic tables (type=table, dynamic=false, sorted=false)"
    ]
    for args in (["--debug", "status", "--queue", path], ["status", "--queue", path, "--debug"]):
        done = subprocess.run([ytqueue, *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 1
        assert "Traceback (most recent call last)" in done.stderr and f"{path} is not a queue" in done.stderr


# -- status ---------------------------------------------------------------------------------------------------


def test_status_takes_the_proxy_from_yt_proxy_and_hints_at_an_unregistered_consumer(
    yt, yt_proxy: str, yt_root: str
) -> None:
    """The README's ``ytqueue status --queue Q --consumer C`` with only ``YT_PROXY`` set."""
    queue, consumer = f"{yt_root}/queue", f"{yt_root}/consumer"
    admin.create_queue(yt, queue, [admin.column("a", "int64")], tablet_count=2)
    yt.insert_rows(queue, [{"$tablet_index": t, "a": i} for t in (0, 1) for i in range(3 + t)])
    admin.create_consumer(yt, consumer)
    result = run("status", "--queue", queue, "--consumer", consumer, env={"YT_PROXY": yt_proxy})
    assert result.exit_code == 0, result.stdout + result.stderr
    assert f"hint: consumer {consumer} is not registered for {queue}" in result.stderr
    assert f"ytqueue create-consumer {consumer} --queue {queue}" in result.stderr
    assert "register_queue_consumer(" in result.stderr

    assert_ok(run("create-consumer", consumer, "--queue", queue, env={"YT_PROXY": yt_proxy}))
    yt.advance_consumer(consumer, queue, partition_index=1, old_offset=0, new_offset=1)
    result = run("status", "--queue", queue, "--consumer", consumer, env={"YT_PROXY": yt_proxy})
    out = assert_ok(result)
    assert "hint" not in result.stderr
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:6]]
        for line in out.splitlines()
        if line.startswith("│")
    }
    assert rows == {"0": ["-", "0", "3", "3"], "1": ["1", "0", "4", "3"], "total": ["", "", "7", "6"]}


def test_status_of_a_missing_consumer_says_how_to_create_it(yt, yt_proxy: str, yt_root: str) -> None:
    queue = f"{yt_root}/queue"
    admin.create_queue(yt, queue, [admin.column("a", "int64")])
    assert_one_line_error(
        run("status", "--queue", queue, "--consumer", f"{yt_root}/nope", "--proxy", yt_proxy),
        f"consumer {yt_root}/nope does not exist",
        f"ytqueue create-consumer {yt_root}/nope --queue {queue}",
    )


# -- the README's path: create with the CLI, run a query, check with the CLI -----------------------------------


@pytest.mark.spark
def test_objects_created_with_the_cli_carry_a_streaming_query(
    spark, yt, yt_proxy: str, yt_root: str, checkpoint
) -> None:
    queue, consumer, out = f"{yt_root}/events", f"{yt_root}/consumer", f"{yt_root}/out"
    env = {"YT_PROXY": yt_proxy}
    assert_ok(run("create-queue", queue, "--schema", "id:int64:required,payload:string", "--tablets", "2", env=env))
    assert_ok(run("create-consumer", consumer, "--queue", queue, env=env))
    assert_ok(
        run(
            "create-table",
            out,
            "--schema",
            "src_tablet:int64,src_row:int64,id:int64,payload:string",
            "--sorted-by",
            "src_tablet,src_row",
            env=env,
        )
    )
    yt.insert_rows(queue, [{"$tablet_index": i % 2, "id": i, "payload": f"p{i}"} for i in range(10)])
    events = (
        spark.readStream.format("ytqueue")
        .option("proxy", yt_proxy)
        .option("consumer_path", consumer)
        .option("include_service_columns", "true")
        .load(queue)
    )
    query = (
        events.selectExpr(
            "__spyt_streaming_src_tablet_index as src_tablet",
            "__spyt_streaming_src_row_index as src_row",
            "id",
            "payload",
        )
        .writeStream.format("ytqueue")
        .option("proxy", yt_proxy)
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    assert sorted(r["id"] for r in yt.select_rows(f"id from [{out}]")) == list(range(10))

    result = run("status", "--queue", queue, "--consumer", consumer, env=env)
    out_text = assert_ok(result)
    assert "hint" not in result.stderr
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:6]]
        for line in out_text.splitlines()
        if line.startswith("│")
    }
    assert rows == {"0": ["5", "0", "5", "0"], "1": ["5", "0", "5", "0"], "total": ["", "", "10", "0"]}


def test_local_on_a_port_in_use_says_so(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("local", "--port", str(port), "--data-dir", str(tmp_path / "data"))
    assert_one_line_error(result, f"127.0.0.1:{port} is already in use", "--port")
