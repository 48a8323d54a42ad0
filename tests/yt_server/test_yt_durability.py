"""Conformance (LOCAL ONLY): durability of committed state across a crash of the embedded server.

YTsaurus persists every committed tablet transaction (Hydra changelogs + snapshots,
``dynamic-tables/overview.md`` / ``transactions.md``): after a crash, committed rows, consumer offsets,
trims, registrations and Cypress attributes are there, and tablet transactions that were not
committed are gone (their ids are unknown: 11000 NoSuchTransaction). A real cluster cannot be
SIGKILLed from a test, so these tests need the embedded server; each starts its own server on a
private data directory so the shared session server is not disturbed.
"""

from __future__ import annotations

import os

import pytest
from conformance import (
    NO_SUCH_TRANSACTION,
    REAL_CLUSTER,
    configure_client,
    consumer_offsets,
    create_consumer,
    create_queue,
    create_sorted_table,
    insert,
    pull,
    register_consumer,
    tablet_infos,
    wait_tablet_state,
)
from yt.wrapper.errors import YtResponseError

pytestmark = pytest.mark.skipif(
    REAL_CLUSTER, reason=f"YT_PROXY={os.environ.get('YT_PROXY')} is a real cluster; needs the embedded server"
)


def _client(server):
    from spyt_queue.yt.client import make_yt_client

    return configure_client(make_yt_client(server.proxy))


@pytest.fixture
def server_factory(tmp_path):
    """Start ``LocalYtServer`` instances on one private data directory; stop all of them at the end."""
    from spyt_queue.local import LocalYtServer

    started = []

    def start():
        server = LocalYtServer(data_dir=tmp_path / "data")
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        try:
            server.stop()
        except Exception:
            pass


def test_committed_state_survives_sigkill(server_factory):
    """Insert rows, advance a consumer, commit a transaction, trim, register, set an attribute; leave one
    transaction open; SIGKILL; restart on the same data dir: everything committed is there (same
    ``$row_index`` numbering, offsets, trimmed count), the open transaction's writes are not, and its
    id is unknown (11000)."""
    server = server_factory()
    yt = _client(server)
    root = "//tmp/durability"
    yt.create("map_node", root, recursive=True)
    queue = create_queue(yt, f"{root}/q", tablet_count=2)
    consumer = create_consumer(yt, f"{root}/c")
    table = create_sorted_table(yt, f"{root}/s")
    register_consumer(yt, queue, consumer, vital=True)
    yt.set(f"{root}/q/@my_attribute", {"answer": 42})

    insert(yt, queue, [{"$tablet_index": t, "data": f"{t}:{i}"} for t in (0, 1) for i in range(5)])
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=3)
    yt.trim_rows(queue, 1, 2)

    committed = yt.start_transaction(type="tablet", sticky=True)
    with yt.Transaction(transaction_id=committed, ping=False):
        insert(yt, table, [{"key": 1, "value": "committed"}])
        insert(yt, queue, [{"$tablet_index": 0, "data": "0:5"}])
        yt.advance_consumer(consumer, queue, partition_index=1, old_offset=0, new_offset=2)
    yt.commit_transaction(committed)

    open_tx = yt.start_transaction(type="tablet", sticky=True)
    with yt.Transaction(transaction_id=open_tx, ping=False):
        insert(yt, table, [{"key": 2, "value": "uncommitted"}])
        insert(yt, queue, [{"$tablet_index": 1, "data": "lost"}])
        yt.advance_consumer(consumer, queue, partition_index=0, old_offset=3, new_offset=5)

    server.kill()

    server = server_factory()
    yt = _client(server)
    wait_tablet_state(yt, queue, "mounted")
    assert yt.get(f"{root}/q/@my_attribute") == {"answer": 42}
    assert yt.get(f"{queue}/@tablet_count") == 2

    assert [(r["$row_index"], r["data"]) for r in pull(yt, queue, 0, 0)] == [(i, f"0:{i}") for i in range(6)]
    assert [(r["$row_index"], r["data"]) for r in pull(yt, queue, 2, 1)] == [(i, f"1:{i}") for i in range(2, 5)]
    infos = tablet_infos(yt, queue, 2)
    assert [(i["total_row_count"], i["trimmed_row_count"]) for i in infos] == [(6, 0), (5, 2)]

    assert consumer_offsets(yt, consumer, queue) == {0: 3, 1: 2}
    assert [r["value"] for r in yt.lookup_rows(table, [{"key": 1}, {"key": 2}])] == ["committed"]
    assert any(str(r["consumer_path"]) == consumer for r in yt.list_queue_consumer_registrations(queue_path=queue))
    assert len(list(yt.pull_consumer(consumer, queue, offset=0, partition_index=0))) == 6

    with pytest.raises(YtResponseError) as info:
        yt.commit_transaction(open_tx)
    assert info.value.contains_code(NO_SUCH_TRANSACTION), info.value

    insert(yt, queue, [{"$tablet_index": 1, "data": "1:5"}])
    assert pull(yt, queue, 5, 1) == [{"$tablet_index": 1, "$row_index": 5, "data": "1:5"}]


def test_graceful_stop_and_restart_keeps_state(server_factory):
    """A clean ``stop()`` and a new server on the same data dir keep tables and their mount state."""
    server = server_factory()
    yt = _client(server)
    yt.create("map_node", "//tmp/graceful", recursive=True)
    queue = create_queue(yt, "//tmp/graceful/q")
    unmounted = create_sorted_table(yt, "//tmp/graceful/unmounted", mount=False)
    insert(yt, queue, [{"data": "a"}, {"data": "b"}])
    server.stop()

    server = server_factory()
    yt = _client(server)
    assert yt.get(f"{queue}/@tablet_state") == "mounted"
    assert yt.get(f"{unmounted}/@tablet_state") == "unmounted"
    assert [r["data"] for r in pull(yt, queue, 0)] == ["a", "b"]
