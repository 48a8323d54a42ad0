"""YTsaurus's ``yt/yt/tests/integration/master/test_master_transactions.py`` (``TestMasterTransactions``), ported to one
node through ``yt.wrapper``.

Each test keeps its YTsaurus name, calls, sleeps and expected outcomes; ``yt_commands_shim`` stands in for
``yt_commands`` (``//tmp`` is a fresh directory per test; ``tx=`` is the driver's ``transaction_id``,
``ping_ancestor_txs=`` its ``ping_ancestor_transactions``). ``spyt_queue/local/README.md`` lists every test of the
file with its status; the ones not here are skipped for the reason given there (Cypress isolation in master
transactions, ``//sys/@config``, files, users, several master cells).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from time import sleep
from typing import Any

import pytest
import yt_commands_shim as ytc
from yt.common import YtError
from yt_commands_shim import create, execute_command, raises_yt_error, set, wait


@pytest.fixture(autouse=True)
def _bind(yt, yt_root: str) -> None:
    ytc.bind(yt, yt_root)


def _tx_params(tx: str | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    params = dict(kwargs)
    if tx is not None:
        params["transaction_id"] = tx
    if "ping_ancestor_txs" in params:
        params["ping_ancestor_transactions"] = params.pop("ping_ancestor_txs")
    return params


def start_transaction(tx: str | None = None, **kwargs: Any) -> str:
    return str(execute_command("start_transaction", _tx_params(tx, kwargs)))


def commit_transaction(tx: str, **kwargs: Any) -> None:
    execute_command("commit_transaction", _tx_params(tx, kwargs))


def abort_transaction(tx: str, **kwargs: Any) -> None:
    execute_command("abort_transaction", _tx_params(tx, kwargs))


def ping_transaction(tx: str, **kwargs: Any) -> None:
    execute_command("ping_transaction", _tx_params(tx, kwargs))


def exists(path: str, tx: str | None = None, **kwargs: Any) -> bool:
    return bool(execute_command("exists", {"path": path, **_tx_params(tx, kwargs)}))


def get(path: str, tx: str | None = None, **kwargs: Any) -> Any:
    return execute_command("get", {"path": path, **_tx_params(tx, kwargs)})


def ls(path: str, tx: str | None = None, **kwargs: Any) -> Any:
    return execute_command("list", {"path": path, **_tx_params(tx, kwargs)})


def remove(path: str, tx: str | None = None, **kwargs: Any) -> None:
    execute_command("remove", {"path": path, **_tx_params(tx, kwargs)})


def get_transactions() -> list[str]:
    return ls("//sys/transactions")


def get_topmost_transactions() -> list[str]:
    return ls("//sys/topmost_transactions")


def datetime_to_string(moment: datetime) -> str:
    """``yt.common.datetime_to_string``: ISO 8601 with a ``Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_simple1() -> None:
    tx = start_transaction()

    assert exists(f"//sys/transactions/{tx}")
    assert get(f"//sys/transactions/{tx}/@cypress_transaction")

    commit_transaction(tx)

    assert not exists(f"//sys/transactions/{tx}")

    # cannot commit committed transaction
    with pytest.raises(YtError):
        commit_transaction(tx)


def test_simple2() -> None:
    tx = start_transaction()

    assert exists("//sys/transactions/" + tx)

    abort_transaction(tx)

    assert not exists("//sys/transactions/" + tx)

    # cannot commit aborted transaction
    with pytest.raises(YtError):
        commit_transaction(tx)


def test_nested_tx2() -> None:
    """Ported without its Cypress values (``set`` in a transaction is not isolated here): committing the outer
    transaction aborts the nested ones."""
    tx_outer = start_transaction()
    tx1 = start_transaction(tx=tx_outer)
    tx2 = start_transaction(tx=tx_outer)

    commit_transaction(tx_outer)

    assert not exists("//sys/transactions/" + tx_outer)
    assert not exists("//sys/transactions/" + tx1)
    assert not exists("//sys/transactions/" + tx2)


def test_nested_tx3() -> None:
    """Ported without its Cypress values, as ``test_nested_tx2``: aborting the outer transaction aborts the nested
    ones."""
    tx_outer = start_transaction()
    tx1 = start_transaction(tx=tx_outer)
    tx2 = start_transaction(tx=tx_outer)

    abort_transaction(tx_outer)

    assert not exists("//sys/transactions/" + tx_outer)
    assert not exists("//sys/transactions/" + tx1)
    assert not exists("//sys/transactions/" + tx2)


def test_timeout() -> None:
    tx1 = start_transaction(timeout=2000)
    tx2 = start_transaction(timeout=2000)

    # Check that transactions are still alive after 1 seconds.
    sleep(1.0)
    assert exists(f"//sys/transactions/{tx1}")
    assert exists(f"//sys/transactions/{tx2}")

    # Check that transactions are expired after 3 seconds
    sleep(3.0)
    assert not exists(f"//sys/transactions/{tx1}")
    assert not exists(f"//sys/transactions/{tx2}")


def test_deadline() -> None:
    deadline = datetime_to_string(datetime.now(timezone.utc) + timedelta(seconds=2))
    tx1 = start_transaction(timeout=10000, deadline=deadline)
    tx2 = start_transaction(tx=tx1, timeout=10000, deadline=deadline)

    # Check that transactions are still alive after 1 seconds.
    sleep(1.0)
    assert exists(f"//sys/transactions/{tx1}")
    assert exists(f"//sys/transactions/{tx2}")

    # Check that transactions are expired after 3 seconds.
    sleep(3.0)
    assert not exists(f"//sys/transactions/{tx1}")
    assert not exists(f"//sys/transactions/{tx2}")


def test_set_timeout() -> None:
    tx = start_transaction(timeout=5 * 1000)
    set(f"//sys/transactions/{tx}/@timeout", 10 * 1000)
    assert get(f"//sys/transactions/{tx}/@timeout") == 10 * 1000

    ping_transaction(tx)

    # check that transaction is still alive after 3 seconds
    sleep(3.0)
    assert exists(f"//sys/transactions/{tx}")

    # check that transaction is expired after 3 seconds
    sleep(8.0)
    assert not exists(f"//sys/transactions/{tx}")


def test_ping() -> None:
    tx = start_transaction(timeout=3000)

    sleep(1)
    assert exists("//sys/transactions/" + tx)
    ping_transaction(tx)

    sleep(2)
    assert exists("//sys/transactions/" + tx)


def test_expire_outer() -> None:
    tx_outer = start_transaction(timeout=3000)
    tx_inner = start_transaction(tx=tx_outer)

    sleep(1)
    assert exists("//sys/transactions/" + tx_inner)
    assert exists("//sys/transactions/" + tx_outer)
    ping_transaction(tx_inner)

    sleep(3.5)
    # check that outer tx expired (and therefore inner was aborted)
    assert not exists("//sys/transactions/" + tx_inner)
    assert not exists("//sys/transactions/" + tx_outer)


def test_ping_ancestors() -> None:
    tx_outer = start_transaction(timeout=3000)
    tx_inner = start_transaction(tx=tx_outer)

    sleep(1)
    assert exists("//sys/transactions/" + tx_inner)
    assert exists("//sys/transactions/" + tx_outer)
    ping_transaction(tx_inner, ping_ancestor_txs=True)

    sleep(2)
    # check that all tx are still alive
    assert exists("//sys/transactions/" + tx_inner)
    assert exists("//sys/transactions/" + tx_outer)


def test_transaction_maps() -> None:
    tx1 = start_transaction()
    tx2 = start_transaction(tx=tx1)
    tx3 = start_transaction(tx=tx1)

    txs = get_transactions()
    assert tx1 in txs
    assert tx2 in txs
    assert tx3 in txs
    topmost_txs = get_topmost_transactions()
    assert tx1 in topmost_txs
    assert tx2 not in topmost_txs
    assert tx3 not in topmost_txs

    abort_transaction(tx2)
    txs = get_transactions()
    assert tx1 in txs
    assert tx2 not in txs
    assert tx3 in txs
    topmost_txs = get_topmost_transactions()
    assert tx1 in topmost_txs
    assert tx2 not in topmost_txs
    assert tx3 not in topmost_txs

    abort_transaction(tx1)
    txs = get_transactions()
    assert tx1 not in txs
    assert tx2 not in txs
    assert tx3 not in txs
    topmost_txs = get_topmost_transactions()
    assert tx1 not in topmost_txs
    assert tx2 not in topmost_txs
    assert tx3 not in topmost_txs


def test_revision1() -> None:
    set("//tmp/a", "b")
    r1 = get("//tmp/a/@revision")

    set("//tmp/a2", "b2")
    r2 = get("//tmp/a/@revision")
    assert r2 == r1


def test_revision2() -> None:
    r1 = get("//tmp/@revision")

    set("//tmp/a", "b")
    r2 = get("//tmp/@revision")
    assert r2 > r1


def test_revision4() -> None:
    r1 = get("//sys/@current_commit_revision")
    set("//tmp/t", 1)
    r2 = get("//tmp/t/@revision")
    assert r1 <= r2
    remove("//tmp/t")
    r3 = get("//sys/@current_commit_revision")
    assert r2 < r3


def test_title() -> None:
    tx = start_transaction(attributes={"title": "My title"})
    assert get(f"#{tx}/@title") == "My title"


def test_custom_attr() -> None:
    tx = start_transaction(attributes={"myattr": "myvalue"})
    assert get(f"#{tx}/@myattr") == "myvalue"


def test_update_attr() -> None:
    tx = start_transaction()
    set(f"#{tx}/@myattr", "myvalue")
    assert get(f"#{tx}/@myattr") == "myvalue"


def test_prerequisite_transactions() -> None:
    tx_a = start_transaction()
    tx_b = start_transaction(prerequisite_transaction_ids=[tx_a])

    assert exists("//sys/transactions/" + tx_a)
    assert exists("//sys/transactions/" + tx_b)

    assert get(f"//sys/transactions/{tx_b}/@prerequisite_transaction_ids") == [tx_a]
    assert get(f"//sys/transactions/{tx_a}/@dependent_transaction_ids") == [tx_b]

    ping_transaction(tx_a)
    ping_transaction(tx_b)

    abort_transaction(tx_a)

    assert not exists("//sys/transactions/" + tx_a)
    assert not exists("//sys/transactions/" + tx_b)


def test_prerequisite_tx_read_requests() -> None:
    good_tx = start_transaction()
    bad_tx = "a-b-c-d"

    get("//tmp/@id", prerequisite_transaction_ids=[good_tx])
    ls("//tmp/@", prerequisite_transaction_ids=[good_tx])
    exists("//tmp/@id", prerequisite_transaction_ids=[good_tx])

    with pytest.raises(YtError):
        get("//tmp/@id", prerequisite_transaction_ids=[bad_tx])
    with pytest.raises(YtError):
        ls("//tmp/@", prerequisite_transaction_ids=[bad_tx])
    with pytest.raises(YtError):
        exists("//tmp/@id", prerequisite_transaction_ids=[bad_tx])


def test_prerequisite_tx_write_requests() -> None:
    good_tx = start_transaction()
    bad_tx = "a-b-c-d"

    create("table", "//tmp/t1", prerequisite_transaction_ids=[good_tx])
    set("//tmp/@some_attr", "some_value", prerequisite_transaction_ids=[good_tx])
    remove("//tmp/t1", prerequisite_transaction_ids=[good_tx])

    with pytest.raises(YtError):
        create("table", "//tmp/t2", prerequisite_transaction_ids=[bad_tx])
    with pytest.raises(YtError):
        set("//tmp/@some_attr", "some_value", prerequisite_transaction_ids=[bad_tx])
    create("table", "//tmp/t3")
    with pytest.raises(YtError):
        remove("//tmp/t3", prerequisite_transaction_ids=[bad_tx])


def test_prerequisite_transactions_on_commit() -> None:
    tx_a = start_transaction()
    tx_b = start_transaction()

    with pytest.raises(YtError):
        commit_transaction(tx_b, prerequisite_transaction_ids=["a-b-c-d"])

    # Failing to commit a transaction with prerequisites provokes its abort.
    wait(lambda: not exists("//sys/transactions/" + tx_b))

    tx_c = start_transaction()
    commit_transaction(tx_c, prerequisite_transaction_ids=[tx_a])


def test_transaction_depth() -> None:
    tx1 = start_transaction()
    tx2 = start_transaction(tx=tx1)
    tx3 = start_transaction(tx=tx2)
    assert get(f"#{tx1}/@depth") == 0
    assert get(f"#{tx2}/@depth") == 1
    assert get(f"#{tx3}/@depth") == 2


def test_transaction_depth_limit() -> None:
    """Ported with the default ``max_transaction_depth`` (32) instead of setting it to 5 through
    ``//sys/@config`` (not modelled here): 33 nested transactions start, the 34th fails."""
    tx = None
    for _ in range(33):
        if tx is None:
            tx = start_transaction()
        else:
            tx = start_transaction(tx=tx)
    with raises_yt_error("Transaction depth limit reached", code=11002):
        start_transaction(tx=tx)


def test_zero_tx_id() -> None:
    assert not exists("//sys/transactions/0-0-0-0")
    assert not exists("//sys/transactions/0-0-0-0/@")
    with pytest.raises(YtError):
        get("//sys/transactions/0-0-0-0")
    with pytest.raises(YtError):
        get("//sys/transactions/0-0-0-0/@")

    # Zero guid is often treated as a null transaction ID and thus
    # should be handled as a special case.
    assert not exists("#0-0-0-0")
    assert not exists("#0-0-0-0/@")
    with pytest.raises(YtError):
        get("#0-0-0-0")
    with pytest.raises(YtError):
        get("#0-0-0-0/@")


def test_bad_tx_id() -> None:
    assert not exists("//sys/transactions/a-b-c-d")
    assert not exists("//sys/transactions/a-b-c-d/@")
    with pytest.raises(YtError):
        get("//sys/transactions/a-b-c-d")
        get("//sys/transactions/a-b-c-d/@")

    # Unlike zero guid above, any random guid is not a valid transaction (or,
    # indeed, any object) ID, and it's not correct to check for its existence.
    with pytest.raises(YtError):
        exists("#a-b-c-d")
    with pytest.raises(YtError):
        exists("#a-b-c-d/@")
    with pytest.raises(YtError):
        get("#a-b-c-d")
    with pytest.raises(YtError):
        get("#a-b-c-d/@")


def test_malformed_object_id() -> None:
    """Not a YTsaurus test: an id that does not parse is an error for ``exists`` too (``TGuid::FromString``:
    ``Error parsing GUID``), as on a cluster; so is a key of ``//sys/transactions`` that is no id
    (``test_foreign_transaction_map`` checks the message on ``//sys/foreign_transactions``)."""
    with raises_yt_error("Error parsing GUID"):
        exists("#not-an-id")
    with raises_yt_error("Error parsing GUID"):
        get("//sys/transactions/1---4")
