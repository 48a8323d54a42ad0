"""Conformance: reading queues with ``pull_queue`` / ``pull_consumer`` and trimming them.

Sources: ``queues.md`` ("Reading data": fewer rows than requested is allowed, only an empty result
means no rows at the offset), ``yt/python/yt/wrapper/tests/test_queue_commands.py`` (``test_pull_queue``:
``pull_queue(q, offset=1, partition_index=0)`` returns the row with ``$row_index`` 1),
``yt/yt/client/queue_client/queue_rowset.{h,cpp}`` (``MaxRowCount = 1000``; ``ComputeRowsToRead``:
``min(max_row_count, max_data_weight / data_weight_per_row_hint)``, at least 1),
``yt/yt/ytlib/api/native/client_impl.cpp`` (``DoPullQueueImpl``: "Cannot read table %v at a negative
offset %v"; ``DoPullQueueViaSelectRows``: ``between offset and offset+n-1``, else ``>= offset limit n``;
``DoPullConsumer``: unregistered consumer -> AuthorizationError 901),
``yt/yt/client/driver/queue_commands.cpp`` (``data_weight_per_row_hint`` parameter),
``ordered-dynamic-tables.md`` ("Trim": absolute ``trimmed_row_count``, numbering retained, asynchronous).
"""

from __future__ import annotations

import pytest
from conformance import (
    AUTHORIZATION_ERROR,
    create_consumer,
    create_queue,
    insert,
    pull,
    register_consumer,
    tablet_infos,
    wait_until,
    yson_list,
)
from yt.wrapper.driver import make_request
from yt.wrapper.errors import YtResponseError
from yt.wrapper.format import YsonFormat
from yt.wrapper.ypath import TablePath


@pytest.fixture
def queue10(yt, yt_root) -> str:
    """A one-tablet queue with rows ``r0..r9`` (``$row_index`` 0..9)."""
    path = create_queue(yt, f"{yt_root}/q")
    insert(yt, path, [{"data": f"r{i}"} for i in range(10)])
    return path


def test_pull_offset_is_inclusive(yt, queue10):
    """The offset is the first row returned: a pull at offset 1 starts with ``$row_index`` 1."""
    rows = pull(yt, queue10, offset=1, max_row_count=2)
    assert rows == [
        {"$tablet_index": 0, "$row_index": 1, "data": "r1"},
        {"$tablet_index": 0, "$row_index": 2, "data": "r2"},
    ]


def test_pull_rows_carry_tablet_and_row_index(yt, yt_root):
    """Every pulled row carries ``$tablet_index`` (the partition) and ``$row_index`` plus data columns."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    insert(yt, path, [{"$tablet_index": 1, "data": "x"}, {"$tablet_index": 1, "data": "y"}])
    assert pull(yt, path, offset=0, partition_index=1) == [
        {"$tablet_index": 1, "$row_index": 0, "data": "x"},
        {"$tablet_index": 1, "$row_index": 1, "data": "y"},
    ]


def test_pull_default_max_row_count_is_1000(yt, yt_root):
    """Without ``max_row_count`` a pull returns at most 1000 rows (``TQueueRowBatchReadOptions``)."""
    path = create_queue(yt, f"{yt_root}/q")
    insert(yt, path, [{"data": str(i)} for i in range(1100)])
    rows = pull(yt, path, offset=0)
    assert len(rows) == 1000
    assert [r["$row_index"] for r in rows] == list(range(1000))
    rest = pull(yt, path, offset=1000)
    assert [r["$row_index"] for r in rest] == list(range(1000, 1100))


def test_pull_max_row_count_is_honoured(yt, queue10):
    """``max_row_count`` caps the batch; the rows are consecutive from the offset."""
    rows = pull(yt, queue10, offset=4, max_row_count=3)
    assert [r["$row_index"] for r in rows] == [4, 5, 6]
    assert [r["$row_index"] for r in pull(yt, queue10, offset=8, max_row_count=5)] == [8, 9]


def test_pull_non_positive_max_row_count_fails(yt, queue10):
    """``max_row_count`` must be positive ("MaxRowCount is non-positive", queue_rowset.cpp)."""
    with pytest.raises(YtResponseError):
        pull(yt, queue10, offset=0, max_row_count=0)


def _pull_raw(yt, queue: str, offset: int, **params) -> list[dict]:
    """``pull_queue`` through the client's driver, for parameters ``YtClient.pull_queue`` does not expose
    (``data_weight_per_row_hint`` is a parameter of the v4 command, driver/queue_commands.cpp)."""
    request = {
        "queue_path": TablePath(queue, client=yt),
        "offset": offset,
        "partition_index": 0,
        "output_format": YsonFormat().to_yson_type(),
        **params,
    }
    return yson_list(make_request("pull_queue", request, use_heavy_proxy=True, client=yt))


def test_pull_max_data_weight_with_row_weight_hint(yt, queue10):
    """With ``data_weight_per_row_hint`` the batch is ``min(max_row_count, max_data_weight / hint)`` rows,
    at least one (``ComputeRowsToRead``)."""
    rows = _pull_raw(yt, queue10, 0, max_data_weight=300, data_weight_per_row_hint=100)
    assert [r["$row_index"] for r in rows] == [0, 1, 2]
    rows = _pull_raw(yt, queue10, 2, max_data_weight=10, data_weight_per_row_hint=100)
    assert [r["$row_index"] for r in rows] == [2]
    rows = _pull_raw(yt, queue10, 0, max_row_count=2, max_data_weight=1000, data_weight_per_row_hint=1)
    assert [r["$row_index"] for r in rows] == [0, 1]


def test_pull_beyond_end_is_empty(yt, queue10):
    """At or past the end of the partition a pull returns no rows (not an error)."""
    assert pull(yt, queue10, offset=10) == []
    assert pull(yt, queue10, offset=1000) == []


def test_pull_negative_offset_fails(yt, queue10):
    """A negative offset is rejected ("Cannot read table %v at a negative offset %v")."""
    with pytest.raises(YtResponseError):
        pull(yt, queue10, offset=-1)


def test_pull_empty_partition_is_empty(yt, yt_root):
    """A partition that never got rows pulls as empty from offset 0."""
    path = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    insert(yt, path, [{"$tablet_index": 0, "data": "x"}])
    assert pull(yt, path, offset=0, partition_index=1) == []


def test_trim_rows_and_tablet_infos(yt, queue10):
    """``get_tablet_infos``: ``total_row_count`` counts every row ever written, ``trimmed_row_count`` the
    trimmed prefix; ``trim_rows`` takes an absolute count, keeps the numbering, and its effect may be
    asynchronous (polled)."""
    info = tablet_infos(yt, queue10, 1)[0]
    assert (info["total_row_count"], info["trimmed_row_count"]) == (10, 0)

    yt.trim_rows(queue10, 0, 3)
    wait_until(lambda: tablet_infos(yt, queue10, 1)[0]["trimmed_row_count"] == 3, message="trim to 3")
    assert tablet_infos(yt, queue10, 1)[0]["total_row_count"] == 10

    yt.trim_rows(queue10, 0, 6)  # absolute, not relative
    wait_until(lambda: tablet_infos(yt, queue10, 1)[0]["trimmed_row_count"] == 6, message="trim to 6")
    info = tablet_infos(yt, queue10, 1)[0]
    assert (info["total_row_count"], info["trimmed_row_count"]) == (10, 6)

    rows = wait_until(lambda: (r := pull(yt, queue10, offset=6)) and r[0]["$row_index"] == 6 and r)
    assert [(r["$row_index"], r["data"]) for r in rows] == [(i, f"r{i}") for i in range(6, 10)]

    insert(yt, queue10, [{"data": "r10"}])
    assert pull(yt, queue10, offset=10) == [{"$tablet_index": 0, "$row_index": 10, "data": "r10"}]


def test_pull_at_trimmed_offset_continues_at_first_available_row(yt, queue10):
    """A pull at a trimmed offset silently starts at the first available row (queues.md; the
    ``>= offset limit n`` fallback of ``DoPullQueueViaSelectRows``); callers detect the gap from
    ``$row_index``."""
    yt.trim_rows(queue10, 0, 4)
    wait_until(lambda: tablet_infos(yt, queue10, 1)[0]["trimmed_row_count"] == 4, message="trim to 4")
    rows = wait_until(
        lambda: (r := pull(yt, queue10, offset=0, max_row_count=3)) and r[0]["$row_index"] == 4 and r,
        message="pull at trimmed offset to skip forward",
    )
    assert [r["$row_index"] for r in rows] == [4, 5, 6]


def test_pull_queue_clamps_a_trimmed_offset_and_reads_n_rows(yt, queue10):
    """``pull_queue`` reads through the tablet node by default (``TPullQueueOptions::UseNativeTabletNodeApi`` is
    true in the client's ``client.h``; ``DoPullQueueViaTabletNodeApi``), as ``pull_consumer`` does: a trimmed offset
    is clamped to the first kept row and ``max_row_count`` rows are read from there."""
    yt.trim_rows(queue10, 0, 4)
    wait_until(lambda: tablet_infos(yt, queue10, 1)[0]["trimmed_row_count"] == 4, message="trim to 4")
    rows = wait_until(
        lambda: (r := pull(yt, queue10, offset=2, max_row_count=6)) and r[0]["$row_index"] == 4 and r,
        message="pull of a partly trimmed window",
    )
    assert [r["$row_index"] for r in rows] == [4, 5, 6, 7, 8, 9]


def test_pull_consumer_clamps_a_trimmed_offset_and_reads_n_rows(yt, yt_root, queue10):
    """``pull_consumer`` goes through the tablet node (``FetchTableRows``), which clamps the offset to the
    trimmed row count and then reads up to ``max_row_count`` rows."""
    consumer = create_consumer(yt, f"{yt_root}/c")
    register_consumer(yt, queue10, consumer)
    yt.trim_rows(queue10, 0, 4)
    wait_until(lambda: tablet_infos(yt, queue10, 1)[0]["trimmed_row_count"] == 4, message="trim to 4")
    rows = list(yt.pull_consumer(consumer, queue10, offset=2, partition_index=0, max_row_count=3))
    assert [r["$row_index"] for r in rows] == [4, 5, 6]


def test_pull_consumer_reads_like_pull_queue(yt, yt_root, queue10):
    """``pull_consumer`` of a registered consumer reads the same rows as ``pull_queue`` (offset
    inclusive, ``max_row_count`` honoured), test_queue_commands.py ``test_pull_consumer``."""
    consumer = create_consumer(yt, f"{yt_root}/c")
    register_consumer(yt, queue10, consumer)
    rows = list(yt.pull_consumer(consumer, queue10, offset=1, partition_index=0, max_row_count=2))
    assert rows == [
        {"$tablet_index": 0, "$row_index": 1, "data": "r1"},
        {"$tablet_index": 0, "$row_index": 2, "data": "r2"},
    ]
    assert list(yt.pull_consumer(consumer, queue10, offset=10, partition_index=0)) == []


def test_pull_consumer_after_trim_skips_forward(yt, yt_root, queue10):
    """``pull_consumer`` at a trimmed offset also continues at the first available row."""
    consumer = create_consumer(yt, f"{yt_root}/c")
    register_consumer(yt, queue10, consumer)
    yt.trim_rows(queue10, 0, 5)
    wait_until(lambda: tablet_infos(yt, queue10, 1)[0]["trimmed_row_count"] == 5, message="trim to 5")

    def first_row_index():
        rows = list(yt.pull_consumer(consumer, queue10, offset=0, partition_index=0, max_row_count=2))
        return rows and rows[0]["$row_index"] == 5 and rows

    rows = wait_until(first_row_index, message="pull_consumer at a trimmed offset to skip forward")
    assert [r["$row_index"] for r in rows] == [5, 6]


def test_pull_consumer_unregistered_is_authorization_error(yt, yt_root, queue10):
    """``pull_consumer`` through a consumer not registered for the queue fails with 901
    ("Consumer %v is not registered for queue %v")."""
    consumer = create_consumer(yt, f"{yt_root}/c")
    with pytest.raises(YtResponseError) as info:
        list(yt.pull_consumer(consumer, queue10, offset=0, partition_index=0))
    assert info.value.contains_code(AUTHORIZATION_ERROR), info.value


def test_trim_beyond_total_row_count_fails(yt, queue10):
    """``trim_rows`` past the end fails ("Cannot trim tablet %v at row %v since it only has %v row(s)",
    tablet_manager.cpp) and trims nothing."""
    with pytest.raises(YtResponseError):
        yt.trim_rows(queue10, 0, 11)
    assert tablet_infos(yt, queue10, 1)[0]["trimmed_row_count"] == 0
    assert len(pull(yt, queue10, offset=0)) == 10


def test_pull_queue_needs_an_ordered_dynamic_table(yt, yt_root):
    """``pull_queue`` validates the table: a sorted dynamic table (``ValidateOrdered``) or a static table
    (``ValidateDynamic``) is rejected."""
    sorted_table = f"{yt_root}/sorted"
    yt.create(
        "table",
        sorted_table,
        attributes={
            "dynamic": True,
            "schema": [
                {"name": "key", "type": "int64", "sort_order": "ascending"},
                {"name": "value", "type": "string"},
            ],
        },
    )
    yt.mount_table(sorted_table, sync=True)
    with pytest.raises(YtResponseError):
        pull(yt, sorted_table, offset=0)
    static_table = f"{yt_root}/static"
    yt.create("table", static_table)
    with pytest.raises(YtResponseError):
        pull(yt, static_table, offset=0)


def test_pull_consumer_honours_max_data_weight(yt, yt_root, queue10):
    """``pull_consumer`` reads through the tablet fetch API, which stops once ``max_data_weight`` is
    reached (query_service.cpp ``FetchRowsFromOrderedStore``): a tiny limit still yields at least one row,
    but not the whole partition; the rows are consecutive from the offset."""
    consumer = create_consumer(yt, f"{yt_root}/c")
    register_consumer(yt, queue10, consumer)
    rows = list(yt.pull_consumer(consumer, queue10, offset=2, partition_index=0, max_data_weight=1))
    assert 1 <= len(rows) < 8
    assert [r["$row_index"] for r in rows] == list(range(2, 2 + len(rows)))
