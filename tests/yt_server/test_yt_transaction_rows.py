"""Conformance: rows per tablet in one tablet transaction.

Sources: ``yt/yt/client/api/native/transaction.cpp`` (the tablet request batcher of a tablet gets
``MaxRowsPerTablet = Config->MaxRowsPerTransaction``; ``PrepareBatches`` throws "Transaction affects too many rows in
tablet"), ``yt/yt/client/api/native/config.cpp`` (``max_rows_per_transaction``: default 100,000, at most 2,000,000),
``yt/yt/client/tablet_client/public.h`` (``TooManyRowsInTransaction`` = 1717). The check runs when the commit
prepares its batches, so a refused transaction applies nothing; a single ``insert_rows`` without a transaction runs
in a transaction of its own and is refused the same way.
"""

from __future__ import annotations

from conformance import create_queue, create_sorted_table, tablet_infos

LIMIT = 100_000  # max_rows_per_transaction, the default of a cluster's connection config
TOO_MANY_ROWS = 1717


def _rows(count: int, tablet: int | None = None, first: int = 0) -> list[dict]:
    rows = [{"data": str(first + i)} for i in range(count)]
    if tablet is not None:
        for row in rows:
            row["$tablet_index"] = tablet
    return rows


def test_a_transaction_over_the_limit_in_one_tablet_fails_at_commit_and_writes_nothing(yt, queue, yt_error):
    """Two requests of 50,000 and 50,001 rows into one tablet are accepted, the commit is refused with 1717."""
    with yt_error(TOO_MANY_ROWS) as failure:
        with yt.Transaction(type="tablet"):
            yt.insert_rows(queue, _rows(50_000, 0))
            yt.insert_rows(queue, _rows(LIMIT - 50_000 + 1, 0, 50_000))
    assert "too many rows" in str(failure.value)
    assert tablet_infos(yt, queue, 1)[0]["total_row_count"] == 0


def test_the_limit_is_per_tablet(yt, yt_root):
    """60,000 rows into each of two tablets (120,000 in the transaction) commit."""
    queue = create_queue(yt, f"{yt_root}/q", tablet_count=2)
    with yt.Transaction(type="tablet"):
        yt.insert_rows(queue, _rows(60_000, 0))
        yt.insert_rows(queue, _rows(60_000, 1))
    assert [t["total_row_count"] for t in tablet_infos(yt, queue, 2)] == [60_000, 60_000]


def test_one_request_over_the_limit_is_refused_too(yt, yt_root, yt_error):
    """A sorted table: one ``insert_rows`` of 100,001 keys without a transaction writes nothing."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    with yt_error(TOO_MANY_ROWS):
        yt.insert_rows(table, [{"key": i, "value": "v"} for i in range(LIMIT + 1)])
    assert list(yt.select_rows(f"key from [{table}] limit 1")) == []
