"""Timestamp and id formats, key encoding order, chunked ordered storage."""

from __future__ import annotations

import time

import yt.yson as yson
from yt.wrapper.common import is_master_transaction, object_type_from_uuid

from spyt_queue.local import ids
from spyt_queue.local.schema import encode_key
from spyt_queue.local.transactions import TransactionManager


def test_timestamps_follow_wall_clock_and_increase():
    generator = ids.TimestampGenerator()
    first, second = generator.generate(), generator.generate()
    assert second > first
    assert abs(ids.timestamp_to_unix(first) - time.time()) < 5
    assert first & ((1 << 30) - 1) < (1 << 30)


def test_tablet_transaction_ids_are_not_master_for_the_client():
    manager = TransactionManager(ids.TimestampGenerator())
    tablet = manager.start("tablet", 1000, {})
    master = manager.start("master", 1000, {})
    assert object_type_from_uuid(tablet.id) == ids.TYPE_ATOMIC_TABLET_TRANSACTION
    assert not is_master_transaction(tablet.id)
    assert is_master_transaction(master.id)
    assert ids.counter_of(tablet.id) == tablet.start_ts


def test_key_encoding_preserves_yt_order():
    keys = [[None], [-5], [0], [7], [yson.YsonUint64(1)], [b""], [b"a"], [b"a\x00"], [b"ab"], [b"b"]]
    ints = [[None], [-(1 << 63)], [-1], [0], [1], [(1 << 63) - 1]]
    for group in (
        ints,
        [[b""], [b"a"], [b"a\x00"], [b"ab"], [b"b"]],
        [[-1.5], [0.0], [2.5]],
        [[b"a", 1], [b"a", 2], [b"b", None]],
    ):
        encoded = [encode_key(k) for k in group]
        assert encoded == sorted(encoded)
    assert len({encode_key(k) for k in keys}) == len(keys)


def test_ordered_chunks_round_trip(tmp_path):
    from spyt_queue.local import ordered
    from spyt_queue.local.cypress import Tablet
    from spyt_queue.local.schema import TableSchema
    from spyt_queue.local.storage import Storage

    storage = Storage(tmp_path)
    schema = TableSchema.parse([{"name": "a", "type": "int64"}], dynamic=True)
    tablet = Tablet(0, "t", state="mounted", last_chunk=())
    for start in range(0, 2500, 700):
        rows = [{b"a": i} for i in range(start, min(start + 700, 2500))]
        with storage.transaction() as conn:
            ordered.append(conn, storage, "table", tablet, schema, rows, 100 + start)
    assert tablet.total_row_count == 2500
    rows = list(ordered.read_rows(storage, "table", 0, 1000, 1100))
    assert [r[b"$row_index"] for r in rows] == list(range(1000, 1100))
    assert all(r[b"a"] == r[b"$row_index"] for r in rows)
    sizes = [row[1] for row in storage.reader.execute("SELECT first_row, row_count FROM chunks ORDER BY first_row")]
    assert max(sizes) <= ordered.CHUNK_ROWS
