"""Conformance: ordered dynamic tables (queues): writing and the system columns.

Sources: ``yt/docs/en/_includes/user-guide/dynamic-tables/ordered-dynamic-tables.md`` ("Writing rows",
"Reading rows", "$timestamp column", "$cumulative_data_weight column"), ``queues.md`` ("Data model"),
``yt/yt/client/table_client/unversioned_row.cpp`` (``ValidateClientDataRow``,
``ValidateDuplicateAndRequiredValueColumns``: unknown columns, type mismatches and missing required
columns are rejected).
"""

from __future__ import annotations

import pytest
from conformance import (
    QUEUE_SCHEMA_WITH_SYSTEM_COLUMNS,
    create_queue,
    insert,
    pull,
    select,
    tablet_infos,
)
from yt.wrapper.errors import YtResponseError


def test_insert_with_tablet_index_lands_in_that_tablet(yt, yt_root):
    """Rows carrying ``$tablet_index`` are written strictly to that tablet, in order, and read back
    with ``$tablet_index`` and ``$row_index``."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=3)
    insert(yt, path, [{"$tablet_index": 1, "data": "a"}, {"$tablet_index": 2, "data": "b"}])
    insert(yt, path, [{"$tablet_index": 1, "data": "c"}])

    assert [(r["$tablet_index"], r["$row_index"], r["data"]) for r in pull(yt, path, 0, 1)] == [
        (1, 0, "a"),
        (1, 1, "c"),
    ]
    assert [(r["$tablet_index"], r["$row_index"], r["data"]) for r in pull(yt, path, 0, 2)] == [(2, 0, "b")]
    assert pull(yt, path, 0, 0) == []
    assert [info["total_row_count"] for info in tablet_infos(yt, path, 3)] == [0, 2, 1]


def test_insert_without_tablet_index_spreads_over_mounted_tablets(yt, yt_root):
    """Rows without ``$tablet_index`` go to some mounted tablet: every row lands exactly once and the
    per-tablet ``total_row_count`` values add up."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=4)
    expected = {f"r{i}" for i in range(40)}
    for i in range(0, 40, 4):
        insert(yt, path, [{"data": f"r{j}"} for j in range(i, i + 4)])

    rows = select(yt, f"* from [{path}]")
    assert sorted(r["data"] for r in rows) == sorted(expected)
    assert {r["$tablet_index"] for r in rows} <= {0, 1, 2, 3}
    counts = [info["total_row_count"] for info in tablet_infos(yt, path, 4)]
    assert sum(counts) == 40
    for tablet, count in enumerate(counts):
        assert sorted(r["$row_index"] for r in rows if r["$tablet_index"] == tablet) == list(range(count))


def test_tablet_index_out_of_range_is_rejected(yt, yt_root):
    """``$tablet_index`` must be in ``0..N-1`` (ordered-dynamic-tables.md "Writing rows")."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    with pytest.raises(YtResponseError):
        insert(yt, path, [{"$tablet_index": 2, "data": "x"}])
    with pytest.raises(YtResponseError):
        insert(yt, path, [{"$tablet_index": -1, "data": "x"}])
    assert select(yt, f"* from [{path}]") == []


def test_row_index_is_monotonic_per_tablet_from_zero(yt, yt_root):
    """``$row_index`` starts at 0 in every tablet and grows by one per row, across inserts."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    for batch in range(3):
        insert(yt, path, [{"$tablet_index": t, "data": f"{batch}-{t}-{i}"} for t in (0, 1) for i in range(2)])
    for tablet in (0, 1):
        rows = pull(yt, path, 0, tablet)
        assert [r["$row_index"] for r in rows] == list(range(6))
        assert [r["data"] for r in rows] == [f"{b}-{tablet}-{i}" for b in range(3) for i in range(2)]


def test_timestamp_column_is_commit_timestamp(yt, yt_root):
    """``$timestamp`` (uint64, in the schema) is filled by the system with the commit timestamp: equal for
    rows of one transaction, increasing across later commits."""
    path = create_queue(yt, f"{yt_root}/q", schema=QUEUE_SCHEMA_WITH_SYSTEM_COLUMNS)
    insert(yt, path, [{"data": "a"}, {"data": "b"}])
    insert(yt, path, [{"data": "c"}])
    insert(yt, path, [{"data": "d"}])
    rows = pull(yt, path, 0)
    stamps = [r["$timestamp"] for r in rows]
    assert all(isinstance(ts, int) and ts > 0 for ts in stamps), rows
    assert stamps[0] == stamps[1]
    assert stamps[1] < stamps[2] < stamps[3]


def test_cumulative_data_weight_column(yt, yt_root):
    """``$cumulative_data_weight`` (int64, in the schema) is the running total of logical row weight
    from row 0 through this row: positive, strictly increasing, and the increment grows with the
    payload (a string weighs its length in bytes)."""
    path = create_queue(yt, f"{yt_root}/q", schema=QUEUE_SCHEMA_WITH_SYSTEM_COLUMNS)
    insert(yt, path, [{"data": "a"}])
    insert(yt, path, [{"data": "a" * 10}])
    insert(yt, path, [{"data": "a"}])
    weights = [r["$cumulative_data_weight"] for r in pull(yt, path, 0)]
    assert weights[0] > 0
    assert weights[0] < weights[1] < weights[2]
    first, second, third = weights[0], weights[1] - weights[0], weights[2] - weights[1]
    assert first == third
    assert second - first == 9


def test_select_exposes_ordered_table_as_sorted_by_system_keys(yt, yt_root):
    """``select_rows`` sees an ordered table as keyed by (``$tablet_index``, ``$row_index``):
    ``where [$tablet_index] = N and [$row_index] between a and b`` (ordered-dynamic-tables.md)."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    insert(yt, path, [{"$tablet_index": t, "data": f"{t}:{i}"} for t in (0, 1) for i in range(10)])
    rows = select(yt, f"* from [{path}] where [$tablet_index] = 1 and [$row_index] between 3 and 5")
    assert [(r["$tablet_index"], r["$row_index"], r["data"]) for r in rows] == [
        (1, 3, "1:3"),
        (1, 4, "1:4"),
        (1, 5, "1:5"),
    ]


def test_unknown_column_is_rejected(yt, yt_root):
    """Dynamic tables are strictly schematic: a column not in the schema is rejected and nothing is
    written."""
    path = create_queue(yt, f"{yt_root}/q")
    with pytest.raises(YtResponseError):
        insert(yt, path, [{"data": "x", "no_such_column": 1}])
    assert pull(yt, path, 0) == []


def test_wrong_value_type_is_rejected(yt, yt_root):
    """A value whose type does not match the column type (an int64 into a string column, a string into
    an int64 column) is rejected."""
    schema = [{"name": "data", "type": "string"}, {"name": "n", "type": "int64"}]
    path = create_queue(yt, f"{yt_root}/q", schema=schema)
    with pytest.raises(YtResponseError):
        insert(yt, path, [{"data": 123}])
    with pytest.raises(YtResponseError):
        insert(yt, path, [{"data": "x", "n": "not a number"}])
    assert pull(yt, path, 0) == []


def test_missing_required_column_is_rejected(yt, yt_root):
    """A row without a ``required`` column (or with null in it) is rejected."""
    schema = [{"name": "data", "type": "string"}, {"name": "must", "type": "string", "required": True}]
    path = create_queue(yt, f"{yt_root}/q", schema=schema)
    with pytest.raises(YtResponseError):
        insert(yt, path, [{"data": "x"}])
    with pytest.raises(YtResponseError):
        insert(yt, path, [{"data": "x", "must": None}])
    insert(yt, path, [{"data": "x", "must": "y"}])
    assert [(r["data"], r["must"]) for r in pull(yt, path, 0)] == [("x", "y")]


def test_create_with_trimmed_row_counts(yt, yt_root):
    """``trimmed_row_counts`` (with a matching ``tablet_count``) sets the starting row index of each tablet
    at creation (ordered-dynamic-tables.md "Creating")."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2, trimmed_row_counts=[10, 20])
    insert(yt, path, [{"$tablet_index": 0, "data": "a"}, {"$tablet_index": 1, "data": "b"}])
    assert [(r["$row_index"], r["data"]) for r in pull(yt, path, 10, 0)] == [(10, "a")]
    assert [(r["$row_index"], r["data"]) for r in pull(yt, path, 0, 1)] == [(20, "b")]
    infos = tablet_infos(yt, path, 2)
    assert [(i["total_row_count"], i["trimmed_row_count"]) for i in infos] == [(11, 10), (21, 20)]


def test_insert_into_static_table_fails(yt, yt_root):
    """``insert_rows`` needs a dynamic table ("Table %v is not dynamic")."""
    path = f"{yt_root}/static"
    yt.create("table", path, attributes={"schema": [{"name": "data", "type": "string"}]})
    with pytest.raises(YtResponseError):
        insert(yt, path, [{"data": "x"}])


def test_alter_table_adds_a_column_to_an_unmounted_queue(yt, yt_root):
    """``alter_table(schema=...)`` of an unmounted ordered table adds a value column; rows written before read it
    as null, later rows carry it; while mounted the change fails (``Cannot change table schema ...``)."""
    path = f"{yt_root}/q"
    yt.create("table", path, attributes={"dynamic": True, "schema": [{"name": "data", "type": "string"}]})
    yt.mount_table(path, sync=True)
    yt.insert_rows(path, [{"data": "old"}])
    grown = [{"name": "data", "type": "string"}, {"name": "extra", "type": "int64"}]
    with pytest.raises(YtResponseError) as failure:
        yt.alter_table(path, schema=grown)
    assert "Cannot change table schema" in str(failure.value)
    yt.unmount_table(path, sync=True)
    yt.alter_table(path, schema=grown)
    yt.mount_table(path, sync=True)
    yt.insert_rows(path, [{"data": "new", "extra": 7}])
    rows = list(yt.pull_queue(path, offset=0, partition_index=0))
    assert [(r["data"], r["extra"]) for r in rows] == [("old", None), ("new", 7)]
