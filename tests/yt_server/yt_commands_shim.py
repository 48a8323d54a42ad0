"""A small ``yt_commands``-like shim over ``yt.wrapper`` for tests ported from YTsaurus's integration suite.

YTsaurus's tests (``yt/yt/tests/integration/...``) call module-level functions of ``yt_commands``
(``create``, ``insert_rows``, ``pull_queue``, ``raises_yt_error`` ...) against a fresh cluster whose ``//tmp`` is
empty. Ported tests keep those calls, arguments and expected values; this shim runs them through ``yt.wrapper``
(the HTTP proxy API, as users do) against the cluster under test:

* ``bind(client, root)`` (the ``ytc`` fixture of the ported suites) makes ``root`` stand for ``//tmp``: every
  ``//tmp`` in a path or query argument is rewritten to ``root`` and every ``root`` in an answer back to
  ``//tmp``, so each test has an empty ``//tmp`` of its own on a shared server;
* commands are sent as the driver names them (``execute_command``), with every parameter the test gives, so
  ``mutation_id``, ``transaction_id``, ``client_side`` and ``sequence_number`` reach the server as in YTsaurus;
* ``raises_yt_error(message_or_code)`` accepts a message fragment or an error code found anywhere in the error
  tree, as YTsaurus's helper does.

The module name is unique (not ``yt_commands``) so it never shadows a real ``yt_commands`` on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yt.yson as yson
from yt.wrapper.driver import make_formatted_request, make_request
from yt.wrapper.errors import YtResponseError

PRIMARY = "primary"  # the cluster name YTsaurus's test environment gives its primary cluster

#: ``yt_error_codes`` of YTsaurus's test library (values from the YTsaurus sources).
ResolveError = 500
AuthorizationErrorCode = 901
NoSuchTablet = 1701
ConsumerOffsetConflict = 3100
InvalidEpoch = 3101
ZombieEpoch = 3102
InvalidRowSequenceNumbers = 3103

#: ``PRODUCER_OBJECT_TABLE_SCHEMA`` of ``yt/python/yt/environment/init_queue_agent_state.py``.
PRODUCER_OBJECT_TABLE_SCHEMA = [
    {"name": "queue_cluster", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "queue_path", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "session_id", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "sequence_number", "type": "int64", "required": True},
    {"name": "epoch", "type": "int64", "required": True},
    {"name": "user_meta", "type": "any", "required": False},
    {"name": "system_meta", "type": "any", "required": False},
]

#: ``CONSUMER_OBJECT_TABLE_SCHEMA`` (with ``meta``) and the older form without it.
CONSUMER_OBJECT_TABLE_SCHEMA = [
    {"name": "queue_cluster", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "queue_path", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "partition_index", "type": "uint64", "sort_order": "ascending", "required": True},
    {"name": "offset", "type": "uint64", "required": True},
    {"name": "meta", "type": "any", "required": False},
]
CONSUMER_OBJECT_TABLE_SCHEMA_WITHOUT_META = CONSUMER_OBJECT_TABLE_SCHEMA[:4]


class _Binding:
    client: Any = None
    root: str = "//tmp"
    cluster: str = PRIMARY


_BOUND = _Binding()


def bind(client: Any, root: str) -> None:
    """Run the shim's commands through ``client`` with ``root`` standing for ``//tmp``."""
    _BOUND.client = client
    _BOUND.root = root.rstrip("/")
    _BOUND.cluster = cluster_name(client)


def cluster_name(client: Any) -> str:
    """The cluster name consumer and producer rows carry: ``//sys/@cluster_name`` on a real cluster, ``local`` on
    the embedded server."""
    try:
        return str(client.get("//sys/@cluster_name"))
    except Exception:
        return "local"


def _map(value: Any) -> Any:
    """``//tmp`` -> the bound root, in strings (paths, queries, rich paths with attributes)."""
    if isinstance(value, str):
        mapped = value.replace("//tmp/", _BOUND.root + "/")
        if mapped.endswith("//tmp"):
            mapped = mapped[: -len("//tmp")] + _BOUND.root
        if isinstance(value, yson.YsonString) or hasattr(value, "attributes"):
            return yson.to_yson_type(mapped, attributes=dict(getattr(value, "attributes", {}) or {}))
        return mapped
    if isinstance(value, list):
        return [_map(v) for v in value]
    if isinstance(value, dict):
        return {k: _map(v) for k, v in value.items()}
    return value


def _unmap(value: Any) -> Any:
    """The bound root -> ``//tmp`` and this cluster's name -> ``primary`` in answers, attributes kept."""
    if isinstance(value, (str, bytes)) and not isinstance(value, bool):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        mapped = text.replace(_BOUND.root + "/", "//tmp/")
        if mapped == _BOUND.root:
            mapped = "//tmp"
        if mapped == _BOUND.cluster:
            mapped = PRIMARY
        attributes = getattr(value, "attributes", None)
        if attributes:
            return yson.to_yson_type(mapped, attributes=_unmap(dict(attributes)))
        return mapped if mapped != text or not isinstance(value, bytes) else value
    if isinstance(value, list):
        attributes = getattr(value, "attributes", None)
        items = [_unmap(v) for v in value]
        return yson.to_yson_type(items, attributes=_unmap(dict(attributes))) if attributes else items
    if isinstance(value, dict):
        attributes = getattr(value, "attributes", None)
        items = {k: _unmap(v) for k, v in value.items()}
        return yson.to_yson_type(items, attributes=_unmap(dict(attributes))) if attributes else items
    return value


def _cluster_path(path: Any) -> Any:
    """``primary://tmp/x`` names this cluster in YTsaurus's tests: give it this cluster's name."""
    if isinstance(path, str) and path.startswith(PRIMARY + ":"):
        return _BOUND.cluster + path[len(PRIMARY) :]
    if isinstance(path, str) and path.startswith("<") and f">{PRIMARY}:/" in path:
        return path.replace(f">{PRIMARY}:/", f">{_BOUND.cluster}:/", 1)
    return path


def execute_command(name: str, parameters: dict[str, Any], data: bytes | None = None, **kwargs: Any) -> Any:
    """One driver command with exactly these parameters; the structured answer, ``//tmp`` restored."""
    params = {k: _map(_cluster_path(v)) for k, v in parameters.items() if v is not None}
    if data is not None:
        raw = make_request(name, params, data=data, client=_BOUND.client, **kwargs)
        return _unwrap(_unmap(yson.loads(raw))) if raw else None
    return _unwrap(_unmap(make_formatted_request(name, params, format=None, client=_BOUND.client, **kwargs)))


def _unwrap(answer: Any) -> Any:
    """API v4 wraps single results (``{"value": ...}``, ``{"node_id": ...}``, ``{"transaction_id": ...}``)."""
    if isinstance(answer, dict) and len(answer) == 1:
        key = next(iter(answer))
        if key in ("value", "node_id", "transaction_id"):
            return answer[key]
    return answer


def _tabular(name: str, parameters: dict[str, Any]) -> list[dict[str, Any]]:
    params = {k: _map(_cluster_path(v)) for k, v in parameters.items() if v is not None}
    params["output_format"] = yson.to_yson_type("yson", attributes={"format": "binary"})
    raw = make_request(name, params, client=_BOUND.client)
    return [_unmap(row) for row in yson.loads(raw, yson_type="list_fragment")] if raw else []


# --------------------------------------------------------------------------------------------------------------
# Cypress


def create(object_type: str, path: str, attributes: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """``create``."""
    return execute_command("create", {"type": object_type, "path": path, "attributes": attributes, **kwargs})


def get(path: str, **kwargs: Any) -> Any:
    """``get`` (the value)."""
    return execute_command("get", {"path": path, **kwargs})


def set(path: str, value: Any, **kwargs: Any) -> None:
    """``set`` (the value in YSON)."""
    params = {"path": path, "input_format": "yson", **kwargs}
    make_request("set", {k: _map(v) for k, v in params.items()}, data=yson.dumps(_map(value)), client=_BOUND.client)


def exists(path: str, **kwargs: Any) -> bool:
    """``exists``."""
    return bool(execute_command("exists", {"path": path, **kwargs}))


def remove(path: str, **kwargs: Any) -> None:
    """``remove``."""
    execute_command("remove", {"path": path, **kwargs})


def link(target_path: str, link_path: str, **kwargs: Any) -> Any:
    """``link``."""
    return execute_command("link", {"target_path": target_path, "link_path": link_path, **kwargs})


# --------------------------------------------------------------------------------------------------------------
# Dynamic tables


def sync_mount_table(path: str) -> None:
    """``mount_table`` and wait for ``mounted``."""
    execute_command("mount_table", {"path": path})
    wait_for_tablet_state(path, "mounted")


def wait_for_tablet_state(path: str, state: str) -> None:
    """Wait until every tablet of ``path`` is in ``state``."""
    wait(lambda: get(path + "/@tablet_state") == state)


def insert_rows(path: str, rows: list[dict[str, Any]], **kwargs: Any) -> None:
    """``insert_rows`` of YSON rows."""
    _modify("insert_rows", path, rows, **kwargs)


def delete_rows(path: str, rows: list[dict[str, Any]], **kwargs: Any) -> None:
    """``delete_rows``."""
    _modify("delete_rows", path, rows, **kwargs)


def _modify(name: str, path: str, rows: list[dict[str, Any]], tx: str | None = None, **kwargs: Any) -> None:
    params = {"path": path, "input_format": "yson", "transaction_id": tx, **kwargs}
    make_request(
        name,
        {k: _map(v) for k, v in params.items() if v is not None},
        data=yson.dumps(_map(rows), yson_type="list_fragment"),
        client=_BOUND.client,
    )


def select_rows(query: str, **kwargs: Any) -> list[dict[str, Any]]:
    """``select_rows``."""
    return _tabular("select_rows", {"query": query, **kwargs})


def trim_rows(path: str, tablet_index: int, trimmed_row_count: int) -> None:
    """``trim_rows``."""
    execute_command("trim_rows", {"path": path, "tablet_index": tablet_index, "trimmed_row_count": trimmed_row_count})


def sorted_dicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in a canonical order (``yt_commands.sorted_dicts``)."""
    return sorted(rows, key=lambda row: sorted((str(k), repr(v)) for k, v in row.items()))


# --------------------------------------------------------------------------------------------------------------
# Transactions


def start_transaction(**kwargs: Any) -> str:
    """``start_transaction`` (its id)."""
    return str(execute_command("start_transaction", dict(kwargs)))


def commit_transaction(tx: str, **kwargs: Any) -> Any:
    """``commit_transaction``."""
    return execute_command("commit_transaction", {"transaction_id": tx, **kwargs})


# --------------------------------------------------------------------------------------------------------------
# Queues


def register_queue_consumer(queue_path: str, consumer_path: str, vital: bool, **kwargs: Any) -> None:
    """``register_queue_consumer``."""
    execute_command(
        "register_queue_consumer",
        {"queue_path": queue_path, "consumer_path": consumer_path, "vital": vital, **kwargs},
    )


def unregister_queue_consumer(queue_path: str, consumer_path: str) -> None:
    """``unregister_queue_consumer``."""
    execute_command("unregister_queue_consumer", {"queue_path": queue_path, "consumer_path": consumer_path})


def list_queue_consumer_registrations(queue_path: str | None = None, consumer_path: str | None = None) -> Any:
    """``list_queue_consumer_registrations``, of this test's objects only (a YTsaurus test starts on an empty
    cluster; the shared server also holds other tests' registrations)."""
    params = {"queue_path": queue_path, "consumer_path": consumer_path}
    listed = make_formatted_request(
        "list_queue_consumer_registrations",
        {k: _map(_cluster_path(v)) for k, v in params.items() if v is not None},
        format=None,
        client=_BOUND.client,
    )
    mine = _BOUND.root + "/"
    return [
        _unmap(r) for r in listed if str(r["queue_path"]).startswith(mine) or str(r["consumer_path"]).startswith(mine)
    ]


def pull_queue(queue_path: str, offset: int, partition_index: int, **kwargs: Any) -> list[dict[str, Any]]:
    """``pull_queue``."""
    return _tabular(
        "pull_queue", {"queue_path": queue_path, "offset": offset, "partition_index": partition_index, **kwargs}
    )


def pull_consumer(
    consumer_path: str, queue_path: str, offset: int | None, partition_index: int, **kwargs: Any
) -> list[dict[str, Any]]:
    """``pull_consumer`` (``offset=None``: the consumer's offset)."""
    return _tabular(
        "pull_consumer",
        {
            "consumer_path": consumer_path,
            "queue_path": queue_path,
            "offset": offset,
            "partition_index": partition_index,
            **kwargs,
        },
    )


def advance_consumer(
    consumer_path: str,
    queue_path: str,
    partition_index: int,
    old_offset: int | None,
    new_offset: int,
    client_side: bool = True,
    transaction_id: str | None = None,
) -> None:
    """``advance_consumer``."""
    execute_command(
        "advance_consumer",
        {
            "consumer_path": consumer_path,
            "queue_path": queue_path,
            "partition_index": partition_index,
            "old_offset": old_offset,
            "new_offset": new_offset,
            "client_side": client_side,
            "transaction_id": transaction_id,
        },
    )


def create_queue_producer_session(
    producer_path: str, queue_path: str, session_id: str, user_meta: Any = None, mutation_id: str | None = None
) -> Any:
    """``create_queue_producer_session`` (``mutation_id`` is sent with ``retry=%true``, as ``yt.wrapper`` sends an
    explicit one)."""
    return execute_command(
        "create_queue_producer_session",
        {"producer_path": producer_path, "queue_path": queue_path, "session_id": session_id, "user_meta": user_meta},
        mutation_id=mutation_id,
    )


def remove_queue_producer_session(producer_path: str, queue_path: str, session_id: str) -> None:
    """``remove_queue_producer_session``."""
    execute_command(
        "remove_queue_producer_session",
        {"producer_path": producer_path, "queue_path": queue_path, "session_id": session_id},
    )


def push_queue_producer(
    producer_path: str,
    queue_path: str,
    session_id: str,
    epoch: int,
    data: list[dict[str, Any]],
    sequence_number: int | None = None,
    user_meta: Any = None,
    tx: str | None = None,
    **kwargs: Any,
) -> Any:
    """``push_queue_producer`` of YSON rows."""
    return execute_command(
        "push_queue_producer",
        {
            "producer_path": producer_path,
            "queue_path": queue_path,
            "session_id": session_id,
            "epoch": epoch,
            "sequence_number": sequence_number,
            "user_meta": user_meta,
            "transaction_id": tx,
            "input_format": "yson",
            "output_format": "yson",
            **kwargs,
        },
        data=yson.dumps(data, yson_type="list_fragment"),
    )


# --------------------------------------------------------------------------------------------------------------
# Test helpers


def wait(predicate: Callable[[], Any], timeout: float = 30.0, ignore_exceptions: bool = False) -> None:
    """Poll ``predicate`` until it is true (``yt_commands.wait``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except Exception:
            if not ignore_exceptions:
                raise
        if time.monotonic() > deadline:
            raise AssertionError("wait: the condition did not hold in time")
        time.sleep(0.05)


def _error_tree(error: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield error
    for inner in error.get("inner_errors") or []:
        yield from _error_tree(inner)


@contextlib.contextmanager
def raises_yt_error(
    message: str | int | None = None, code: int | None = None
) -> Iterator[pytest.ExceptionInfo[YtResponseError]]:
    """The block must fail with a YT error whose tree holds ``code`` and/or a message containing ``message``
    (an int ``message`` is a code, as in ``yt_commands.raises_yt_error``)."""
    if isinstance(message, int):
        message, code = None, message
    with pytest.raises(YtResponseError) as failure:
        yield failure
    tree = list(_error_tree(failure.value.error))
    if code is not None:
        assert any(int(e.get("code", 0)) == code for e in tree), failure.value
    if message is not None:
        assert any(message in _unmap_text(str(e.get("message", ""))) for e in tree), failure.value


def _unmap_text(text: str) -> str:
    """An error message with the bound root shown as ``//tmp`` (``Node //tmp has no child with key "x"``)."""
    text = text.replace(_BOUND.root + "/", "//tmp/")
    return re.sub(re.escape(_BOUND.root) + r"(?![\w/-])", "//tmp", text)


def normalize_schema(schema: Any) -> list[dict[str, Any]]:
    """Columns as ``{name, type, sort_order?, required}`` (``yt_type_helpers.normalize_schema``, v1 view)."""
    columns = []
    for column in schema:
        entry = {"name": column["name"], "type": column["type"], "required": bool(column.get("required", False))}
        if column.get("sort_order"):
            entry["sort_order"] = column["sort_order"]
        columns.append(entry)
    return columns


def make_schema(columns: list[dict[str, Any]], strict: bool = True, unique_keys: bool = False) -> Any:
    """``yt_type_helpers.make_schema`` in the form ``normalize_schema`` returns (attributes checked apart)."""
    return normalize_schema(columns)
