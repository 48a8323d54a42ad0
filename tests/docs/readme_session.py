"""A reader's Python session for ``tests/docs/test_readme_examples.py``: one fresh interpreter that runs the README's
```python blocks sent to it, one at a time, in one namespace (as a reader pasting them into one Python prompt).

Protocol: one JSON request per line on stdin, ``{"code": ..., "filename": ..., "timeout": seconds}`` (or
``{"exit": true}``); one JSON reply per request on the process's original stdout. Everything else the blocks, Spark or
the JVM print goes to stderr. After a block ran, the session does what a reader would do next:

* the streaming queries the block started (bound to a name, the value of its last expression, or active) are run
  until the data available now is processed (``processAllAvailable()``), then stopped;
* if it started none, every streaming DataFrame it bound (or its last expression's value, if streaming) is run into a
  memory table with ``Trigger.AvailableNow`` and its rows are returned (run again, at most twice, when Spark's Python
  worker failed to connect back: see ``CONNECT_BACK_FAILURE``).

The reply: ``{"ok": true, "queries": [{"name", "exception"}], "streams": {name: [row dicts]}, "stdout": text}`` or
``{"ok": false, "error": traceback}``; ``stdout`` is what the block printed through Python's ``sys.stdout`` (a
``df.show()``), also copied to stderr. Bytes in rows are decoded as UTF-8 (undecodable bytes backslash-escaped).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import os
import sys
import time
import traceback
from typing import Any


def _plain(value: Any) -> Any:
    """``value`` (a Row's field) as something JSON can carry."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _active_session() -> Any:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def _queries(namespace: dict[str, Any], before: dict[str, int], value: Any, known: set[str]) -> list[Any]:
    """The streaming queries the block started: new bindings, its last value, and new active ones (``known``: the run
    ids of the queries of earlier blocks; a query id repeats when a checkpoint is reused, a run id does not)."""
    from pyspark.sql.streaming import StreamingQuery

    found: dict[str, Any] = {}
    candidates = [v for k, v in namespace.items() if before.get(k) != id(v)] + [value]
    session = _active_session()
    if session is not None:
        candidates += list(session.streams.active)
    for candidate in candidates:
        if isinstance(candidate, StreamingQuery) and candidate.runId not in known:
            found[candidate.runId] = candidate
    return list(found.values())


def _streams(namespace: dict[str, Any], before: dict[str, int], value: Any) -> dict[str, Any]:
    """The streaming DataFrames the block bound (name -> DataFrame), or its last value under ``_``."""
    from pyspark.sql import DataFrame

    found = {
        name: v
        for name, v in namespace.items()
        if before.get(name) != id(v) and isinstance(v, DataFrame) and v.isStreaming
    }
    if isinstance(value, DataFrame) and value.isStreaming:
        found["_"] = value
    return found


# Spark gives a Python worker a fixed 10 s to connect back; on an overloaded machine a query fails with this before it
# reads anything (README, "Several queries in one driver"). A stream run into a memory table (no checkpoint of its
# own) is then run again, at most this many times in all.
CONNECT_BACK_FAILURE = "Python worker failed to connect back"
CONNECT_BACK_ATTEMPTS = 3
#: The modules of the Python processes Spark starts for a data source's driver-side calls (docs/troubleshooting.md).
PLANNER_MODULES = ("pyspark.sql.worker.", "pyspark.sql.streaming.python_")


def _late_workers() -> list[int]:
    """Pids of this process's descendants running one of :data:`PLANNER_MODULES` (read from ``/proc``)."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                commands[int(entry)] = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, stack = [], list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        if any(module in commands.get(pid, "") for module in PLANNER_MODULES):
            found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _wait_for_late_workers(timeout: float = 60.0) -> None:
    """After a start failed to connect back (no query is running), wait for the Python processes Spark gave up on to
    end: each prints a ``CANNOT_OPEN_SOCKET`` traceback when it finally starts, which would otherwise land in the next
    attempt's output."""
    deadline = time.monotonic() + timeout
    while _late_workers() and time.monotonic() < deadline:
        time.sleep(0.5)


def _available_now(df: Any, table: str, timeout: float, known: set[str]) -> tuple[list[dict], str | None]:
    """Run ``df`` into the memory table ``table`` with ``Trigger.AvailableNow``: its rows, or the error."""
    query = df.writeStream.format("memory").queryName(table).trigger(availableNow=True).start()
    known.add(query.runId)
    try:
        finished = query.awaitTermination(timeout)
    except Exception as error:  # the query failed
        return [], str(error)
    finally:
        query.stop()
    if not finished:
        return [], f"the AvailableNow run did not finish within {timeout} s"
    if query.exception() is not None:
        return [], str(query.exception())
    return [_plain(row.asDict(recursive=True)) for row in df.sparkSession.table(table).collect()], None


class _Tee(io.TextIOBase):
    """A block's ``sys.stdout``: keeps what it prints and copies it to stderr (the session's log)."""

    def __init__(self) -> None:
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        sys.stderr.write(text)
        return len(text)

    def flush(self) -> None:
        sys.stderr.flush()


def run_block(namespace: dict[str, Any], code: str, filename: str, timeout: float, known: set[str]) -> dict:
    """Run one block in ``namespace``, then its queries or streams (see the module docstring)."""
    before = {name: id(v) for name, v in namespace.items()}
    value = None
    printed = _Tee()
    try:
        tree = ast.parse(code, filename=filename)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with contextlib.redirect_stdout(printed):
            exec(compile(ast.Module(body=tree.body, type_ignores=[]), filename, "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
    except BaseException:
        error = traceback.format_exc()
        for query in _queries(namespace, before, value, known):
            query.stop()
        return {"ok": False, "error": error}

    reply: dict[str, Any] = {"ok": True, "queries": [], "streams": {}, "stdout": printed.kept.getvalue()}
    queries = _queries(namespace, before, value, known)
    known.update(q.runId for q in queries)
    for query in queries:
        exception = None
        try:
            query.processAllAvailable()
        except Exception as error:  # the query failed: reported, not raised
            exception = str(error)
        finally:
            query.stop()
        exception = exception or (str(query.exception()) if query.exception() is not None else None)
        reply["queries"].append({"name": query.name, "id": query.id, "exception": exception})
    if queries:
        return reply
    for name, df in _streams(namespace, before, value).items():
        for attempt in range(1, CONNECT_BACK_ATTEMPTS + 1):
            rows, error = _available_now(df, f"readme_{len(known)}_{name.strip('_') or 'value'}", timeout, known)
            if error is None or CONNECT_BACK_FAILURE not in error or attempt == CONNECT_BACK_ATTEMPTS:
                break
            print(f"{name}: {CONNECT_BACK_FAILURE} (attempt {attempt}); running it again", file=sys.stderr)
            if not sys.platform.startswith("linux"):
                continue
            _wait_for_late_workers()
        if error is not None:
            return {"ok": False, "error": f"{name}: {error}"}
        reply["streams"][name] = rows
    return reply


def main() -> None:
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the blocks' prints and the JVM's output go to stderr; stdout carries only replies
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    known: set[str] = set()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("exit"):
            break
        try:
            reply = run_block(namespace, request["code"], request["filename"], float(request["timeout"]), known)
        except Exception:  # running the block's queries failed: the session stays for the next request
            reply = {"ok": False, "error": traceback.format_exc()}
        channel.write(json.dumps(reply) + "\n")
    session = _active_session()
    if session is not None:
        session.stop()


if __name__ == "__main__":
    main()
