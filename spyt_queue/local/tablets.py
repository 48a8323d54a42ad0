"""Tablet management of the embedded server's dynamic tables: mount, unmount, freeze and remount, reshard, trims,
tablet infos and the mounted-state checks of reads and writes (the tablet cell's side of YTsaurus, beside
:mod:`spyt_queue.local.queues`). Functions of the server :class:`~spyt_queue.local.state.State`, run under its lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yt.yson as yson

from spyt_queue.local import ordered
from spyt_queue.local.cypress import Node, Tablet
from spyt_queue.local.errors import INVALID_TABLET_STATE, YtError
from spyt_queue.local.schema import TABLET_INDEX
from spyt_queue.local.tablet_checks import check_nonnegative, tablet_at, validate_mounted

if TYPE_CHECKING:
    from spyt_queue.local.state import State

def set_tablet_state(state: State, path: str, action: str, first: int | None, last: int | None) -> None:
    """``mount_table``/``unmount_table``/``freeze_table``/``unfreeze_table``/``remount_table``."""
    with state.lock, state.storage.transaction() as conn:
        node = state.dynamic_table(path)
        table = node.table
        assert table is not None
        count = len(table.tablets)
        lo = 0 if first is None else int(first)
        hi = count - 1 if last is None else int(last)
        if not (0 <= lo <= hi < count):
            raise YtError(f"Invalid tablet range [{lo}, {hi}]: table {node.path} has {count} tablet(s)")
        if action in ("mount", "mount_frozen") and table.ordered:
            for tablet in table.tablets[lo : hi + 1]:
                chunk_ids = [c[0] for c in tablet.chunks]
                duplicate = next((c for c in chunk_ids if chunk_ids.count(c) > 1), None)
                if duplicate is not None:
                    raise YtError(
                        f"Cannot mount table {node.path} since tablet {tablet.tablet_id} has duplicate "
                        f"chunk {duplicate}",
                        attributes={"chunk_id": duplicate},
                    )
        if action in ("mount", "mount_frozen"):
            null_column = next((c for c in table.schema.columns if c.type in ("null", "void")), None)
            if null_column is not None:  # test_null_column_mount
                raise YtError(
                    f'Cannot mount table since it has column "{null_column.name}" with value type "null"',
                    attributes={"path": node.path},
                )
            # TTabletBase::ValidateMount: mounting again is a no-op only in the same mode; a mounted tablet is not
            # frozen by mount(freeze=%true), nor a frozen one unfrozen by mount().
            keep = "frozen" if action == "mount_frozen" else "mounted"
            for tablet in table.tablets[lo : hi + 1]:
                if tablet.state not in ("unmounted", keep):
                    raise YtError(f'Cannot mount tablet {tablet.tablet_id} in "{tablet.state}" state')
        flushed = False
        for tablet in table.tablets[lo : hi + 1]:
            new_state = tablet.state
            if action == "mount":
                new_state = "mounted"
            elif action == "mount_frozen":
                new_state = "frozen"
            elif action == "unmount":
                new_state = "unmounted"
            elif action == "freeze":
                if tablet.state == "unmounted":
                    raise YtError(
                        f'Cannot freeze tablet {tablet.tablet_id} in "unmounted" state', code=INVALID_TABLET_STATE
                    )
                new_state = "frozen"
            elif action == "unfreeze":
                if tablet.state == "unmounted":
                    raise YtError(
                        f'Cannot unfreeze tablet {tablet.tablet_id} in "unmounted" state', code=INVALID_TABLET_STATE
                    )
                new_state = "mounted"
            elif action == "remount":
                new_state = tablet.state
            if new_state != tablet.state:
                if table.ordered and new_state in ("unmounted", "frozen"):
                    flushed = _flush(state, node, tablet) or flushed
                tablet.state = new_state
                ordered.persist_tablet(conn, node.id, tablet)
        if flushed:
            state.cypress.persist(conn, node)

def _flush(state: State, node: Node, tablet: Tablet) -> bool:
    """A flush at unmount or freeze: the tablet's rows written since its last chunk become one chunk."""
    if tablet.chunks:
        start = int(tablet.chunks[-1][1]) + int(tablet.chunks[-1][2])
    else:
        row = state.storage.reader.execute(
            "SELECT min(first_row) FROM chunks WHERE table_id = ? AND tablet = ?", (node.id, tablet.index)
        ).fetchone()
        start = tablet.total_row_count if row is None or row[0] is None else int(row[0])
    if tablet.total_row_count <= start:
        return False
    tablet.chunks.append([state.new_chunk_id(), start, tablet.total_row_count - start])
    return True

def reshard(
    state: State,
    path: str,
    tablet_count: int | None,
    pivot_keys: list[Any] | None,
    trimmed_row_counts: list[int] | None,
    first: int | None,
    last: int | None,
    cumulative_data_weights: list[int] | None = None,
) -> None:
    """``reshard_table``: only when every tablet is unmounted, as in YT. Ordered tables may reshard a tablet
    range: tablets beyond the range's old count are created after it (``trimmed_row_counts`` /
    ``cumulative_data_weights`` give their starting row and weight), and when the count shrinks the range's
    trailing tablets are merged into its last kept one (their rows appended), as ``ReshardTable`` does."""
    with state.lock, state.storage.transaction() as conn:
        node = state.dynamic_table(path)
        table = node.table
        assert table is not None
        for tablet in table.tablets:
            if tablet.state != "unmounted":
                raise YtError(
                    f"Cannot reshard table {node.path} since tablet {tablet.tablet_id} is not unmounted",
                    code=INVALID_TABLET_STATE,
                )
        if tablet_count is not None and int(tablet_count) <= 0:
            raise YtError("Tablet count must be positive")
        if table.schema.sorted:
            if first is not None or last is not None:
                raise YtError(
                    "Resharding a tablet range (first_tablet_index/last_tablet_index) of a sorted table is not "
                    "supported by ytqueue local; reshard the whole table"
                )
            if trimmed_row_counts:
                raise YtError('Cannot reshard sorted table with "trimmed_row_counts"')
            if pivot_keys is None and tablet_count is None:
                raise YtError('Either "pivot_keys" or "tablet_count" must be given')
            count = len(pivot_keys) if pivot_keys is not None else int(tablet_count or 1)
            table.pivot_keys = list(pivot_keys) if pivot_keys is not None else []
            old = table.tablets
            table.tablets = [Tablet(i, state._tablet_id(node.id, i)) for i in range(count)]
            conn.execute("DELETE FROM tablets WHERE table_id = ?", (node.id,))
            for tablet in table.tablets:
                ordered.persist_tablet(conn, node.id, tablet)
            del old
        else:
            if pivot_keys:
                raise YtError("Table is ordered; must provide tablet count")
            if tablet_count is None:
                raise YtError('"tablet_count" is required to reshard an ordered table')
            _reshard_ordered(state,
                conn, node, int(tablet_count), first, last, trimmed_row_counts, cumulative_data_weights
            )
        state.cypress.persist(conn, node)

def _reshard_ordered(
    state: State,
    conn: Any,
    node: Node,
    count: int,
    first: int | None,
    last: int | None,
    trimmed_row_counts: list[int] | None,
    cumulative_data_weights: list[int] | None,
) -> None:
    table = node.table
    assert table is not None
    old = table.tablets
    lo = 0 if first is None else int(first)
    hi = len(old) - 1 if last is None else int(last)
    if not 0 <= lo <= hi < len(old):
        raise YtError(
            f"Invalid tablet range [{lo},{hi}] for table {node.path} with {len(old)} tablet(s)",
            attributes={"first_tablet_index": lo, "last_tablet_index": hi},
        )
    old_count = hi - lo + 1
    created = max(0, count - old_count)
    starts: dict[str, list[int]] = {}
    for name, values in (
        ("trimmed_row_counts", trimmed_row_counts),
        ("cumulative_data_weights", cumulative_data_weights),
    ):
        given = [int(v) for v in values or []]
        if given and len(given) != created:
            raise YtError(f'"{name}" has invalid size: expected 0 or {created}, got {len(given)}')
        check_nonnegative(name, given)
        starts[name] = given or [0] * created
    dropped = old[lo + count : hi + 1] if count < old_count else []
    for tablet in dropped:
        # TTablet::ValidateReshardRemove: trimmed rows must already be gone from the tablet's chunks. Here
        # written rows below the trimmed count count as still stored (a tablet node drops them later).
        if tablet.trimmed_row_count > 0 and tablet.last_write_ts > 0:
            raise YtError(
                f"Some chunks of tablet {tablet.tablet_id} are not fully trimmed; such a tablet cannot "
                "participate in resharding"
            )
    if dropped:
        keeper = old[lo + count - 1]
        for tablet in dropped:
            _move_rows(state, conn, node, tablet, keeper)
            conn.execute("DELETE FROM chunks WHERE table_id = ? AND tablet = ?", (node.id, tablet.index))
    new_tablets = [
        Tablet(
            0,
            "",
            total_row_count=starts["trimmed_row_counts"][i],
            trimmed_row_count=starts["trimmed_row_counts"][i],
            cumulative_data_weight=starts["cumulative_data_weights"][i],
            last_chunk=(),
        )
        for i in range(created)
    ]
    kept = old[lo : lo + min(count, old_count)]
    tablets = [*old[:lo], *kept, *new_tablets, *old[hi + 1 :]]
    # Renumber: chunks move to a temporary negative index first, so no two tablets collide in between.
    moved = [(t.index, i) for i, t in enumerate(tablets) if t.tablet_id and t.index != i]  # new ones have no id
    for old_index, new_index in moved:
        conn.execute(
            "UPDATE chunks SET tablet = ? WHERE table_id = ? AND tablet = ?", (-1 - new_index, node.id, old_index)
        )
    for _, new_index in moved:
        _restamp_tablet_index(state, conn, node.id, -1 - new_index, new_index)
    for index, tablet in enumerate(tablets):
        tablet.index = index
        tablet.tablet_id = state._tablet_id(node.id, index)
        tablet.last_chunk = None
    table.tablets = tablets
    conn.execute("DELETE FROM tablets WHERE table_id = ?", (node.id,))
    for tablet in tablets:
        ordered.persist_tablet(conn, node.id, tablet)

def _restamp_tablet_index(state: State, conn: Any, table_id: str, stored_index: int, tablet_index: int) -> None:
    """Move the chunks stored under ``stored_index`` to ``tablet_index``, with ``$tablet_index`` rewritten."""
    from spyt_queue.local.formats import dumps_fragment, loads_fragment

    chunks = conn.execute(
        "SELECT first_row, row_count, data FROM chunks WHERE table_id = ? AND tablet = ?", (table_id, stored_index)
    ).fetchall()
    for first_row, _row_count, data in chunks:
        rows = loads_fragment(bytes(data))
        for row in rows:
            row[TABLET_INDEX] = tablet_index
        conn.execute(
            "UPDATE chunks SET tablet = ?, data = ? WHERE table_id = ? AND tablet = ? AND first_row = ?",
            (tablet_index, dumps_fragment(rows), table_id, stored_index, first_row),
        )

def _move_rows(state: State, conn: Any, node: Node, source: Tablet, target: Tablet) -> None:
    """Append the kept rows of ``source`` to ``target`` (row indexes, ``$tablet_index`` and
    ``$cumulative_data_weight`` continue the target's), as merging tablets' chunk lists does."""
    from spyt_queue.local.formats import dumps_fragment, loads_fragment
    from spyt_queue.local.schema import ROW_INDEX

    rows = []
    for _, _, data in conn.execute(
        "SELECT first_row, row_count, data FROM chunks WHERE table_id = ? AND tablet = ? ORDER BY first_row",
        (node.id, source.index),
    ).fetchall():
        rows.extend(loads_fragment(bytes(data)))
    rows = [r for r in rows if int(r[ROW_INDEX]) >= source.trimmed_row_count]
    if not rows:
        return
    weight_key = ordered.CUMULATIVE_DATA_WEIGHT
    previous = 0
    total = target.cumulative_data_weight
    for offset, row in enumerate(rows):
        row[TABLET_INDEX] = target.index
        row[ROW_INDEX] = target.total_row_count + offset
        if weight_key in row:
            own = int(row[weight_key]) - previous
            previous = int(row[weight_key])
            total += own
            row[weight_key] = total
    data = dumps_fragment(rows)
    conn.execute(
        "INSERT INTO chunks (table_id, tablet, first_row, row_count, data) VALUES (?, ?, ?, ?, ?)",
        (node.id, target.index, target.total_row_count, len(rows), data),
    )
    target.chunks.append([state.new_chunk_id(), target.total_row_count, len(rows)])
    target.total_row_count += len(rows)
    target.cumulative_data_weight = total
    target.last_write_ts = max(target.last_write_ts, source.last_write_ts)
    target.last_chunk = None

def tablet_infos(state: State, path: str, indexes: list[int]) -> dict[str, Any]:
    """``get_tablet_infos``."""
    with state.lock:
        node = state.dynamic_table(path)
        table = node.table
        assert table is not None
        result = []
        for index in indexes:
            tablet = tablet_at(node, int(index))
            result.append(
                {
                    "total_row_count": tablet.total_row_count if table.ordered else 0,
                    "trimmed_row_count": tablet.trimmed_row_count if table.ordered else 0,
                    "delayed_lockless_row_count": 0,
                    "barrier_timestamp": yson.YsonUint64(state.timestamps.last),
                    "last_write_timestamp": yson.YsonUint64(tablet.last_write_ts),
                    "table_replica_infos": yson.YsonEntity(),
                    "tablet_errors": [],
                }
            )
        return {"tablets": result}

def trim_rows(state: State, path: str, tablet_index: int, trimmed_row_count: int) -> None:
    """``trim_rows`` (absolute count, outside transactions)."""
    with state.lock:
        node = state.dynamic_table(path)
        table = node.table
        assert table is not None
        if not table.ordered:
            raise YtError(f"Table {node.path} is not ordered")
        tablet = tablet_at(node, tablet_index)
        validate_mounted(node, tablet, write=True)
        if trimmed_row_count > tablet.total_row_count:
            raise YtError(
                f"Cannot trim tablet {tablet.tablet_id} at row {trimmed_row_count} since it only "
                f"has {tablet.total_row_count} row(s)"
            )
        if trimmed_row_count <= tablet.trimmed_row_count:
            return  # a count at or below the trimmed one (negative too) changes nothing, as in YTsaurus
        with state.storage.transaction() as conn:
            try:
                ordered.trim(conn, node.id, tablet, trimmed_row_count)
            except BaseException:
                tablet.last_chunk = None
                raise

