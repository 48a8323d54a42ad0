"""Conformance: sorted dynamic tables (consumers and producers are sorted tables) and ``select_rows``.

Sources: ``yt/docs/en/_includes/user-guide/dynamic-tables/sorted-dynamic-tables.md`` ("Inserting a row":
overwrite vs ``update``, "Deleting rows", "Reading rows": lookup is a point query, ``keep_missing_rows``
returns null for absent keys), ``dyn-query-language.md`` (``where``, ``order by`` with ``limit``),
``yt/python/yt/wrapper/dynamic_table_commands.py`` (``lookup_rows(..., keep_missing_rows=...)``).
"""

from __future__ import annotations

import pytest
from conformance import create_queue, create_sorted_table, insert, select
from yt.wrapper.errors import YtResponseError


@pytest.fixture
def table(yt, yt_root) -> str:
    """A sorted table with keys 1..5: ``value`` ``v<key>``, ``count`` ``key * 10``."""
    path = create_sorted_table(yt, f"{yt_root}/s")
    insert(yt, path, [{"key": k, "value": f"v{k}", "count": k * 10} for k in range(1, 6)])
    return path


def test_insert_is_upsert_overwriting_unspecified_columns(yt, table):
    """A second insert with the same key replaces the row; columns not given become null (overwrite mode)."""
    insert(yt, table, [{"key": 2, "value": "new"}])
    assert list(yt.lookup_rows(table, [{"key": 2}])) == [{"key": 2, "value": "new", "count": None}]
    assert len(select(yt, f"* from [{table}]")) == 5


def test_insert_with_update_keeps_other_columns(yt, table):
    """``update=True`` writes only the given columns and keeps the others."""
    insert(yt, table, [{"key": 3, "value": "changed"}], update=True)
    assert list(yt.lookup_rows(table, [{"key": 3}])) == [{"key": 3, "value": "changed", "count": 30}]
    insert(yt, table, [{"key": 3, "count": 31}], update=True)
    assert list(yt.lookup_rows(table, [{"key": 3}])) == [{"key": 3, "value": "changed", "count": 31}]


def test_insert_with_update_creates_missing_row(yt, table):
    """``update=True`` on a missing key creates the row with the other columns null."""
    insert(yt, table, [{"key": 9, "count": 90}], update=True)
    assert list(yt.lookup_rows(table, [{"key": 9}])) == [{"key": 9, "value": None, "count": 90}]


def test_insert_without_a_key_column_writes_a_null_key(yt, table, yt_root):
    """A key column a row leaves out is sent as null (``TBuildingValueConsumer::OnEndRow``): a nullable key column
    takes null, a required one fails with 307 ``Required column "key" cannot have "null" value``."""
    insert(yt, table, [{"value": "no key"}])
    assert list(yt.lookup_rows(table, [{"key": None}])) == [{"key": None, "value": "no key", "count": None}]
    required = create_sorted_table(
        yt,
        f"{yt_root}/r",
        schema=[
            {"name": "key", "type": "int64", "sort_order": "ascending", "required": True},
            {"name": "value", "type": "string"},
        ],
    )
    with pytest.raises(YtResponseError) as failure:
        insert(yt, required, [{"value": "no key"}])
    assert failure.value.contains_code(307)
    assert 'Required column "key" cannot have "null" value' in str(failure.value)


def test_delete_rows(yt, table):
    """``delete_rows`` removes the given keys; deleting a missing key changes nothing."""
    yt.delete_rows(table, [{"key": 1}, {"key": 4}, {"key": 42}])
    assert sorted(r["key"] for r in select(yt, f"key from [{table}]")) == [2, 3, 5]
    assert list(yt.lookup_rows(table, [{"key": 1}])) == []


def test_lookup_rows_omits_missing_keys(yt, table):
    """``lookup_rows`` returns the rows of existing keys, in request order, omitting missing keys."""
    rows = list(yt.lookup_rows(table, [{"key": 5}, {"key": 7}, {"key": 1}]))
    assert rows == [
        {"key": 5, "value": "v5", "count": 50},
        {"key": 1, "value": "v1", "count": 10},
    ]


def test_lookup_rows_keep_missing_rows(yt, table):
    """With ``keep_missing_rows=True`` a missing key yields a null in its position."""
    rows = list(yt.lookup_rows(table, [{"key": 5}, {"key": 7}, {"key": 1}], keep_missing_rows=True))
    assert rows == [{"key": 5, "value": "v5", "count": 50}, None, {"key": 1, "value": "v1", "count": 10}]


def test_lookup_rows_column_names(yt, table):
    """``column_names`` restricts the returned columns."""
    assert list(yt.lookup_rows(table, [{"key": 2}], column_names=["key", "count"])) == [{"key": 2, "count": 20}]


def test_select_where_on_key_column(yt, table):
    """``where`` on the key column (equality, ranges, ``in``)."""
    assert [r["value"] for r in select(yt, f"* from [{table}] where key = 3")] == ["v3"]
    assert sorted(r["key"] for r in select(yt, f"key from [{table}] where key >= 2 and key < 4")) == [2, 3]
    assert sorted(r["key"] for r in select(yt, f"key from [{table}] where key in (1, 5, 9)")) == [1, 5]
    assert sorted(r["key"] for r in select(yt, f"key from [{table}] where key between 4 and 10")) == [4, 5]


def test_select_where_on_non_key_columns(yt, table):
    """``where`` on value columns, including string equality and combined conditions."""
    assert [r["key"] for r in select(yt, f'key from [{table}] where value = "v4"')] == [4]
    rows = select(yt, f'key, value from [{table}] where count > 15 and value != "v5"')
    assert sorted((r["key"], r["value"]) for r in rows) == [(2, "v2"), (3, "v3"), (4, "v4")]


def test_select_projection_returns_only_requested_columns(yt, table):
    """A column list projects the result rows."""
    assert select(yt, f"value from [{table}] where key = 1") == [{"value": "v1"}]


def test_select_order_by_and_limit(yt, table):
    """``order by ... limit`` sorts and truncates the result (``desc`` supported)."""
    rows = select(yt, f"key, count from [{table}] order by count desc limit 2")
    assert [r["key"] for r in rows] == [5, 4]
    rows = select(yt, f"key from [{table}] where key > 1 order by key limit 3")
    assert [r["key"] for r in rows] == [2, 3, 4]


def test_select_limit_without_order(yt, table):
    """``limit`` alone caps the number of rows (which rows is unspecified without ``order by``)."""
    rows = select(yt, f"key from [{table}] limit 2")
    assert len(rows) == 2
    assert {r["key"] for r in rows} <= {1, 2, 3, 4, 5}


def test_select_ordered_table_row_range(yt, yt_root):
    """On an ordered table ``[$tablet_index] = N and [$row_index] between a and b`` selects a row range
    of one tablet (ordered-dynamic-tables.md "Reading rows")."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    insert(yt, path, [{"$tablet_index": t, "data": f"{t}:{i}"} for t in (0, 1) for i in range(6)])
    rows = select(yt, f"* from [{path}] where [$tablet_index] = 0 and [$row_index] between 2 and 4")
    assert [r["data"] for r in rows] == ["0:2", "0:3", "0:4"]
    rows = select(yt, f"[$row_index], data from [{path}] where [$tablet_index] = 1 and [$row_index] >= 4")
    assert [(r["$row_index"], r["data"]) for r in rows] == [(4, "1:4"), (5, "1:5")]


def test_select_unsupported_query_raises_on_local_server(yt, yt_root, local_yt):
    """LOCAL ONLY. The embedded server implements a subset of the query language; anything outside it
    must fail loudly with a ``YtResponseError`` rather than return wrong rows. (A real cluster supports
    these queries, hence the ``local_yt`` fixture.)"""
    left = create_sorted_table(yt, f"{yt_root}/left")
    right = create_sorted_table(yt, f"{yt_root}/right")
    insert(yt, left, [{"key": 1, "value": "a", "count": 1}])
    insert(yt, right, [{"key": 1, "value": "b", "count": 2}])
    with pytest.raises(YtResponseError):
        select(yt, f"* from [{left}] as l join [{right}] as r on l.key = r.key")
    with pytest.raises(YtResponseError):
        select(yt, f"frobnicate(value) as v, sum(count) as total from [{left}] group by frobnicate(value) as v")
    with pytest.raises(YtResponseError):
        select(yt, f"* from [{left}] where frobnicate(key) = 1")


def test_lookup_and_delete_need_a_sorted_table(yt, yt_root):
    """``lookup_rows`` and ``delete_rows`` are key operations: on an ordered table they fail
    ("Table %v is not sorted", table_mount_cache.cpp ``ValidateSorted``) and nothing is deleted."""
    queue = create_queue(yt, f"{yt_root}/q")
    insert(yt, queue, [{"data": "x"}])
    with pytest.raises(YtResponseError):
        list(yt.lookup_rows(queue, [{"data": "x"}]))
    with pytest.raises(YtResponseError):
        yt.delete_rows(queue, [{"data": "x"}])
    assert [r["data"] for r in select(yt, f"* from [{queue}]")] == ["x"]


def test_select_offset_needs_limit_not_order_by(yt, table):
    """``OFFSET`` without ``ORDER BY`` skips rows of the scan (key order on a sorted table); without ``LIMIT`` it
    fails with ``OFFSET used without LIMIT`` (``query_preparer.cpp``)."""
    assert [r["key"] for r in select(yt, f"key from [{table}] offset 2 limit 2")] == [3, 4]
    with pytest.raises(YtResponseError) as failure:
        select(yt, f"key from [{table}] offset 2")
    assert "OFFSET used without LIMIT" in str(failure.value)


def test_lock_groups_are_refused_on_local_server(yt, yt_root, local_yt):
    """LOCAL ONLY. A ``lock`` group in a schema gives a row one lock per group on a cluster (writes of different
    groups of one key do not conflict); this server keeps one lock per row, so it refuses such a schema instead of
    answering conflicts differently (a cluster accepts it, hence the ``local_yt`` fixture)."""
    schema = [
        {"name": "key", "type": "int64", "sort_order": "ascending"},
        {"name": "a", "type": "int64", "lock": "la"},
        {"name": "b", "type": "int64", "lock": "lb"},
    ]
    path = f"{yt_root}/locks"
    with pytest.raises(YtResponseError, match="not supported by ytqueue local"):
        yt.create("table", path, attributes={"dynamic": True, "schema": schema})
    assert not yt.exists(path)
    create_sorted_table(yt, path, mount=False)
    with pytest.raises(YtResponseError, match="not supported by ytqueue local"):
        yt.alter_table(path, schema=schema)
