"""The mounted-state checks every read and write of a dynamic table makes, and the tablet lookup by index: checks on a
table's tablets that need nothing of the server state (:mod:`spyt_queue.local.tablets` changes tablet states)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from spyt_queue.local.cypress import Node, Tablet
from spyt_queue.local.errors import NO_SUCH_TABLET, TABLET_NOT_MOUNTED, YtError


def tablet_at(node: Node, index: int) -> Tablet:
    """Tablet ``index`` of the table, error 1701 (NoSuchTablet) outside its range."""
    table = node.table
    assert table is not None
    if index < 0 or index >= len(table.tablets):
        raise YtError(
            f"Invalid tablet index for table {node.path}: expected in range [0,{len(table.tablets) - 1}], "
            f"got {index}",
            code=NO_SUCH_TABLET,
            attributes={"path": node.path},
        )
    return table.tablets[index]

def validate_mounted(node: Node, tablet: Tablet, write: bool) -> None:
    """Error 1702 unless the tablet accepts the operation (writes: mounted; reads: mounted or frozen)."""
    allowed = ("mounted",) if write else ("mounted", "frozen")
    if tablet.state in allowed:
        return
    if write:
        message = f'Tablet {tablet.tablet_id} of table {node.path} is in "{tablet.state}" state'
    else:
        message = (
            f'Cannot read from tablet {tablet.tablet_id} of table {node.path} while it is in "{tablet.state}" state'
        )
    raise YtError(
        message,
        code=TABLET_NOT_MOUNTED,
        attributes={
            "tablet_id": tablet.tablet_id,
            "table_path": node.path,
            "is_tablet_unmounted": tablet.state == "unmounted",
        },
    )

def validate_table_mounted(node: Node, write: bool) -> None:
    """Every tablet of a (sorted) table must accept the operation."""
    table = node.table
    assert table is not None
    for tablet in table.tablets:
        validate_mounted(node, tablet, write)


def check_nonnegative(name: str, counts: list[int]) -> None:
    """Refuse a negative trimmed row count or cumulative data weight (``create``, ``reshard``)."""
    what = "Trimmed row count" if name == "trimmed_row_counts" else "Cumulative data weight"
    for count in counts:
        if count < 0:
            raise YtError(f"{what} must be nonnegative, got {count}")


def _pivots(node: Node) -> list[bytes]:
    from spyt_queue.local.schema import encode_key

    table = node.table
    assert table is not None
    try:
        return [encode_key(list(pivot or [])) for pivot in table.pivot_keys]
    except Exception:  # a pivot the key encoding does not know: no per-tablet routing
        return []


def validate_keys_mounted(node: Node, keys: Iterable[bytes], write: bool) -> None:
    """A sorted table's tablets that hold ``keys`` (encoded) must accept the operation; the others may be in any
    state, as a request only reaches the tablets its keys route to (``TTabletInfo`` by pivot key)."""
    table = node.table
    assert table is not None
    allowed = ("mounted",) if write else ("mounted", "frozen")
    if all(t.state in allowed for t in table.tablets):
        return
    pivots = _pivots(node)
    if len(pivots) != len(table.tablets):
        validate_table_mounted(node, write)
        return
    for key in keys:
        index = max(bisect.bisect_right(pivots, key) - 1, 0)
        validate_mounted(node, table.tablets[index], write)


def validate_range_mounted(node: Node, prefix: bytes | None) -> None:
    """A sorted table's tablets a read of the keys starting with ``prefix`` (every key when ``None``) touches must
    be mounted or frozen."""
    table = node.table
    assert table is not None
    if prefix is None or all(t.state in ("mounted", "frozen") for t in table.tablets):
        validate_table_mounted(node, write=False)
        return
    pivots = _pivots(node)
    if len(pivots) != len(table.tablets):
        validate_table_mounted(node, write=False)
        return
    first = max(bisect.bisect_right(pivots, prefix) - 1, 0)
    last = max(bisect.bisect_right(pivots, prefix + b"\xff") - 1, 0)
    for tablet in table.tablets[first : last + 1]:
        validate_mounted(node, tablet, write=False)


def validate_tablets_mounted(node: Node, indexes: Iterable[int]) -> None:
    """The tablets of an ordered table a read touches must be mounted or frozen."""
    table = node.table
    assert table is not None
    for index in indexes:
        if 0 <= index < len(table.tablets):
            validate_mounted(node, table.tablets[index], write=False)
