"""The HBase offset store beyond the shared contract (tests/contract/stores/): Cloudera's layout defects, fixed, on a
real HBase (the session fixture ``hbase``)."""

from __future__ import annotations

import json
import uuid

import pytest

from spyt_queue.errors import OptionError, SpytQueueError
from spyt_queue.sinks.hbase import store as hbase_store
from spyt_queue.sinks.hbase.store import HBaseStore, commit_row_key, parse_uri
from spyt_queue.stores import commit_log
from spyt_queue.stores.registry import check_uri, open_store


def table_name() -> str:
    return f"offsets_{uuid.uuid4().hex[:10]}"


def test_row_keys_sort_newest_first_across_digit_counts() -> None:
    """Cloudera's unpadded keys put commit 9 after commit 10; fixed-width reversed keys sort newest first."""
    keys = [commit_row_key(b"g/s/", n) for n in (1, 9, 10, 11, 99, 100, 12345)]
    assert sorted(keys) == list(reversed(keys))
    assert len({len(k) for k in keys}) == 1


def test_newest_commit_wins_past_ten_commits(hbase) -> None:
    store = HBaseStore(hbase.thrift_host, hbase.thrift_port, table_name(), "yt://q", "g")
    for n in range(1, 13):
        store.advance({"0": n - 1 if n > 1 else None}, {"0": n})
    fresh = HBaseStore(hbase.thrift_host, hbase.thrift_port, store.table, "yt://q", "g")
    assert fresh.committed() == {"0": 12}
    assert [c for c, _, _ in fresh.history(limit=3)] == [12, 11, 10]
    store.close()
    fresh.close()


def test_each_commit_row_holds_every_partition(hbase) -> None:
    """One row per commit, all partitions in it (partitions the advance did not move included)."""
    store = HBaseStore(hbase.thrift_host, hbase.thrift_port, table_name(), "yt://q", "g")
    store.advance({"0": None, "1": None}, {"0": 5, "1": 7})
    store.advance({"1": 7}, {"1": 9})
    rows = list(store.connection().table(store.table).scan(row_prefix=store.prefix))
    assert [json.loads(cells[store.column])["positions"] for _, cells in rows] == [
        {"0": 5, "1": 9},
        {"0": 5, "1": 7},
    ]
    store.close()


def test_retention_deletes_old_commits_only_and_sets_no_ttl(hbase, monkeypatch: pytest.MonkeyPatch) -> None:
    """History is bounded by deleting rows older than ``keep`` commits: the newest ones are never rewritten, and the
    family has no TTL (Cloudera's TTL expires the newest offsets of a job down longer than it)."""
    monkeypatch.setattr(commit_log, "PRUNE_EVERY", 4)
    store = HBaseStore(hbase.thrift_host, hbase.thrift_port, table_name(), "yt://q", "g", keep=5)
    for n in range(1, 21):
        store.advance({"0": n - 1 if n > 1 else None}, {"0": n})
    table = store.connection().table(store.table)
    commits = [hbase_store._TOP - int(row[len(store.prefix) :]) for row, _ in table.scan(row_prefix=store.prefix)]
    assert commits == list(range(20, 15, -1))  # pruned at commit 20: 16..20 kept
    family = table.families()[store.family.encode()]
    assert family["time_to_live"] in (-1, 2147483647) and family["max_versions"] == 1
    store.close()


def test_missing_family_is_an_error_naming_table_and_family(hbase) -> None:
    table = table_name()
    conn = hbase.connection()
    conn.create_table(table, {"data": {}})
    conn.close()
    store = HBaseStore(hbase.thrift_host, hbase.thrift_port, table, "yt://q", "g")
    with pytest.raises(SpytQueueError, match=f"{table}.*no column family 'o'"):
        store.advance({"0": None}, {"0": 1})
    store.close()


def test_missing_table_with_create_false_is_an_error_naming_it(hbase) -> None:
    table = table_name()
    store = open_store(hbase.uri(table) + "?create=false", "yt://q", "g")
    assert store.committed() == {}  # nothing committed yet: readable (ytqueue status)
    with pytest.raises(SpytQueueError, match=f"table '{table}' does not exist"):
        store.advance({"0": None}, {"0": 1})
    store.close()


def test_uri_parsing_and_errors() -> None:
    assert parse_uri("hbase://h:9091/offs?keep=10&family=f&create=false")["port"] == 9091
    assert parse_uri("hbase://h/offs")["port"] == 9090
    check_uri("hbase://h:9090/t")
    for bad in ("hbase://h:9090/", "hbase://h:x/t", "hbase://h:9090/t?ttl=3", "hbase://h/t?keep=-1", "hbase://h/a/b"):
        with pytest.raises(OptionError, match=r"offsets\.store"):
            parse_uri(bad)


def test_reads_survive_a_connection_the_gateway_closed_while_idle(hbase) -> None:
    """A store idle between batches longer than the gateway's 60 s read timeout finds its connection closed: reads
    (here the check of the newest commit a restart makes) reconnect and answer instead of failing the query."""
    from .helpers import close_from_the_gateway_side

    store = HBaseStore(hbase.thrift_host, hbase.thrift_port, table_name(), "yt://q", "g")
    store.advance({"0": None}, {"0": 5})
    close_from_the_gateway_side(store.connection().transport.sock)
    assert store.committed() == {"0": 5}
    close_from_the_gateway_side(store.connection().transport.sock)
    assert [c for c, _, _ in store.history()] == [1]
    store.close()
