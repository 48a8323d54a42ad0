"""The ``yt_commands`` functions YTsaurus's dynamic-table tests call, as a shim over one ``yt.wrapper`` client.

Used by the ported dynamic-table suites (``test_ytsaurus_ordered_dynamic_tables.py``,
``test_ytsaurus_sorted_dynamic_tables.py``, ...): a suite imports the functions it calls and the autouse fixture
``_bind``, which binds them to the test's client and directory. ``//tmp/...`` paths are moved under the test's own
directory (error messages are matched with that directory shown as ``//tmp`` again). ``sync_create_cells`` is a
no-op (one node, one implicit cell) and ``sync_flush_table`` is freeze + unfreeze, as in ``yt_commands``.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yt.yson as yson
from conformance import configure_client
from yt.wrapper.errors import YtError

# ----------------------------------------------------------------------------------------------------------------
# The yt_commands shim: module-level functions bound to the current test's client and directory.

_client: Any = None
_root: str = "//tmp"


@pytest.fixture(autouse=True)
def _bind(yt, yt_root: str) -> Iterator[None]:
    """Bind the shim to this test's client and directory."""
    global _client, _root
    _client, _root = configure_client(yt), yt_root
    yield
    _client, _root = None, "//tmp"


def _p(text: str) -> str:
    """``//tmp/...`` in a path or query moved under the test's directory (``//tmp`` itself is the directory)."""
    if text == "//tmp":
        return _root
    return text.replace("//tmp/", _root + "/")


def authors(*_names: str):
    """``yt_commands.authors``: a no-op marker here."""
    return lambda f: f


def print_debug(*_args: Any) -> None:
    """``yt_commands.print_debug``: nothing to log here."""


def wait(predicate, timeout: float = 15.0, sleep_backoff: float = 0.05) -> None:
    """``yt_commands.wait``: poll until ``predicate()`` is truthy."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("wait timed out")
        time.sleep(sleep_backoff)


@contextlib.contextmanager
def raises_yt_error(code: str | int | None = None) -> Iterator[list[YtError]]:
    """``yt_commands.raises_yt_error``: a YT error whose text matches ``code`` (a regex) or has that code."""
    caught: list[YtError] = []
    try:
        yield caught
    except YtError as error:
        text = str(error).replace(_root + "/", "//tmp/")
        if isinstance(code, int):
            assert error.contains_code(code), text
        elif isinstance(code, str):
            assert re.search(code, text), f"{code!r} not in {text}"
        caught.append(error)
        return
    raise AssertionError("Expected exception to be raised")


def assert_items_equal(actual: list[Any], expected: list[Any]) -> None:
    """``yt.environment.helpers.assert_items_equal``: equal as multisets."""
    key = repr
    assert sorted(actual, key=key) == sorted(expected, key=key)


def sync_create_cells(_count: int) -> None:
    """One node, one implicit tablet cell."""


def ls(path: str) -> list[str]:
    return list(_client.list(_p(path)))


def get(path: str, **kwargs: Any) -> Any:
    return _client.get(_p(path), **kwargs)


def set(path: str, value: Any, **kwargs: Any) -> None:  # yt_commands.set
    _client.set(_p(path), value, **kwargs)


def remove(path: str, **kwargs: Any) -> None:
    _client.remove(_p(path), **kwargs)


def create_dynamic_table(path: str, schema: list[dict[str, Any]] | None = None, **attributes: Any) -> None:
    attributes.setdefault("dynamic", True)
    if schema is not None:
        attributes["schema"] = schema
    _client.create("table", _p(path), attributes=attributes)


def insert_rows(path: str, data: list[dict[str, Any]], **kwargs: Any) -> None:
    _client.insert_rows(_p(path), data, **kwargs)


def delete_rows(path: str, data: list[dict[str, Any]], **kwargs: Any) -> None:
    _client.delete_rows(_p(path), data, **kwargs)


def select_rows(query: str, **kwargs: Any) -> list[dict[str, Any]]:
    return list(_client.select_rows(_p(query), **kwargs))


def trim_rows(path: str, tablet_index: int, trimmed_row_count: int, **kwargs: Any) -> None:
    _client.trim_rows(_p(path), tablet_index, trimmed_row_count, **kwargs)


def generate_timestamp() -> int:
    return _client.generate_timestamp()


def _tablet_range(first_tablet_index: int | None, last_tablet_index: int | None) -> dict[str, int]:
    result = {}
    if first_tablet_index is not None:
        result["first_tablet_index"] = first_tablet_index
    if last_tablet_index is not None:
        result["last_tablet_index"] = last_tablet_index
    return result


def _wait_for_tablet_state(path: str, state: str, first: int | None = None, last: int | None = None) -> None:
    def done() -> bool:
        tablets = get(path + "/@tablets")
        lo = first or 0
        hi = len(tablets) - 1 if last is None else last
        return all(t["state"] == state for t in tablets[lo : hi + 1])

    wait(done)


def mount_table(path: str, **kwargs: Any) -> None:
    _client.mount_table(_p(path), **kwargs)


def sync_mount_table(path: str, freeze: bool = False, first_tablet_index=None, last_tablet_index=None) -> None:
    _client.mount_table(_p(path), freeze=freeze, **_tablet_range(first_tablet_index, last_tablet_index))
    _wait_for_tablet_state(path, "frozen" if freeze else "mounted", first_tablet_index, last_tablet_index)


def sync_unmount_table(path: str, force: bool | None = None, first_tablet_index=None, last_tablet_index=None) -> None:
    kwargs = _tablet_range(first_tablet_index, last_tablet_index)
    if force is not None:
        kwargs["force"] = force
    _client.unmount_table(_p(path), **kwargs)
    _wait_for_tablet_state(path, "unmounted", first_tablet_index, last_tablet_index)


def unmount_table(path: str, **kwargs: Any) -> None:
    _client.unmount_table(_p(path), **kwargs)


def freeze_table(path: str, **kwargs: Any) -> None:
    _client.freeze_table(_p(path), **kwargs)


def unfreeze_table(path: str, **kwargs: Any) -> None:
    _client.unfreeze_table(_p(path), **kwargs)


def sync_freeze_table(path: str) -> None:
    _client.freeze_table(_p(path))
    _wait_for_tablet_state(path, "frozen")


def sync_unfreeze_table(path: str) -> None:
    _client.unfreeze_table(_p(path))
    _wait_for_tablet_state(path, "mounted")


def sync_flush_table(path: str) -> None:
    sync_freeze_table(path)
    sync_unfreeze_table(path)


def remount_table(path: str) -> None:
    _client.remount_table(_p(path))


def reshard_table(path: str, arg: Any = None, **kwargs: Any) -> None:
    if isinstance(arg, int):
        kwargs["tablet_count"] = arg
    elif arg is not None:
        kwargs["pivot_keys"] = arg
    _client.reshard_table(_p(path), **kwargs)


def sync_reshard_table(path: str, *args: Any, **kwargs: Any) -> None:
    reshard_table(path, *args, **kwargs)
    _wait_for_tablet_state(path, "unmounted")


def write_table(path: str, value: list[dict[str, Any]], **kwargs: Any) -> None:
    _client.write_table(_p(path), value, **kwargs)


def read_table(path: str, **kwargs: Any) -> list[dict[str, Any]]:
    return list(_client.read_table(_p(path), **kwargs))


def alter_table(path: str, **kwargs: Any) -> None:
    _client.alter_table(_p(path), **kwargs)


def concatenate(source_paths: list[str], destination_path: str, **kwargs: Any) -> None:
    _client.concatenate([_p(p) for p in source_paths], _p(destination_path), **kwargs)


def copy(source_path: str, destination_path: str, **kwargs: Any) -> Any:
    return _client.copy(_p(source_path), _p(destination_path), **kwargs)


def unmap(text: str) -> str:
    """The test's directory shown as ``//tmp`` again (for comparing error messages)."""
    return text.replace(_root + "/", "//tmp/")


#: ``yt_commands.MinTimestamp`` (``MinTimestamp`` of ``yt/yt/client/transaction_client/public.h``).
MinTimestamp = 0x0000000000000001


def exists(path: str, **kwargs: Any) -> bool:
    return bool(_client.exists(_p(path), **kwargs))


def create(object_type: str, path: str, attributes: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    return _client.create(object_type, _p(path), attributes=attributes, **kwargs)


def make_schema(columns: list[dict[str, Any]], **attributes: Any) -> Any:
    """``yt_type_helpers.make_schema``: the column list carrying the schema's attributes (``strict``,
    ``unique_keys``)."""
    return yson.to_yson_type(list(columns), attributes=attributes)


def lookup_rows(path: str, data: list[dict[str, Any]], **kwargs: Any) -> list[Any]:
    return list(_client.lookup_rows(_p(path), data, **kwargs))
