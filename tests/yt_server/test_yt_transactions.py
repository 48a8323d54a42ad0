"""Conformance: tablet transactions over HTTP (sticky), as ``yt.wrapper`` drives them.

Sources: ``yt/docs/en/_includes/user-guide/dynamic-tables/transactions.md`` and
``sorted-dynamic-tables.md`` (snapshot isolation: reads in a transaction use its start timestamp, own
writes are not visible; write conflicts), ``ordered-dynamic-tables.md`` ("Writing rows": transactional,
sorted and ordered tables in one transaction), ``yt/yt/client/tablet_client/public.h``
(1700 TransactionLockConflict), ``yt/yt/client/api/sticky_transaction_pool.cpp`` and
``yt/yt/client/driver/command-inl.h`` (``AttachTransaction``: a non-master transaction id that is not in
the sticky pool -> 11000 NoSuchTransaction), ``yt/python/yt/wrapper/transaction.py``
(``Transaction(type="tablet")`` is sticky on HTTP, commits on normal exit, aborts on exception).
"""

from __future__ import annotations

import pytest
from conformance import (
    NO_SUCH_TRANSACTION,
    TRANSACTION_LOCK_CONFLICT,
    create_queue,
    create_sorted_table,
    insert,
    make_tablet_transaction_id,
    pull,
    select,
)
from yt.wrapper.errors import YtResponseError


def attach(client, transaction_id: str):
    """Run the client's commands in an existing transaction without committing or pinging it."""
    return client.Transaction(transaction_id=transaction_id, ping=False)


def start_tablet_transaction(client) -> str:
    """Start a sticky tablet transaction (what ``Transaction(type="tablet")`` sends over HTTP)."""
    return client.start_transaction(type="tablet", sticky=True)


def test_writes_invisible_until_commit(yt, yt2, yt_root):
    """Rows written in a tablet transaction are invisible to other clients until commit, then visible
    (sorted and ordered tables)."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    queue = create_queue(yt, f"{yt_root}/q")
    with yt.Transaction(type="tablet"):
        insert(yt, table, [{"key": 1, "value": "a"}])
        insert(yt, queue, [{"data": "a"}])
        assert list(yt2.lookup_rows(table, [{"key": 1}])) == []
        assert select(yt2, f"* from [{table}]") == []
        assert pull(yt2, queue, 0) == []
    assert [r["value"] for r in yt2.lookup_rows(table, [{"key": 1}])] == ["a"]
    assert [r["data"] for r in pull(yt2, queue, 0)] == ["a"]


def test_abort_discards_writes(yt, yt2, yt_root):
    """Aborting a tablet transaction (exception in the ``with`` body) discards its writes."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    queue = create_queue(yt, f"{yt_root}/q")
    with pytest.raises(RuntimeError, match="boom"), yt.Transaction(type="tablet"):
        insert(yt, table, [{"key": 1, "value": "a"}])
        insert(yt, queue, [{"data": "a"}])
        raise RuntimeError("boom")
    assert list(yt2.lookup_rows(table, [{"key": 1}])) == []
    assert pull(yt2, queue, 0) == []
    assert yt2.get_tablet_infos(queue, [0])["tablets"][0]["total_row_count"] == 0


def test_reads_inside_transaction_do_not_see_own_writes(yt, yt_root):
    """Reads in a transaction use its start timestamp: changes written in the same transaction are not
    visible to its own lookups and selects (sorted-dynamic-tables.md, "Inserting a row" note)."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    insert(yt, table, [{"key": 1, "value": "old"}])
    with yt.Transaction(type="tablet"):
        insert(yt, table, [{"key": 1, "value": "new"}, {"key": 2, "value": "two"}])
        assert [r["value"] for r in yt.lookup_rows(table, [{"key": 1}, {"key": 2}])] == ["old"]
        assert [r["key"] for r in select(yt, f"key from [{table}]")] == [1]
    assert [r["value"] for r in yt.lookup_rows(table, [{"key": 1}, {"key": 2}])] == ["new", "two"]


def test_commit_is_atomic_across_tables(yt, yt2, yt_root):
    """One tablet transaction over two tables commits both or (aborted) neither."""
    first = create_sorted_table(yt, f"{yt_root}/a")
    second = create_sorted_table(yt, f"{yt_root}/b")

    tx = start_tablet_transaction(yt)
    with attach(yt, tx):
        insert(yt, first, [{"key": 1, "value": "a"}])
        insert(yt, second, [{"key": 1, "value": "b"}])
    assert list(yt2.lookup_rows(first, [{"key": 1}])) == []
    yt.abort_transaction(tx)
    assert list(yt2.lookup_rows(first, [{"key": 1}])) == []
    assert list(yt2.lookup_rows(second, [{"key": 1}])) == []

    tx = start_tablet_transaction(yt)
    with attach(yt, tx):
        insert(yt, first, [{"key": 2, "value": "a"}])
        insert(yt, second, [{"key": 2, "value": "b"}])
    yt.commit_transaction(tx)
    assert [r["value"] for r in yt2.lookup_rows(first, [{"key": 2}])] == ["a"]
    assert [r["value"] for r in yt2.lookup_rows(second, [{"key": 2}])] == ["b"]


def test_concurrent_writes_to_same_key_conflict_1700(yt, yt2, yt_root):
    """Two overlapping transactions writing the same sorted key: one of them fails with 1700
    (TransactionLockConflict) and the row holds the value of the one that committed. On YTsaurus the
    rows travel at commit, so the second commit is the one that fails."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    tx1 = start_tablet_transaction(yt)
    tx2 = start_tablet_transaction(yt2)
    errors: list[YtResponseError] = []
    committed: list[str] = []

    def step(client, tx, action):
        try:
            with attach(client, tx):
                action()
            return True
        except YtResponseError as error:
            errors.append(error)
            return False

    ok1 = step(yt, tx1, lambda: insert(yt, table, [{"key": 7, "value": "tx1"}]))
    ok2 = step(yt2, tx2, lambda: insert(yt2, table, [{"key": 7, "value": "tx2"}]))
    for ok, client, tx, name in ((ok2, yt2, tx2, "tx2"), (ok1, yt, tx1, "tx1")):
        if not ok:
            continue
        try:
            client.commit_transaction(tx)
            committed.append(name)
        except YtResponseError as error:
            errors.append(error)

    assert len(committed) == 1, (committed, errors)
    assert len(errors) == 1, errors
    assert errors[0].contains_code(TRANSACTION_LOCK_CONFLICT), errors[0]
    assert [r["value"] for r in yt.lookup_rows(table, [{"key": 7}])] == committed


def test_disjoint_keys_do_not_conflict(yt, yt2, yt_root):
    """Overlapping transactions writing different keys both commit."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    tx1 = start_tablet_transaction(yt)
    tx2 = start_tablet_transaction(yt2)
    with attach(yt, tx1):
        insert(yt, table, [{"key": 1, "value": "tx1"}])
    with attach(yt2, tx2):
        insert(yt2, table, [{"key": 2, "value": "tx2"}])
    yt2.commit_transaction(tx2)
    yt.commit_transaction(tx1)
    assert [r["value"] for r in yt.lookup_rows(table, [{"key": 1}, {"key": 2}])] == ["tx1", "tx2"]


def test_ping_transaction(yt, yt_root):
    """``ping_transaction`` on a live tablet transaction succeeds and the transaction stays usable."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    tx = start_tablet_transaction(yt)
    yt.ping_transaction(tx)
    with attach(yt, tx):
        insert(yt, table, [{"key": 1, "value": "a"}])
    yt.ping_transaction(tx)
    yt.commit_transaction(tx)
    assert [r["value"] for r in yt.lookup_rows(table, [{"key": 1}])] == ["a"]


def test_commit_after_abort_is_no_such_transaction(yt, yt_root):
    """Committing (or writing in) an aborted tablet transaction fails with 11000 NoSuchTransaction."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    tx = start_tablet_transaction(yt)
    with attach(yt, tx):
        insert(yt, table, [{"key": 1, "value": "a"}])
    yt.abort_transaction(tx)
    with pytest.raises(YtResponseError) as info:
        yt.commit_transaction(tx)
    assert info.value.contains_code(NO_SUCH_TRANSACTION), info.value
    with pytest.raises(YtResponseError) as info, attach(yt, tx):
        insert(yt, table, [{"key": 2, "value": "b"}])
    assert info.value.contains_code(NO_SUCH_TRANSACTION), info.value
    assert list(yt.lookup_rows(table, [{"key": 1}, {"key": 2}])) == []


def test_commit_twice_fails(yt, yt_root):
    """A committed tablet transaction is gone: committing it again fails with 11000."""
    table = create_sorted_table(yt, f"{yt_root}/s")
    tx = start_tablet_transaction(yt)
    with attach(yt, tx):
        insert(yt, table, [{"key": 1, "value": "a"}])
    yt.commit_transaction(tx)
    with pytest.raises(YtResponseError) as info:
        yt.commit_transaction(tx)
    assert info.value.contains_code(NO_SUCH_TRANSACTION), info.value


def test_unknown_tablet_transaction_is_no_such_transaction(yt):
    """Commit, ping and abort of a well-formed tablet transaction id nobody started fail with 11000."""
    tx = make_tablet_transaction_id()
    for action in (yt.commit_transaction, yt.ping_transaction, yt.abort_transaction):
        with pytest.raises(YtResponseError) as info:
            action(tx)
        assert info.value.contains_code(NO_SUCH_TRANSACTION), (action, info.value)


def test_commit_retried_with_its_mutation_id_gets_the_kept_answer(yt, queue):
    """``yt.wrapper`` resends a volatile command whose answer was lost with the same ``mutation_id`` and
    ``retry=%true``: the response keeper answers the kept commit (same timestamps) instead of "No such
    transaction", and the rows are committed once. The same id without ``retry`` is refused, as
    ``TResponseKeeper::TryBeginRequest`` refuses it."""
    import uuid

    from yt.wrapper.driver import make_formatted_request

    tx = yt.start_transaction(type="tablet")
    with yt.Transaction(transaction_id=tx):
        yt.insert_rows(queue, [{"data": "once"}])
    mutation_id = str(uuid.uuid4())
    params = {"transaction_id": tx, "mutation_id": mutation_id, "retry": False}
    first = make_formatted_request("commit_transaction", dict(params), format=None, client=yt)
    again = make_formatted_request("commit_transaction", {**params, "retry": True}, format=None, client=yt)
    assert again == first
    assert [r["data"] for r in pull(yt, queue, 0)] == ["once"]
    with pytest.raises(YtResponseError) as failure:
        make_formatted_request("commit_transaction", dict(params), format=None, client=yt)
    assert 'Duplicate request is not marked as "retry"' in str(failure.value)
