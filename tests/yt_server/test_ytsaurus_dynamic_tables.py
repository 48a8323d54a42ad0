"""YTsaurus's ``yt/yt/tests/integration/dynamic_tables/test_dynamic_tables.py`` ported to run through ``yt.wrapper``
(read at commit 0008d04030bd245ddcc37fb36e3a0a1d545dfd55): the tests that apply to one node.

Ported (``DynamicTablesSingleCellBase``/``TestDynamicTablesSingleCell``): test_update_only_key_columns,
test_no_copy_mounted, test_validate_dynamic_attr, test_dynamic_table_schema_validation, test_mount_map_node_failure,
test_table_with_custom_cell_bundle_name_validation, test_disallowed_dynamic_table_alter (without ``schema_id``),
test_mounted_table_attributes_update_validation (without ``@account``), test_no_storage_change_for_mounted,
test_copy_static_table_with_dynamic_table_attributes, test_null_column_mount, test_tablet_count_by_state; from
``TestDynamicTablesMulticell`` test_convert_null_to_yson_entity (skipped: see its reason).

The rest of the file is about tablet cells, peers, bundles and areas, nodes and their decommissioning, snapshots,
ACLs and accounts, throttlers, chunks, orchids, profiling and mount configs (out of the server's claims: one node,
one implicit cell); ``spyt_queue/local/README.md`` lists every test with its status.
"""

from __future__ import annotations

import pytest
import yt.yson as yson
from dynamic_tables_shim import (  # noqa: F401 - _bind is the autouse fixture binding the shim to each test
    _bind,
    alter_table,
    authors,
    copy,
    create,
    create_dynamic_table,
    freeze_table,
    get,
    insert_rows,
    make_schema,
    mount_table,
    remount_table,
    reshard_table,
    select_rows,
    set,
    sync_create_cells,
    sync_mount_table,
    sync_reshard_table,
    sync_unmount_table,
    unfreeze_table,
    unmount_table,
)
from yt.common import YtError


class DynamicTablesSingleCellBase:
    def _create_sorted_table(self, path, **attributes):
        if "schema" not in attributes:
            attributes["schema"] = [
                {"name": "key", "type": "int64", "sort_order": "ascending"},
                {"name": "value", "type": "string"},
            ]
        create_dynamic_table(path, **attributes)

    def _create_ordered_table(self, path, **attributes):
        if "schema" not in attributes:
            attributes["schema"] = [{"name": "key", "type": "int64"}, {"name": "value", "type": "string"}]
        create_dynamic_table(path, **attributes)

    @authors("ifsmirnov")
    def test_update_only_key_columns(self):
        sync_create_cells(1)
        self._create_sorted_table("//tmp/t")
        sync_mount_table("//tmp/t")

        with pytest.raises(YtError):
            insert_rows("//tmp/t", [{"key": 1}], update=True)

        assert len(select_rows("* from [//tmp/t]")) == 0

        insert_rows("//tmp/t", [{"key": 1, "value": "x"}])
        with pytest.raises(YtError):
            insert_rows("//tmp/t", [{"key": 1}], update=True)

        assert len(select_rows("* from [//tmp/t]")) == 1

    @authors("babenko")
    def test_no_copy_mounted(self):
        sync_create_cells(1)
        self._create_sorted_table("//tmp/t1")
        sync_mount_table("//tmp/t1")

        with pytest.raises(YtError):
            copy("//tmp/t1", "//tmp/t2")

    @authors("babenko")
    def test_validate_dynamic_attr(self):
        create("table", "//tmp/t")
        assert not get("//tmp/t/@dynamic")
        with pytest.raises(YtError):
            mount_table("//tmp/t")
        with pytest.raises(YtError):
            unmount_table("//tmp/t")
        with pytest.raises(YtError):
            remount_table("//tmp/t")
        with pytest.raises(YtError):
            reshard_table("//tmp/t", [[]])

    @authors("babenko")
    def test_dynamic_table_schema_validation(self):
        with pytest.raises(YtError):
            create(
                "table",
                "//tmp/t",
                attributes={"dynamic": True, "schema": [{"data": "string"}]},
            )

    @authors("savrus")
    def test_mount_map_node_failure(self):
        sync_create_cells(1)
        with pytest.raises(YtError):
            mount_table("//tmp")
        with pytest.raises(YtError):
            unmount_table("//tmp")
        with pytest.raises(YtError):
            freeze_table("//tmp")
        with pytest.raises(YtError):
            unfreeze_table("//tmp")
        with pytest.raises(YtError):
            reshard_table("//tmp", [[]])

    @authors("babenko")
    def test_table_with_custom_cell_bundle_name_validation(self):
        with pytest.raises(YtError):
            create("table", "//tmp/t", attributes={"tablet_cell_bundle": "b"})

    @authors("savrus", "babenko", "h0pless")
    def test_disallowed_dynamic_table_alter(self):
        """Without its ``schema_id`` part (``@schema_id`` and ``alter_table(schema_id=...)``: schema objects are not
        modelled; ``schema_id`` is refused as not supported)."""
        sync_create_cells(1)
        sorted_schema = make_schema(
            [
                {"name": "key", "type": "string", "sort_order": "ascending"},
                {"name": "value", "type": "string"},
            ],
            unique_keys=True,
            strict=True,
        )
        ordered_schema = make_schema(
            [
                {"name": "key", "type": "string"},
                {"name": "value", "type": "string"},
            ],
            strict=True,
        )

        create("table", "//tmp/t1", attributes={"schema": ordered_schema, "dynamic": True})
        create("table", "//tmp/t2", attributes={"schema": sorted_schema, "dynamic": True})
        with pytest.raises(YtError, match="Cannot change dynamic table type from sorted to ordered or vice versa"):
            alter_table("//tmp/t1", schema=sorted_schema)
        with pytest.raises(YtError, match="Cannot change dynamic table type from sorted to ordered or vice versa"):
            alter_table("//tmp/t2", schema=ordered_schema)

        sync_mount_table("//tmp/t1")
        with pytest.raises(YtError, match="Cannot change table schema"):
            alter_table("//tmp/t1", schema=sorted_schema)

    @authors("savrus")
    def test_mounted_table_attributes_update_validation(self):
        """Without its ``@account`` part (``create_account``: accounts are not modelled)."""
        sync_create_cells(1)
        self._create_ordered_table("//tmp/t")
        mount_table("//tmp/t")

        with pytest.raises(YtError):
            set("//tmp/t/@atomicity", "none")
        with pytest.raises(YtError):
            set("//tmp/t/@commit_ordering", "weak")
        with pytest.raises(YtError):
            set("//tmp/t/@in_memory_mode", "compressed")

    @authors("ifsmirnov")
    def test_copy_static_table_with_dynamic_table_attributes(self):
        attributes = {
            "atomicity": "full",
            "commit_ordering": "weak",
            "in_memory_mode": "uncompressed",
            "enable_dynamic_store_read": True,
            "profiling_mode": "tag",
            "profiling_tag": "some_tag",
        }
        create("table", "//tmp/t", attributes=attributes)

        copy("//tmp/t", "//tmp/p")

        copy_attributes = get("//tmp/p/@")
        for k, v in list(attributes.items()):
            assert copy_attributes[k] == v

    @authors("babenko")
    def test_no_storage_change_for_mounted(self):
        sync_create_cells(1)
        self._create_sorted_table("//tmp/t")
        sync_mount_table("//tmp/t")
        with pytest.raises(YtError):
            set("//tmp/t/@vital", False)
        with pytest.raises(YtError):
            set("//tmp/t/@replication_factor", 2)
        with pytest.raises(YtError):
            set("//tmp/t/@media", {"default": {"replication_factor": 2}})

    @pytest.mark.skip(
        reason="an explicit null written to an `any` column is stored as null here, not as a YSON entity (YT-13469), "
        "so is_null() is true for it"
    )
    @authors("ermolovd")
    def test_convert_null_to_yson_entity(self):
        """From ``TestDynamicTablesMulticell`` (nothing in it needs several cells)."""
        # NB. For historical reasons nulls that are inserted in `any` columns are converted to yson entity objects.
        # Check YT-13469.
        sync_create_cells(1)
        schema = make_schema(
            [{"name": "key", "type": "string", "sort_order": "ascending"}, {"name": "value", "type": "any"}],
            unique_keys=True,
        )
        self._create_sorted_table("//tmp/t", schema=schema)
        sync_mount_table("//tmp/t")
        insert_rows("//tmp/t", [{"key": "foo", "value": None}])
        rows = select_rows("* from [//tmp/t] where is_null(value)")
        assert len(rows) == 0

        format = yson.YsonString(b"yson")
        format.attributes["enable_null_to_yson_entity_conversion"] = False
        insert_rows("//tmp/t", [{"key": "bar", "value": None}], input_format=format)
        rows = select_rows("* from [//tmp/t] where is_null(value)")
        assert rows == [{"key": "bar", "value": None}]

    @authors("alexelexa")
    def test_null_column_mount(self):
        sync_create_cells(1)
        schema = make_schema(
            [{"name": "key", "type": "string", "sort_order": "ascending"}, {"name": "value", "type_v3": "null"}],
            unique_keys=True,
        )
        self._create_sorted_table("//tmp/t", schema=schema)

        with pytest.raises(YtError, match='Cannot mount table since it has column "value" with value type "null"'):
            sync_mount_table("//tmp/t")

    @authors("savrus")
    def test_tablet_count_by_state(self):
        sync_create_cells(1)
        self._create_sorted_table("//tmp/t")

        def _verify(unmounted, frozen, mounted):
            count_by_state = get("//tmp/t/@tablet_count_by_state")
            assert count_by_state["unmounted"] == unmounted
            assert count_by_state["frozen"] == frozen
            assert count_by_state["mounted"] == mounted
            for state, count in list(count_by_state.items()):
                if state not in ["unmounted", "mounted", "frozen"]:
                    assert count == 0

        _verify(1, 0, 0)
        sync_reshard_table("//tmp/t", [[], [0], [1]])
        _verify(3, 0, 0)
        sync_mount_table("//tmp/t", first_tablet_index=1, last_tablet_index=1, freeze=True)
        _verify(2, 1, 0)
        sync_mount_table("//tmp/t", first_tablet_index=2, last_tablet_index=2)
        _verify(1, 1, 1)
        sync_unmount_table("//tmp/t")
        _verify(3, 0, 0)


class TestDynamicTablesSingleCell(DynamicTablesSingleCellBase):
    pass
