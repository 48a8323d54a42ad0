"""Conformance: tablet lifecycle (mount, unmount, freeze, unfreeze, remount, reshard).

Sources: ``yt/python/yt/wrapper/dynamic_table_commands.py`` (``sync=True`` polls ``@tablet_state``),
``yt/yt/client/tablet_client/public.h`` (ETabletState names; 1702 TabletNotMounted),
``yt/yt/client/tablet_client/table_mount_cache.cpp`` ("Table %v has no mounted tablets", 1702),
``yt/yt/ytlib/api/native/tablet_helpers.cpp`` (``ValidateTabletMounted``: writes need a mounted tablet,
1702; ``ValidateTabletMountedOrFrozen``: reads are allowed from frozen tablets),
``ordered-dynamic-tables.md`` ("Resharding": growing keeps existing tablets, new tablets are empty).
"""

from __future__ import annotations

import pytest
from conformance import (
    TABLET_NOT_MOUNTED,
    create_queue,
    create_sorted_table,
    insert,
    pull,
    select,
    tablet_infos,
    wait_tablet_state,
    wait_until,
)
from yt.wrapper.errors import YtResponseError


@pytest.mark.parametrize("kind", ["ordered", "sorted"])
def test_tablet_state_transitions(yt, yt_root, kind):
    """``mount``/``freeze``/``unfreeze``/``remount``/``unmount`` with ``sync=True`` leave ``@tablet_state``
    at ``mounted``/``frozen``/``mounted``/``mounted``/``unmounted``; a new table is ``unmounted``."""
    path = f"{yt_root}/t"
    if kind == "ordered":
        create_queue(yt, path, tablet_count=2, mount=False)
    else:
        create_sorted_table(yt, path, mount=False)
    assert yt.get(f"{path}/@tablet_state") == "unmounted"

    yt.mount_table(path, sync=True)
    assert yt.get(f"{path}/@tablet_state") == "mounted"

    yt.freeze_table(path, sync=True)
    assert yt.get(f"{path}/@tablet_state") == "frozen"

    yt.unfreeze_table(path, sync=True)
    assert yt.get(f"{path}/@tablet_state") == "mounted"

    yt.remount_table(path)
    wait_tablet_state(yt, path, "mounted")

    yt.unmount_table(path, sync=True)
    assert yt.get(f"{path}/@tablet_state") == "unmounted"


def test_mount_table_with_freeze_flag(yt, yt_root):
    """``mount_table(freeze=True, sync=True)`` mounts straight into ``frozen``."""
    path = create_queue(yt, f"{yt_root}/q", mount=False)
    yt.mount_table(path, freeze=True, sync=True)
    assert yt.get(f"{path}/@tablet_state") == "frozen"


def test_insert_into_unmounted_ordered_table_fails_1702(yt, yt_root):
    """Writing to an ordered table with no mounted tablets fails with 1702 (TabletNotMounted,
    "Table %v has no mounted tablets")."""
    path = create_queue(yt, f"{yt_root}/q", mount=False)
    with pytest.raises(YtResponseError) as info:
        insert(yt, path, [{"data": "x"}])
    assert info.value.contains_code(TABLET_NOT_MOUNTED), info.value


def test_insert_into_unmounted_ordered_tablet_by_index_fails_1702(yt, yt_root):
    """Writing to an explicit ``$tablet_index`` of an unmounted table fails with 1702 as well."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2, mount=False)
    with pytest.raises(YtResponseError) as info:
        insert(yt, path, [{"$tablet_index": 1, "data": "x"}])
    assert info.value.contains_code(TABLET_NOT_MOUNTED), info.value


def test_insert_into_unmounted_sorted_table_fails_1702(yt, yt_root):
    """Writing to an unmounted sorted table fails with 1702 (``ValidateTabletMounted``)."""
    path = create_sorted_table(yt, f"{yt_root}/s", mount=False)
    with pytest.raises(YtResponseError) as info:
        insert(yt, path, [{"key": 1, "value": "x"}])
    assert info.value.contains_code(TABLET_NOT_MOUNTED), info.value


def test_frozen_table_rejects_writes_but_serves_reads(yt, yt_root):
    """A frozen tablet rejects writes with 1702 but still serves reads (``ValidateTabletMountedOrFrozen``)."""
    path = create_sorted_table(yt, f"{yt_root}/s")
    insert(yt, path, [{"key": 1, "value": "a"}])
    yt.freeze_table(path, sync=True)
    with pytest.raises(YtResponseError) as info:
        insert(yt, path, [{"key": 2, "value": "b"}])
    assert info.value.contains_code(TABLET_NOT_MOUNTED), info.value
    assert [r["value"] for r in yt.lookup_rows(path, [{"key": 1}])] == ["a"]
    yt.unfreeze_table(path, sync=True)
    insert(yt, path, [{"key": 2, "value": "b"}])
    assert sorted(r["key"] for r in select(yt, f"key from [{path}]")) == [1, 2]


def test_data_survives_unmount_and_mount(yt, yt_root):
    """Rows and ``$row_index`` numbering survive unmount + mount (ordered-dynamic-tables.md "Trim":
    "When a tablet is unmounted and then re-mounted ... the numbering is unchanged")."""
    path = create_queue(yt, f"{yt_root}/q")
    insert(yt, path, [{"data": f"r{i}"} for i in range(5)])
    yt.unmount_table(path, sync=True)
    yt.mount_table(path, sync=True)
    rows = pull(yt, path, offset=0)
    assert [(r["$row_index"], r["data"]) for r in rows] == [(i, f"r{i}") for i in range(5)]
    insert(yt, path, [{"data": "r5"}])
    assert pull(yt, path, offset=5)[0]["$row_index"] == 5


def test_reshard_ordered_table_grows_tablets(yt, yt_root):
    """``reshard_table(tablet_count=N)`` on an unmounted ordered table: ``@tablet_count`` becomes N, the
    existing tablet keeps its rows and indexes, the new tablets are empty and writable."""
    path = create_queue(yt, f"{yt_root}/q")
    insert(yt, path, [{"data": f"r{i}"} for i in range(4)])
    yt.unmount_table(path, sync=True)

    yt.reshard_table(path, tablet_count=3, sync=True)
    assert yt.get(f"{path}/@tablet_count") == 3
    yt.mount_table(path, sync=True)

    infos = tablet_infos(yt, path, 3)
    assert [info["total_row_count"] for info in infos] == [4, 0, 0]
    assert [r["data"] for r in pull(yt, path, offset=0, partition_index=0)] == [f"r{i}" for i in range(4)]
    assert pull(yt, path, offset=0, partition_index=1) == []
    assert pull(yt, path, offset=0, partition_index=2) == []

    insert(yt, path, [{"$tablet_index": 2, "data": "new"}])
    rows = pull(yt, path, offset=0, partition_index=2)
    assert [(r["$tablet_index"], r["$row_index"], r["data"]) for r in rows] == [(2, 0, "new")]
    wait_until(lambda: tablet_infos(yt, path, 3)[2]["total_row_count"] == 1, message="total_row_count")


def test_partial_mount_gives_mixed_state(yt, yt_root):
    """Mounting a tablet range (``first_tablet_index``/``last_tablet_index``) mounts only those tablets:
    ``@tablet_state`` is ``mixed`` (ETabletState::Mixed), ``@tablets[i]/state`` is per tablet (what
    ``mount_table(sync=True)`` polls for ranges), and only mounted tablets accept writes."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2, mount=False)
    yt.mount_table(path, first_tablet_index=1, last_tablet_index=1, sync=True)
    assert yt.get(f"{path}/@tablet_state") == "mixed"
    assert [t["state"] for t in yt.get(f"{path}/@tablets")] == ["unmounted", "mounted"]
    insert(yt, path, [{"$tablet_index": 1, "data": "x"}])
    with pytest.raises(YtResponseError) as info:
        insert(yt, path, [{"$tablet_index": 0, "data": "y"}])
    assert info.value.contains_code(TABLET_NOT_MOUNTED), info.value
    yt.mount_table(path, sync=True)
    assert yt.get(f"{path}/@tablet_state") == "mounted"
    assert [r["data"] for r in pull(yt, path, offset=0, partition_index=1)] == ["x"]


def test_reshard_of_mounted_table_fails_without_no_such_tablet_code(yt, yt_root):
    """Resharding needs unmounted tablets; the refusal must not claim 1701: in YTsaurus 1701 is
    NoSuchTablet (tablet_client/public.h), which ``yt.wrapper`` maps to ``YtNoSuchTablet`` and retries as
    a transient dynamic-table error."""
    path = create_queue(yt, f"{yt_root}/q")
    with pytest.raises(YtResponseError) as info:
        yt.reshard_table(path, tablet_count=2, sync=True)
    assert not info.value.is_no_such_tablet(), info.value
    assert yt.get(f"{path}/@tablet_count") == 1


def test_insert_with_tablet_index_out_of_range_fails_without_no_such_tablet_code(yt, yt_root):
    """A row whose ``$tablet_index`` names no tablet is refused as YTsaurus's client refuses it when routing rows
    (``tablet_helpers.cpp``: "Invalid tablet index: actual %v, expected in range [0, %v]", a plain error): not
    1701, which ``yt.wrapper`` would retry as a transient dynamic-table error for minutes."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    with pytest.raises(YtResponseError) as info:
        yt.insert_rows(path, [{"$tablet_index": 5, "data": "x"}])
    assert not info.value.is_no_such_tablet(), info.value
    assert "Invalid tablet index: actual 5, expected in range [0, 1]" in str(info.value), info.value
    assert [info["total_row_count"] for info in tablet_infos(yt, path, 2)] == [0, 0]


def test_freeze_of_unmounted_table_fails_without_no_such_tablet_code(yt, yt_root):
    """Freezing an unmounted table is refused; the tablet exists, so the error must not be 1701
    (NoSuchTablet)."""
    path = create_queue(yt, f"{yt_root}/q", mount=False)
    with pytest.raises(YtResponseError) as info:
        yt.freeze_table(path, sync=True)
    assert not info.value.is_no_such_tablet(), info.value
    assert yt.get(f"{path}/@tablet_state") == "unmounted"


@pytest.mark.parametrize("kind", ["ordered", "sorted"])
def test_reads_from_unmounted_table_fail_1702(yt, yt_root, kind):
    """Reads need mounted (or frozen) tablets: ``select_rows``, ``lookup_rows`` and ``pull_queue`` on an
    unmounted table fail with 1702 ("Cannot read from tablet %v while it is in %Qlv state",
    ``ValidateTabletMountedOrFrozen``)."""
    path = f"{yt_root}/t"
    if kind == "ordered":
        create_queue(yt, path)
        insert(yt, path, [{"data": "x"}])
    else:
        create_sorted_table(yt, path)
        insert(yt, path, [{"key": 1, "value": "x"}])
    yt.unmount_table(path, sync=True)
    with pytest.raises(YtResponseError) as info:
        select(yt, f"* from [{path}]")
    assert info.value.contains_code(TABLET_NOT_MOUNTED), info.value
    with pytest.raises(YtResponseError) as info:
        if kind == "ordered":
            pull(yt, path, offset=0)
        else:
            list(yt.lookup_rows(path, [{"key": 1}]))
    assert info.value.contains_code(TABLET_NOT_MOUNTED), info.value


def test_mount_does_not_change_a_mounted_tablets_frozenness(yt, yt_root):
    """``TTabletBase::ValidateMount``: ``mount_table(freeze=True)`` of a mounted tablet and ``mount_table`` of a
    frozen one fail (``Cannot mount tablet T in "mounted" state``); mounting again in the same mode is a no-op."""
    path = create_sorted_table(yt, f"{yt_root}/s")
    with pytest.raises(YtResponseError) as failure:
        yt.mount_table(path, freeze=True, sync=True)
    assert 'in "mounted" state' in str(failure.value)
    yt.mount_table(path, sync=True)
    yt.freeze_table(path, sync=True)
    with pytest.raises(YtResponseError) as failure:
        yt.mount_table(path, sync=True)
    assert 'in "frozen" state' in str(failure.value)
    yt.mount_table(path, freeze=True, sync=True)
    assert yt.get(f"{path}/@tablet_state") == "frozen"


def test_an_unmounted_tablet_blocks_only_the_requests_that_reach_it(yt, yt_root):
    """A request reaches the tablets its keys route to (pivot keys): with tablet 1 (keys from 10) unmounted, writes,
    lookups and ``key = c`` selects of keys below 10 work; those of tablet 1 fail with 1702."""
    path = create_sorted_table(yt, f"{yt_root}/s", mount=False)
    yt.reshard_table(path, [[], [10]], sync=True)
    yt.mount_table(path, first_tablet_index=0, last_tablet_index=0, sync=False)
    wait_until(lambda: yt.get(f"{path}/@tablets/0/state") == "mounted")
    insert(yt, path, [{"key": 1, "value": "a"}])
    assert list(yt.lookup_rows(path, [{"key": 1}])) == [{"key": 1, "value": "a", "count": None}]
    assert select(yt, f"value from [{path}] where key = 1") == [{"value": "a"}]
    for action in (
        lambda: insert(yt, path, [{"key": 11, "value": "b"}]),
        lambda: list(yt.lookup_rows(path, [{"key": 11}])),
        lambda: select(yt, f"value from [{path}] where key = 11"),
        lambda: select(yt, f"value from [{path}]"),
    ):
        with pytest.raises(YtResponseError) as failure:
            action()
        assert failure.value.contains_code(TABLET_NOT_MOUNTED)


def test_unknown_tablet_cell_bundle_is_refused(yt, yt_root):
    """A table names an existing tablet cell bundle: ``GetTabletCellBundleByNameOrThrow``
    (``yt/yt/server/master/tablet_server/tablet_manager.cpp``) fails with ResolveError (500) ``No such tablet cell
    bundle "X"`` at ``create`` and at ``set @tablet_cell_bundle``; ``default`` exists on every cluster."""
    schema = [{"name": "key", "type": "int64", "sort_order": "ascending"}, {"name": "value", "type": "string"}]
    path = f"{yt_root}/t"
    with pytest.raises(YtResponseError) as info:
        yt.create(
            "table", path, attributes={"dynamic": True, "schema": schema, "tablet_cell_bundle": "no_such_bundle_33"}
        )
    assert 'No such tablet cell bundle "no_such_bundle_33"' in str(info.value)
    assert info.value.is_resolve_error()
    assert not yt.exists(path)

    yt.create("table", path, attributes={"dynamic": True, "schema": schema, "tablet_cell_bundle": "default"})
    assert yt.get(f"{path}/@tablet_cell_bundle") == "default"
    with pytest.raises(YtResponseError) as info:
        yt.set(f"{path}/@tablet_cell_bundle", "no_such_bundle_33")
    assert 'No such tablet cell bundle "no_such_bundle_33"' in str(info.value)
    assert yt.get(f"{path}/@tablet_cell_bundle") == "default"
