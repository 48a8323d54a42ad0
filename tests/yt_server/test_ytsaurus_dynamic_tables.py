"""YTsaurus's ``yt/yt/tests/integration/dynamic_tables/test_dynamic_tables.py``, the tablet-state parts, ported to
run through ``yt.wrapper`` (read at commit 0008d04030bd245ddcc37fb36e3a0a1d545dfd55).

Ported: ``DynamicTablesSingleCellBase::test_tablet_count_by_state``.

Not ported yet: the rest of the file. Most of it is about tablet cells, bundles, areas, peers, nodes and their
decommissioning, snapshots, ACLs and accounts (out of the server's claims: one node, one implicit cell); the
mount/freeze/reshard tests among it are still to be ported one by one (the conformance table of
``spyt_queue/local/README.md`` says so).
"""

from __future__ import annotations

from dynamic_tables_shim import (  # noqa: F401 - _bind is the autouse fixture binding the shim to each test
    _bind,
    authors,
    create_dynamic_table,
    get,
    sync_create_cells,
    sync_mount_table,
    sync_reshard_table,
    sync_unmount_table,
)


class DynamicTablesSingleCellBase:
    def _create_sorted_table(self, path, **attributes):
        if "schema" not in attributes:
            attributes["schema"] = [
                {"name": "key", "type": "int64", "sort_order": "ascending"},
                {"name": "value", "type": "string"},
            ]
        create_dynamic_table(path, **attributes)

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
