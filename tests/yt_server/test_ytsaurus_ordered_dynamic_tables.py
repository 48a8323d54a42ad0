"""YTsaurus's own ordered-dynamic-table tests, ported to run through ``yt.wrapper``.

Source: ``yt/yt/tests/integration/dynamic_tables/test_ordered_dynamic_tables.py`` of ytsaurus/ytsaurus
(class ``TestOrderedDynamicTables``; read at commit 13d9311430e32d5a9fe93ab5212454dc6e29a8f9). Each test keeps its
name, calls, arguments, expected values and error patterns; the ``yt_commands`` functions it calls are the small
shim below over one ``yt.wrapper`` client, and ``//tmp/...`` paths are moved under the test's own directory (error
messages are matched with that directory shown as ``//tmp`` again). ``sync_create_cells`` is a no-op (one node,
one implicit cell) and ``sync_flush_table`` is freeze + unfreeze, as in ``yt_commands``.

Ported with one check left out (the rest of the test unchanged), because the check reads chunk-tree internals
that a single-node server without chunks does not have (``_verify_chunk_tree_statistics``,
``_get_table_row_count_from_chunk_list``, ``@chunk_count``, ``#<chunk_list_id>/@statistics``):
test_select_from_multi_store,
test_reshard_adds_tablets, test_reshard_joins_tablets, test_reshard_join_fails_on_trimmed_rows,
test_reshard_after_trim, test_cumulative_data_weight_column, test_create_with_trimmed_row_count,
test_reshard_with_trimmed_row_count, test_create_with_cumulative_data_weight,
test_reshard_with_cumulative_data_weight, test_stress_reshard_with_trimmed_row_count,
test_trimmed_rows_preserved_on_unmount; test_mount without the
``//sys/tablet_cells/<cell>/@tablet_ids`` check (tablet cells).

Static tables (``write_table``/``read_table``/``alter_table``/``concatenate``/``copy``) are ported as they are:
test_dynamic_to_static, test_static_to_dynamic, test_no_duplicate_chunks_in_dynamic, test_make_static_after_trim,
test_read_table (all parametrizations; its ``ignore_in_opensource_ci`` mark is YTsaurus CI's),
test_copy_trimmed_yt_7422.

Not ported (reason):

* chunk objects, chunk lists and dynamic stores (the server keeps rows per tablet and only a list of chunk ids):
  test_flush, test_select_from_single_tablet[False] (``@chunk_count`` after a flush), test_chunk_list_kind,
  test_trim_drops_chunks, test_trim_optimizes_chunk_list, test_snapshot_lock_after_reshard_after_trim,
  test_chunk_read_limit_after_chunk_list_cow, test_reshard_fully_trimmed, test_chunk_read_limit_after_trim,
  test_cumulative_statistics_after_cow, test_data_weight_attributes, test_reshard_trimmed_shared_yt_6948,
  test_forced_unmount_after_trim (rolls back rows of an unflushed dynamic store);
* tablet-node internals (profiling, orchid, snapshots and node restarts, in-memory preload, background trimming by
  TTL, ``max_ordered_tablet_data_weight``): test_ordered_tablet_node_profiling, test_tablet_snapshots,
  test_in_memory, test_data_ttl, test_row_count_to_keep, test_tablet_size_limit, test_large_tablet_size_limit;
* the multicell, portal, Sequoia and RPC-proxy variants of the class (several master cells, RPC proxy).
"""

# ruff: noqa: UP030, UP032, B007 - the ported tests keep YTsaurus's own code (str.format, unused loop variables)

from __future__ import annotations

import random
import time

import pytest
import yt.yson as yson
from dynamic_tables_shim import (  # noqa: F401 - _bind is the autouse fixture binding the shim to each test
    _bind,
    alter_table,
    assert_items_equal,
    authors,
    concatenate,
    copy,
    create_dynamic_table,
    delete_rows,
    generate_timestamp,
    get,
    insert_rows,
    ls,
    mount_table,
    print_debug,
    raises_yt_error,
    read_table,
    remount_table,
    remove,
    reshard_table,
    select_rows,
    set,
    sync_create_cells,
    sync_flush_table,
    sync_freeze_table,
    sync_mount_table,
    sync_reshard_table,
    sync_unfreeze_table,
    sync_unmount_table,
    trim_rows,
    unmap,
    wait,
    write_table,
)
from yt.wrapper.errors import YtError

# ----------------------------------------------------------------------------------------------------------------


class TestOrderedDynamicTablesBase:
    def _create_simple_table(self, path, **attributes):
        if "schema" not in attributes:
            attributes.update(
                {
                    "schema": [
                        {"name": "a", "type": "int64"},
                        {"name": "b", "type": "double"},
                        {"name": "c", "type": "string"},
                    ]
                }
            )
        create_dynamic_table(path, **attributes)

    def _verify_chunk_tree_statistics(self, table):
        """Chunk-tree statistics: not modelled (no chunks); see the module docstring."""


class TestOrderedDynamicTables(TestOrderedDynamicTablesBase):
    @authors("babenko")
    def test_mount(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")

        sync_mount_table("//tmp/t")
        tablets = get("//tmp/t/@tablets")
        assert len(tablets) == 1

        tablet = tablets[0]
        assert "pivot_key" not in tablet

    @authors("babenko", "levysotsky")
    def test_unmount(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")

        sync_mount_table("//tmp/t")

        tablets = get("//tmp/t/@tablets")
        assert len(tablets) == 1

        sync_mount_table("//tmp/t")
        sync_unmount_table("//tmp/t")

    @authors("savrus")
    def test_access_to_frozen(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")
        rows = [{"a": 1}]
        insert_rows("//tmp/t", rows)
        sync_freeze_table("//tmp/t")
        assert select_rows("a from [//tmp/t]") == rows
        with raises_yt_error(".* .* has no mounted tablets"):
            insert_rows("//tmp/t", rows)

    @authors("babenko", "levysotsky")
    def test_insert(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")

        rows = [{"a": i, "b": i * 0.5, "c": "payload" + str(i)} for i in range(0, 100)]
        insert_rows("//tmp/t", rows)

        sync_unmount_table("//tmp/t")
        sync_mount_table("//tmp/t")

    @authors("babenko")
    def test_insert_with_explicit_tablet_index(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_reshard_table("//tmp/t", 10)
        sync_mount_table("//tmp/t")

        for i in range(10):
            insert_rows("//tmp/t", [{"$tablet_index": i, "a": i}])

        for i in range(10):
            assert select_rows("a from [//tmp/t] where [$tablet_index] = " + str(i)) == [{"a": i}]

        # Check range inference YT-12099
        assert select_rows("a from [//tmp/t] where [$tablet_index] >= -1 limit 10") == [{"a": i} for i in range(10)]
        assert select_rows("a from [//tmp/t] where [$tablet_index] >= null limit 10") == [{"a": i} for i in range(10)]

    @authors("babenko")
    @pytest.mark.parametrize("dynamic", [True])
    def test_select_from_single_tablet(self, dynamic):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")

        write_rows = [{"a": i, "b": i * 0.5, "c": "payload" + str(i)} for i in range(100)]
        query_rows = [
            {
                "$tablet_index": 0,
                "$row_index": i,
                "a": i,
                "b": i * 0.5,
                "c": "payload" + str(i),
            }
            for i in range(100)
        ]
        insert_rows("//tmp/t", write_rows)

        assert select_rows("* from [//tmp/t]") == query_rows
        assert select_rows("[$row_index], a from [//tmp/t]") == [
            {"$row_index": row["$row_index"], "a": row["a"]} for row in query_rows
        ]
        assert select_rows("c, b from [//tmp/t]") == [{"b": i * 0.5, "c": "payload" + str(i)} for i in range(100)]
        assert select_rows("* from [//tmp/t] where [$row_index] between 10 and 20") == query_rows[10:21]
        assert select_rows("* from [//tmp/t] where [$tablet_index] in (-10, 20)") == []
        assert select_rows("a from [//tmp/t]") == [{"a": a} for a in range(100)]
        assert select_rows("a + 1 as aa from [//tmp/t] where a < 10") == [{"aa": a} for a in range(1, 11)]

    @authors("babenko")
    def test_select_from_dynamic_multi_tablet(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_reshard_table("//tmp/t", 10)
        sync_mount_table("//tmp/t")
        assert get("//tmp/t/@tablet_count") == 10

        for i in range(10):
            rows = [{"a": j} for j in range(100)]
            insert_rows("//tmp/t", rows)

        assert_items_equal(
            select_rows("a from [//tmp/t]"),
            [{"a": j} for i in range(10) for j in range(100)],
        )

    @authors("babenko")
    def test_select_from_multi_store(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")

        for k in range(5):
            write_rows = [{"a": i, "b": i * 0.5, "c": "payload" + str(i)} for i in range(100)]
            insert_rows("//tmp/t", write_rows)
            if k < 4:
                sync_unmount_table("//tmp/t")
                sync_mount_table("//tmp/t")

        query_rows = [{"$tablet_index": 0, "$row_index": i, "a": i % 100} for i in range(10, 490)]
        assert (
            select_rows("[$tablet_index], [$row_index], a from [//tmp/t] where [$row_index] between 10 and 489")
            == query_rows
        )

    @authors("babenko")
    def test_select_with_limits(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")

        write_rows = [{"a": i, "b": i * 0.5, "c": "payload" + str(i)} for i in range(100)]
        insert_rows("//tmp/t", write_rows)

        query_rows = [{"a": i} for i in range(100)]
        assert select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] >= 10") == query_rows[10:]
        assert select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] > 10") == query_rows[11:]
        assert select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] = 10") == query_rows[10:11]
        assert select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] < 10") == query_rows[:10]
        assert select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] <= 10") == query_rows[:11]
        assert (
            select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] >= 10 and [$row_index] < 20")
            == query_rows[10:20]
        )
        assert (
            select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] >= 10 and [$row_index] <= 20")
            == query_rows[10:21]
        )

    @authors("babenko")
    def test_dynamic_to_static(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")

        rows = [{"a": i, "b": i * 0.5, "c": "payload" + str(i)} for i in range(100)]
        insert_rows("//tmp/t", rows)

        sync_unmount_table("//tmp/t")
        alter_table("//tmp/t", dynamic=False)

        assert not get("//tmp/t/@dynamic")
        assert get("//tmp/t/@row_count") == 100
        assert read_table("//tmp/t") == rows

    @authors("babenko")
    def test_static_to_dynamic(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t", dynamic=False)

        for i in range(10):
            write_table("<append=true>//tmp/t", [{"a": j} for j in range(100)])

        read_table("//tmp/t")
        assert get("//tmp/t/@row_count") == 1000

        alter_table("//tmp/t", dynamic=True)
        assert get("//tmp/t/@dynamic")

        sync_mount_table("//tmp/t")
        assert select_rows("a from [//tmp/t]") == [{"a": i % 100} for i in range(1000)]

    @authors("savrus", "babenko")
    def test_no_duplicate_chunks_in_dynamic(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t", dynamic=False)

        write_table("//tmp/t", [{"a": 0}])
        concatenate(["//tmp/t", "//tmp/t"], "//tmp/t")
        alter_table("//tmp/t", dynamic=True)
        with raises_yt_error("Cannot mount"):
            mount_table("//tmp/t")

    @authors("babenko")
    def test_trim_failure(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")

        with raises_yt_error("Invalid tablet index for table .*"):
            trim_rows("//tmp/t", -1, 0)
        with raises_yt_error("Invalid tablet index for table"):
            trim_rows("//tmp/t", +1, 0)
        with raises_yt_error("Cannot trim tablet"):
            trim_rows("//tmp/t", 0, 100)

    @authors("babenko")
    def test_trim_noop(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")

        trim_rows("//tmp/t", 0, -10)
        wait(lambda: get("//tmp/t/@tablets/0/trimmed_row_count") == 0)

    @authors("babenko")
    def test_read_obeys_trim(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")

        insert_rows("//tmp/t", [{"a": i} for i in range(100)])
        trim_rows("//tmp/t", 0, 30)
        assert select_rows("a from [//tmp/t]") == [{"a": i} for i in range(30, 100)]

    @authors("babenko")
    def test_make_static_after_trim(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t", dynamic=False)

        write_table("<append=true>//tmp/t", [{"a": j} for j in range(0, 100)])
        write_table("<append=true>//tmp/t", [{"a": j * 10} for j in range(0, 100)])

        alter_table("//tmp/t", dynamic=True)
        sync_mount_table("//tmp/t")

        trim_rows("//tmp/t", 0, 110)
        time.sleep(0.2)

        sync_unmount_table("//tmp/t")
        alter_table("//tmp/t", dynamic=False)

        assert read_table("//tmp/t") == [{"a": j * 10, "b": None, "c": None} for j in range(0, 100)]

    @authors("babenko")
    def test_trimmed_rows_preserved_on_unmount(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t", dynamic=False)

        write_table("<append=true>//tmp/t", [{"a": j} for j in range(0, 100)])
        write_table("<append=true>//tmp/t", [{"a": j} for j in range(100, 300)])

        alter_table("//tmp/t", dynamic=True)
        sync_mount_table("//tmp/t")
        assert select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] between 110 and 120") == [
            {"a": j} for j in range(110, 121)
        ]

        trim_rows("//tmp/t", 0, 100)

        time.sleep(0.2)

        sync_unmount_table("//tmp/t")

        assert get("//tmp/t/@resource_usage/chunk_count") == 1
        # Left out: the row count of the table's root chunk list (`#<chunk_list_id>/@statistics/row_count` == 200).
        assert get("//tmp/t/@tablets/0/flushed_row_count") == 300
        assert get("//tmp/t/@tablets/0/trimmed_row_count") == 100

        sync_mount_table("//tmp/t")
        assert select_rows("a from [//tmp/t] where [$tablet_index] = 0 and [$row_index] between 110 and 120") == [
            {"a": j} for j in range(110, 121)
        ]

    @authors("babenko")
    def test_reshard_adds_tablets(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_reshard_table("//tmp/t", 5)
        sync_mount_table("//tmp/t")
        for i in range(5):
            insert_rows(
                "//tmp/t",
                [{"$tablet_index": i, "a": i}, {"$tablet_index": i, "a": i + 100}],
            )
            trim_rows("//tmp/t", i, 1)
        sync_unmount_table("//tmp/t")
        self._verify_chunk_tree_statistics("//tmp/t")
        sync_reshard_table("//tmp/t", 5, first_tablet_index=1, last_tablet_index=3)
        self._verify_chunk_tree_statistics("//tmp/t")
        sync_mount_table("//tmp/t")
        tablets = get("//tmp/t/@tablets")
        assert len(tablets) == 7
        for i in range(7):
            tablet = tablets[i]
            if i >= 4 and i <= 5:
                assert tablet["flushed_row_count"] == 0
                assert tablet["trimmed_row_count"] == 0
                assert select_rows("a from [//tmp/t] where [$tablet_index] = {0}".format(i)) == []
            else:
                assert tablet["flushed_row_count"] == 2
                assert tablet["trimmed_row_count"] == 1
                if i < 4:
                    j = i
                else:
                    j = i - 2
                assert select_rows("a from [//tmp/t] where [$tablet_index] = {0}".format(i)) == [{"a": j + 100}]
        self._verify_chunk_tree_statistics("//tmp/t")

    @authors("babenko")
    def test_reshard_joins_tablets(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_reshard_table("//tmp/t", 5)
        sync_mount_table("//tmp/t")
        for i in range(5):
            insert_rows(
                "//tmp/t",
                [{"$tablet_index": i, "a": i}, {"$tablet_index": i, "a": i + 100}],
            )
            if i < 2 or i > 3:
                trim_rows("//tmp/t", i, 1)
        sync_unmount_table("//tmp/t")
        self._verify_chunk_tree_statistics("//tmp/t")
        sync_reshard_table("//tmp/t", 2, first_tablet_index=1, last_tablet_index=3)
        self._verify_chunk_tree_statistics("//tmp/t")
        sync_mount_table("//tmp/t")
        tablets = get("//tmp/t/@tablets")
        assert len(tablets) == 4
        for i in range(4):
            tablet = tablets[i]
            print_debug(i, "->", tablet)
            if i == 2:
                assert tablet["flushed_row_count"] == 4
                assert tablet["trimmed_row_count"] == 0
                assert select_rows("a from [//tmp/t] where [$tablet_index] = {0}".format(i)) == [
                    {"a": 2},
                    {"a": 102},
                    {"a": 3},
                    {"a": 103},
                ]
            else:
                assert tablet["flushed_row_count"] == 2
                assert tablet["trimmed_row_count"] == 1
                if i < 3:
                    j = i
                else:
                    j = i + 1
                assert select_rows("a from [//tmp/t] where [$tablet_index] = {0}".format(i)) == [{"a": j + 100}]
        self._verify_chunk_tree_statistics("//tmp/t")

    @authors("babenko")
    def test_reshard_join_fails_on_trimmed_rows(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_reshard_table("//tmp/t", 2)
        sync_mount_table("//tmp/t")
        for i in range(2):
            insert_rows("//tmp/t", [{"$tablet_index": i, "a": i}])
            trim_rows("//tmp/t", i, 1)
        sync_unmount_table("//tmp/t")
        with raises_yt_error("Some chunks of tablet .* are not fully trimmed"):
            reshard_table("//tmp/t", 1)
        self._verify_chunk_tree_statistics("//tmp/t")

    @authors("savrus")
    def test_reshard_after_trim(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")
        insert_rows("//tmp/t", [{"a": 1}])
        sync_flush_table("//tmp/t")
        trim_rows("//tmp/t", 0, 1)
        sync_unmount_table("//tmp/t")

        def _verify(expected_flushed, expected_trimmed):
            tablet = get("//tmp/t/@tablets/0")
            assert tablet["flushed_row_count"] == expected_flushed
            assert tablet["trimmed_row_count"] == expected_trimmed

        _verify(1, 1)
        sync_reshard_table("//tmp/t", 1)
        self._verify_chunk_tree_statistics("//tmp/t")
        _verify(1, 1)
        sync_mount_table("//tmp/t")
        insert_rows("//tmp/t", [{"a": 1}])
        sync_unmount_table("//tmp/t")
        _verify(2, 1)
        self._verify_chunk_tree_statistics("//tmp/t")

    @authors("babenko", "levysotsky")
    def test_freeze_empty(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")
        sync_freeze_table("//tmp/t")
        with raises_yt_error(".* .* has no mounted tablets"):
            insert_rows("//tmp/t", [{"a": 0}])
        sync_unfreeze_table("//tmp/t")
        sync_unmount_table("//tmp/t")

    @authors("babenko")
    def test_change_commit_ordering(self):
        self._create_simple_table("//tmp/t")
        set("//tmp/t/@commit_ordering", "weak")
        set("//tmp/t/@commit_ordering", "strong")
        with raises_yt_error("Error parsing .* value"):
            set("//tmp/t/@commit_ordering", "cool")

    @authors("babenko", "levysotsky")
    def test_no_commit_ordering_change_for_mounted(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")
        with raises_yt_error("Cannot change table commit ordering mode since not all tablets are unmounted"):
            set("//tmp/t/@commit_ordering", "strong")

    @authors("babenko")
    def test_set_commit_ordering_upon_construction(self):
        self._create_simple_table("//tmp/t", commit_ordering="strong")
        assert get("//tmp/t/@commit_ordering") == "strong"

    @authors("babenko")
    def test_set_tablet_count_upon_construction_fail(self):
        with raises_yt_error("Tablet count must be positive"):
            self._create_simple_table("//tmp/t", tablet_count=0)
        with raises_yt_error("Tablet count must be positive"):
            self._create_simple_table("//tmp/t", tablet_count=-1)
        with raises_yt_error("Table is ordered; must provide tablet count"):
            self._create_simple_table("//tmp/t", pivot_keys=[[]])

    @authors("babenko")
    def test_set_tablet_count_upon_construction_success(self):
        self._create_simple_table("//tmp/t", tablet_count=10)
        assert get("//tmp/t/@tablet_count") == 10

    @authors("savrus")
    @pytest.mark.parametrize("erasure_codec", ["none", "reed_solomon_6_3", "lrc_12_2_2"])
    @pytest.mark.parametrize("optimize_for", ["scan", "lookup"])
    def test_read_table(self, optimize_for, erasure_codec):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t", optimize_for=optimize_for, erasure_codec=erasure_codec)
        sync_mount_table("//tmp/t")

        rows = [{"a": i, "b": i * 0.5, "c": "payload" + str(i)} for i in range(0, 100)]
        insert_rows("//tmp/t", rows)

        sync_unmount_table("//tmp/t")
        sync_mount_table("//tmp/t")

        actual = read_table("//tmp/t")
        assert actual == rows

    @authors("savrus", "levysotsky")
    def test_copy_trimmed_yt_7422(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")
        insert_rows("//tmp/t", [{"a": 0}])
        sync_flush_table("//tmp/t")
        trim_rows("//tmp/t", 0, 1)
        sync_freeze_table("//tmp/t")
        copy("//tmp/t", "//tmp/t2")
        sync_unfreeze_table("//tmp/t")
        insert_rows("//tmp/t", [{"a": 1}])
        sync_freeze_table("//tmp/t")
        assert get("//tmp/t/@tablets/0/flushed_row_count") == 2

    @authors("babenko")
    def test_timestamp_column(self):
        sync_create_cells(1)
        create_dynamic_table(
            "//tmp/t",
            schema=[
                {"name": "a", "type": "string"},
                {"name": "$timestamp", "type": "uint64"},
            ],
        )
        sync_mount_table("//tmp/t")

        timestamp0 = generate_timestamp()
        insert_rows("//tmp/t", [{"a": "hello"}])
        insert_rows("//tmp/t", [{"a": "world"}])
        timestamp3 = generate_timestamp()

        timestamp1 = select_rows("[$timestamp] from [//tmp/t] where [$row_index] = 0")[0]["$timestamp"]
        timestamp2 = select_rows("[$timestamp] from [//tmp/t] where [$row_index] = 1")[0]["$timestamp"]

        assert timestamp0 < timestamp1
        assert timestamp1 < timestamp2
        assert timestamp2 < timestamp3

    @staticmethod
    def _expect_cumulative_data_weights(table, weights):
        rows = select_rows("[$cumulative_data_weight] from [{}]".format(table))
        assert len(rows) == len(weights)
        cumulative_data_weights = []
        for row in rows:
            cumulative_data_weights.append(row["$cumulative_data_weight"])
        assert cumulative_data_weights == weights

    @authors("achulkov2")
    def test_cumulative_data_weight_column(self):
        sync_create_cells(1)
        create_dynamic_table(
            "//tmp/t",
            schema=[
                {"name": "test", "type": "string"},
                {"name": "$cumulative_data_weight", "type": "int64"},
            ],
        )
        sync_mount_table("//tmp/t")

        insert_rows("//tmp/t", [{"test": "aaa"}])
        insert_rows("//tmp/t", [{"test": "bb"}])

        self._expect_cumulative_data_weights("//tmp/t", [12, 23])

        sync_flush_table("//tmp/t")

        for size in range(1, 6):
            insert_rows("//tmp/t", [{"test": "c" * size}])
            sync_flush_table("//tmp/t")

        self._expect_cumulative_data_weights("//tmp/t", [12, 23, 33, 44, 56, 69, 83])

        trim_rows("//tmp/t", 0, 4)
        self._expect_cumulative_data_weights("//tmp/t", [56, 69, 83])

        insert_rows("//tmp/t", [{"test": "eeee"}])
        insert_rows("//tmp/t", [{"test": "f"}])

        self._expect_cumulative_data_weights("//tmp/t", [56, 69, 83, 96, 106])

        sync_unmount_table("//tmp/t")
        sync_mount_table("//tmp/t")

        insert_rows("//tmp/t", [{"test": "ggg"}])
        insert_rows("//tmp/t", [{"test": "hhhh"}])

        self._expect_cumulative_data_weights("//tmp/t", [56, 69, 83, 96, 106, 118, 131])

    @authors("achulkov2")
    def test_cumulative_data_weight_includes_timestamp(self):
        sync_create_cells(1)
        create_dynamic_table(
            "//tmp/t",
            schema=[
                {"name": "test", "type": "string"},
                {"name": "$cumulative_data_weight", "type": "int64"},
                {"name": "$timestamp", "type": "uint64"},
            ],
        )
        sync_mount_table("//tmp/t")

        insert_rows("//tmp/t", [{"test": "hey you"}])
        insert_rows("//tmp/t", [{"test": "hello world!"}])

        self._expect_cumulative_data_weights("//tmp/t", [24, 24 + 29])

        sync_unmount_table("//tmp/t")
        sync_mount_table("//tmp/t")

        insert_rows("//tmp/t", [{"test": "a"}])
        insert_rows("//tmp/t", [{"test": "bb"}])

        self._expect_cumulative_data_weights("//tmp/t", [24, 24 + 29, 24 + 29 + 18, 24 + 29 + 18 + 19])

    @authors("ifsmirnov")
    def test_required_columns(self):
        schema = [
            {"name": "a", "type": "int64", "required": True},
            {"name": "b", "type": "int64"},
        ]

        sync_create_cells(1)
        self._create_simple_table("//tmp/t", schema=schema)
        sync_mount_table("//tmp/t")

        with raises_yt_error("Required column .* cannot have .* value"):
            insert_rows("//tmp/t", [dict()])
        with raises_yt_error("Required column .* cannot have .* value"):
            insert_rows("//tmp/t", [dict(b=1)])

        insert_rows("//tmp/t", [dict(a=1)])
        insert_rows("//tmp/t", [dict(a=1, b=1)])

    @authors("ifsmirnov")
    def test_required_computed_column_fails(self):
        schema = [
            {"name": "key", "type": "int64"},
            {
                "name": "computed",
                "type": "int64",
                "expression": "key * 10",
                "required": True,
            },
            {"name": "value", "type": "string"},
        ]

        sync_create_cells(1)
        with raises_yt_error("New table schema is not valid"):
            self._create_simple_table("//tmp/t", schema=schema)

    @authors("ifsmirnov")
    def test_required_aggregate_columns(self):
        schema = [
            {"name": "key", "type": "int64"},
            {"name": "value", "type": "int64", "aggregate": "sum", "required": True},
        ]

        sync_create_cells(1)
        self._create_simple_table("//tmp/t", schema=schema)
        sync_mount_table("//tmp/t")

        with raises_yt_error("Required column .* cannot have .* value"):
            insert_rows("//tmp/t", [dict(key=1)])
        insert_rows("//tmp/t", [dict(key=1, value=2)])
        with raises_yt_error("Required column .* cannot have .* value"):
            insert_rows("//tmp/t", [dict(key=1)])

    @authors("akozhikhov")
    def test_delete_rows_error(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_mount_table("//tmp/t")
        try:
            delete_rows("//tmp/t", [{"key": 0}])
        except YtError as err:
            if "Table //tmp/t is not sorted" != unmap(err.inner_errors[0]["message"]):
                raise

    @authors("ifsmirnov")
    def test_create_with_trimmed_row_count(self):
        sync_create_cells(1)

        with raises_yt_error():
            self._create_simple_table("//tmp/t", trimmed_row_counts=[1])
        with raises_yt_error():
            self._create_simple_table("//tmp/t", trimmed_row_counts=[1, 2], tablet_count=4)

        self._create_simple_table("//tmp/t", trimmed_row_counts=[10, 20], tablet_count=2)
        tablets = get("//tmp/t/@tablets")
        assert tablets[0]["flushed_row_count"] == 10
        assert tablets[0]["flushed_row_count"] == 10
        assert tablets[1]["trimmed_row_count"] == 20
        assert tablets[1]["trimmed_row_count"] == 20
        self._verify_chunk_tree_statistics("//tmp/t")

        sync_mount_table("//tmp/t")
        insert_rows("//tmp/t", [{"a": 10, "$tablet_index": 0}, {"a": 20, "$tablet_index": 1}])
        assert_items_equal(
            select_rows("[$row_index], a from [//tmp/t]"),
            [{"a": 10, "$row_index": 10}, {"a": 20, "$row_index": 20}],
        )

        sync_unmount_table("//tmp/t")
        self._verify_chunk_tree_statistics("//tmp/t")

    @authors("ifsmirnov")
    def test_reshard_with_trimmed_row_count(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t")
        sync_reshard_table("//tmp/t", 5)
        sync_mount_table("//tmp/t")
        for i in range(5):
            insert_rows(
                "//tmp/t",
                [{"$tablet_index": i, "a": i}, {"$tablet_index": i, "a": i + 100}],
            )
            trim_rows("//tmp/t", i, 1)
        sync_unmount_table("//tmp/t")

        with raises_yt_error():
            sync_reshard_table("//tmp/t", 5, trimmed_row_counts=[1])
        with raises_yt_error():
            sync_reshard_table("//tmp/t", 3, first_tablet_index=0, last_tablet_index=2, trimmed_row_counts=[1, 2, 3])
        with raises_yt_error():
            sync_reshard_table("//tmp/t", 3, first_tablet_index=0, last_tablet_index=0, trimmed_row_counts=[1, 2, 3])

        sync_reshard_table("//tmp/t", 5, first_tablet_index=1, last_tablet_index=3, trimmed_row_counts=[8, 9])

        tablets = get("//tmp/t/@tablets")
        assert [t["flushed_row_count"] for t in tablets] == [2, 2, 2, 2, 8, 9, 2]
        assert [t["trimmed_row_count"] for t in tablets] == [1, 1, 1, 1, 8, 9, 1]

        self._verify_chunk_tree_statistics("//tmp/t")

    CUMULATIVE_DATA_WEIGHT_SCHEMA = [
        {"name": "test", "type": "string"},
        {"name": "$cumulative_data_weight", "type": "int64"},
    ]

    @staticmethod
    def _get_tablet_cumulative_data_weights(table, tablet_count):
        result = []
        for tablet_index in range(tablet_count):
            rows = select_rows(
                "[$cumulative_data_weight] from [{}] where [$tablet_index] = {}".format(table, tablet_index)
            )
            result.append(rows[-1]["$cumulative_data_weight"] if rows else None)
        return result

    @authors("akozhikhov")
    def test_create_with_cumulative_data_weight(self):
        sync_create_cells(1)

        with raises_yt_error("cannot be specified without"):
            self._create_simple_table("//tmp/t", schema=self.CUMULATIVE_DATA_WEIGHT_SCHEMA, cumulative_data_weights=[1])
        with raises_yt_error("has invalid size"):
            self._create_simple_table(
                "//tmp/t", schema=self.CUMULATIVE_DATA_WEIGHT_SCHEMA, cumulative_data_weights=[1, 2], tablet_count=4
            )
        with raises_yt_error("must be nonnegative"):
            self._create_simple_table(
                "//tmp/t", schema=self.CUMULATIVE_DATA_WEIGHT_SCHEMA, cumulative_data_weights=[-1], tablet_count=1
            )
        with raises_yt_error("can only be set for ordered tables"):
            create_dynamic_table(
                "//tmp/t",
                schema=[
                    {"name": "k", "type": "int64", "sort_order": "ascending"},
                    {"name": "v", "type": "string"},
                ],
                cumulative_data_weights=[1],
                tablet_count=1,
            )

        self._create_simple_table(
            "//tmp/t",
            schema=self.CUMULATIVE_DATA_WEIGHT_SCHEMA,
            tablet_count=3,
            cumulative_data_weights=[1000, 2000, 0],
        )
        self._verify_chunk_tree_statistics("//tmp/t")

        sync_mount_table("//tmp/t")

        for tablet_index in range(3):
            insert_rows("//tmp/t", [{"$tablet_index": tablet_index, "test": "aaa"}])

        # A row of this schema with a three-character value weighs 12 bytes.
        assert self._get_tablet_cumulative_data_weights("//tmp/t", 3) == [1012, 2012, 12]

        # The offset must survive flush and remount.
        sync_flush_table("//tmp/t")
        self._verify_chunk_tree_statistics("//tmp/t")
        sync_unmount_table("//tmp/t")
        sync_mount_table("//tmp/t")

        for tablet_index in range(3):
            insert_rows("//tmp/t", [{"$tablet_index": tablet_index, "test": "bb"}])

        assert self._get_tablet_cumulative_data_weights("//tmp/t", 3) == [1023, 2023, 23]

        sync_unmount_table("//tmp/t")
        self._verify_chunk_tree_statistics("//tmp/t")

    @authors("akozhikhov")
    def test_reshard_with_cumulative_data_weight(self):
        sync_create_cells(1)
        self._create_simple_table("//tmp/t", schema=self.CUMULATIVE_DATA_WEIGHT_SCHEMA)
        sync_mount_table("//tmp/t")
        insert_rows("//tmp/t", [{"test": "aaa"}])
        sync_unmount_table("//tmp/t")

        with raises_yt_error("has invalid size"):
            sync_reshard_table("//tmp/t", 1, cumulative_data_weights=[1])
        with raises_yt_error("has invalid size"):
            sync_reshard_table("//tmp/t", 3, cumulative_data_weights=[1])
        with raises_yt_error("must be nonnegative"):
            sync_reshard_table("//tmp/t", 3, cumulative_data_weights=[-1, 5])

        sync_reshard_table("//tmp/t", 3, cumulative_data_weights=[1000, 2000])
        self._verify_chunk_tree_statistics("//tmp/t")

        sync_mount_table("//tmp/t")
        for tablet_index in range(3):
            insert_rows("//tmp/t", [{"$tablet_index": tablet_index, "test": "aaa"}])

        # The zeroth tablet is preserved by the reshard and already holds a row of weight 12.
        assert self._get_tablet_cumulative_data_weights("//tmp/t", 3) == [24, 1012, 2012]

        sync_unmount_table("//tmp/t")
        self._verify_chunk_tree_statistics("//tmp/t")

    @authors("ifsmirnov")
    def test_stress_reshard_with_trimmed_row_count(self):
        sync_create_cells(1)

        trimmed_row_counts = [1, 2, 3, 4, 5]
        self._create_simple_table("//tmp/t", tablet_count=5, trimmed_row_counts=trimmed_row_counts)
        rnd = random.Random(131827381923)
        for i in range(20):
            first = rnd.randint(0, len(trimmed_row_counts) - 1)
            last = rnd.randint(0, len(trimmed_row_counts) - 1)
            if first > last:
                first, last = last, first
            old_count = last - first + 1
            new_count = rnd.randint(1, 5)
            created_tablet_count = max(0, new_count - old_count)
            if rnd.randint(0, 1) == 0:
                new_trimmed_row_counts = [rnd.randint(0, 10) for j in range(created_tablet_count)]
            else:
                new_trimmed_row_counts = []
            sync_reshard_table(
                "//tmp/t",
                new_count,
                first_tablet_index=first,
                last_tablet_index=last,
                trimmed_row_counts=new_trimmed_row_counts,
            )

            if new_count > old_count:
                trimmed_row_counts[last + 1 : last + 1] = new_trimmed_row_counts or [0] * created_tablet_count
            else:
                del trimmed_row_counts[first + new_count : first + old_count]

            self._verify_chunk_tree_statistics("//tmp/t")
            assert [t["trimmed_row_count"] for t in get("//tmp/t/@tablets")] == trimmed_row_counts


# ``yson`` is imported by the original module (``yson.YsonEntity`` in test_forced_unmount_after_trim).
_ = yson
