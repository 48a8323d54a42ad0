"""Conformance: Cypress basics as ``yt.wrapper`` uses them for queues.

Sources: ``yt/docs/en/_includes/user-guide/storage/cypress*.md``, ``queues.md`` ("Creating a consumer",
"Creating a producer"), ``yt/yt/tests/integration/queues/test_producer.py`` (``test_create_producer``),
``yt/yt/tests/integration/queues/test_api.py`` (``@type == "table"``, ``@treat_as_queue_consumer``),
``yt/python/yt/common.py`` (``is_resolve_error`` = 500, ``is_already_exists`` = 501).
"""

from __future__ import annotations

import pytest
from conformance import (
    ALREADY_EXISTS,
    CONSUMER_SCHEMA,
    PRODUCER_SCHEMA,
    QUEUE_SCHEMA_WITH_SYSTEM_COLUMNS,
    RESOLVE_ERROR,
    SORTED_SCHEMA,
    as_bool,
    create_consumer,
    create_producer,
    wait_tablet_state,
)
from yt.wrapper.errors import YtResponseError


def _columns(schema) -> list[tuple[str, str, str | None, bool]]:
    """(name, type, sort_order, required) of every column of a ``@schema`` value or a schema list."""
    return [(str(c["name"]), str(c["type"]), c.get("sort_order"), bool(c.get("required", False))) for c in schema]


def test_map_node_create_recursive_and_ignore_existing(yt, yt_root):
    """``create map_node`` with ``recursive`` builds intermediate nodes; ``ignore_existing`` tolerates a
    node of the same type; without it a second create fails with 501 (AlreadyExists)."""
    deep = f"{yt_root}/a/b/c"
    yt.create("map_node", deep, recursive=True)
    assert yt.exists(deep)
    assert yt.get(f"{yt_root}/a/@type") == "map_node"
    assert yt.get(f"{deep}/@type") == "map_node"

    yt.create("map_node", deep, ignore_existing=True)  # no error
    with pytest.raises(YtResponseError) as info:
        yt.create("map_node", deep)
    assert info.value.contains_code(ALREADY_EXISTS), info.value
    assert info.value.is_already_exists()


def test_create_without_recursive_under_missing_parent_is_resolve_error(yt, yt_root):
    """Creating under a missing parent without ``recursive`` is a resolve error (500)."""
    with pytest.raises(YtResponseError) as info:
        yt.create("map_node", f"{yt_root}/missing/child")
    assert info.value.contains_code(RESOLVE_ERROR), info.value


def test_get_missing_path_is_resolve_error(yt, yt_root):
    """``get`` of a missing node or attribute fails with 500 (ResolveError); ``exists`` is false."""
    missing = f"{yt_root}/no_such_node"
    assert as_bool(yt.exists(missing)) is False
    with pytest.raises(YtResponseError) as info:
        yt.get(missing)
    assert info.value.is_resolve_error(), info.value
    with pytest.raises(YtResponseError) as info:
        yt.get(f"{missing}/@type")
    assert info.value.is_resolve_error(), info.value
    with pytest.raises(YtResponseError) as info:
        yt.set(f"{missing}/child", 1)
    assert info.value.is_resolve_error(), info.value


def test_list_exists_and_user_attribute(yt, yt_root):
    """``list`` returns child names; ``exists`` sees nodes and attributes; a user attribute set with
    ``set path/@name`` reads back with the same (YSON) value."""
    yt.create("map_node", f"{yt_root}/x")
    yt.create("map_node", f"{yt_root}/y")
    assert sorted(str(name) for name in yt.list(yt_root)) == ["x", "y"]

    value = {"k": [1, 2, 3], "s": "text", "flag": True}
    yt.set(f"{yt_root}/x/@my_attribute", value)
    assert yt.exists(f"{yt_root}/x/@my_attribute")
    assert not yt.exists(f"{yt_root}/x/@other_attribute")
    assert yt.get(f"{yt_root}/x/@my_attribute") == value
    yt.set(f"{yt_root}/x/@my_attribute", 42)
    assert yt.get(f"{yt_root}/x/@my_attribute") == 42


def test_remove_recursive_and_force(yt, yt_root):
    """``remove`` of a non-empty map node needs ``recursive``; ``force`` tolerates a missing path;
    removing a missing path without ``force`` is a resolve error (500)."""
    yt.create("map_node", f"{yt_root}/dir/sub", recursive=True)
    with pytest.raises(YtResponseError):
        yt.remove(f"{yt_root}/dir")
    assert yt.exists(f"{yt_root}/dir/sub")

    yt.remove(f"{yt_root}/dir", recursive=True)
    assert not yt.exists(f"{yt_root}/dir")

    yt.remove(f"{yt_root}/dir", force=True)  # no error
    with pytest.raises(YtResponseError) as info:
        yt.remove(f"{yt_root}/dir")
    assert info.value.is_resolve_error(), info.value


def test_ordered_dynamic_table_attributes(yt, yt_root):
    """An ordered dynamic table created with ``dynamic``, ``schema`` and ``tablet_count``: ``@type`` is
    ``table``, ``@dynamic`` true, ``@schema`` has the columns as given (system columns included, no
    sort order), ``@tablet_count`` as requested, ``@tablet_state`` ``unmounted`` until mounted
    (ordered-dynamic-tables.md "Creating")."""
    path = f"{yt_root}/queue"
    yt.create(
        "table",
        path,
        attributes={"dynamic": True, "schema": QUEUE_SCHEMA_WITH_SYSTEM_COLUMNS, "tablet_count": 3},
    )
    assert yt.exists(path)
    assert yt.get(f"{path}/@type") == "table"
    assert as_bool(yt.get(f"{path}/@dynamic")) is True
    assert yt.get(f"{path}/@tablet_count") == 3
    assert yt.get(f"{path}/@tablet_state") == "unmounted"
    assert _columns(yt.get(f"{path}/@schema")) == _columns(QUEUE_SCHEMA_WITH_SYSTEM_COLUMNS)


def test_sorted_dynamic_table_schema(yt, yt_root):
    """``@schema`` of a sorted dynamic table keeps names, types, ``sort_order`` and ``required``."""
    path = f"{yt_root}/sorted"
    schema = [*SORTED_SCHEMA, {"name": "must", "type": "string", "required": True}]
    yt.create("table", path, attributes={"dynamic": True, "schema": schema})
    assert _columns(yt.get(f"{path}/@schema")) == _columns(schema)
    assert as_bool(yt.get(f"{path}/@dynamic")) is True


def test_static_table_is_not_dynamic(yt, yt_root):
    """A table created without ``dynamic`` is static: ``@dynamic`` is false."""
    path = f"{yt_root}/static"
    yt.create("table", path)
    assert yt.get(f"{path}/@type") == "table"
    assert as_bool(yt.get(f"{path}/@dynamic")) is False


def test_create_queue_consumer_object_type(yt, yt_root):
    """``create queue_consumer`` makes a sorted dynamic ``table`` with the consumer schema and
    ``@treat_as_queue_consumer`` set, mounted automatically (queues.md; test_api.py)."""
    path = create_consumer(yt, f"{yt_root}/consumer")
    assert yt.get(f"{path}/@type") == "table"
    assert as_bool(yt.get(f"{path}/@dynamic")) is True
    assert as_bool(yt.get(f"{path}/@treat_as_queue_consumer")) is True
    assert _columns(yt.get(f"{path}/@schema")) == _columns(CONSUMER_SCHEMA)


def test_create_queue_producer_object_type(yt, yt_root):
    """``create queue_producer`` makes a sorted dynamic ``table`` with the producer schema and
    ``@treat_as_queue_producer`` set, mounted automatically (queues.md; test_producer.py)."""
    path = create_producer(yt, f"{yt_root}/producer")
    assert yt.get(f"{path}/@type") == "table"
    assert as_bool(yt.get(f"{path}/@dynamic")) is True
    assert as_bool(yt.get(f"{path}/@treat_as_queue_producer")) is True
    assert _columns(yt.get(f"{path}/@schema")) == _columns(PRODUCER_SCHEMA)


def test_treat_as_queue_consumer_attribute_on_plain_table(yt, yt_root):
    """A sorted dynamic table with the consumer schema and ``treat_as_queue_consumer=%true`` given at
    creation is a consumer too (queues.md "Creating a consumer"); the attribute reads back."""
    path = f"{yt_root}/consumer_table"
    yt.create(
        "table",
        path,
        attributes={"dynamic": True, "schema": CONSUMER_SCHEMA, "treat_as_queue_consumer": True},
    )
    assert as_bool(yt.get(f"{path}/@treat_as_queue_consumer")) is True
    yt.mount_table(path, sync=True)
    wait_tablet_state(yt, path, "mounted")


def test_treat_as_queue_producer_attribute_on_plain_table(yt, yt_root):
    """A sorted dynamic table with the producer schema and ``treat_as_queue_producer=%true`` is a
    producer (queues.md "Creating a producer"); the attribute reads back."""
    path = f"{yt_root}/producer_table"
    yt.create(
        "table",
        path,
        attributes={"dynamic": True, "schema": PRODUCER_SCHEMA, "treat_as_queue_producer": True},
    )
    assert as_bool(yt.get(f"{path}/@treat_as_queue_producer")) is True


def test_create_table_twice_is_already_exists(yt, yt_root):
    """Creating a table over an existing one fails with 501; ``ignore_existing`` returns quietly."""
    path = f"{yt_root}/t"
    yt.create("table", path, attributes={"dynamic": True, "schema": SORTED_SCHEMA})
    with pytest.raises(YtResponseError) as info:
        yt.create("table", path, attributes={"dynamic": True, "schema": SORTED_SCHEMA})
    assert info.value.is_already_exists(), info.value
    yt.create("table", path, ignore_existing=True)
    assert as_bool(yt.get(f"{path}/@dynamic")) is True
