"""The kudu:// offset store beyond the shared conformance suite: URI, retention, and a writer stale past retention."""

from __future__ import annotations

import uuid

import pytest

from spyt_queue.errors import ConsumerConflictError, OptionError
from spyt_queue.sinks.kudu.store import KuduStore, parse_uri
from spyt_queue.stores import registry
from spyt_queue.stores.commit_log import PRUNE_EVERY


def test_uri_is_parsed_without_connecting() -> None:
    assert parse_uri("kudu://m1:7051,m2/offsets?keep=5&create=false&buckets=4") == {
        "masters": "m1:7051,m2:7051",
        "table": "offsets",
        "keep": 5,
        "create": False,
        "buckets": 4,
    }
    registry.check_uri("kudu://127.0.0.1:1/t")  # no server there: nothing is contacted


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("kudu://m:7051", "table name"),
        ("kudu://m:x/t", "masters"),
        ("kudu://m/t?kep=1", "unknown Kudu URI parameter"),
        ("kudu://m/t?buckets=1", "buckets >= 2"),
        ("kudu://m/t?create=maybe", "create must be true or false"),
    ],
)
def test_bad_uris_name_the_option(uri: str, message: str) -> None:
    with pytest.raises(OptionError, match=message) as raised:
        registry.check_uri(uri)
    assert raised.value.option == "offsets.store"


def test_store_opened_from_the_registry_round_trips(kudu) -> None:
    uri = kudu.uri(f"offsets_{uuid.uuid4().hex[:8]}")
    store = registry.open_store(uri, "yt://q", "g")
    assert isinstance(store, KuduStore)
    store.advance({"0": None}, {"0": 3})
    assert registry.open_store(uri, "yt://q", "g").committed() == {"0": 3}


def test_missing_table_without_create_is_an_error_naming_it(kudu) -> None:
    name = f"absent_{uuid.uuid4().hex[:8]}"
    store = registry.open_store(kudu.uri(name) + "?create=false", "s", "g")
    assert store.committed() == {}
    with pytest.raises(Exception, match=name):
        store.advance({"0": None}, {"0": 1})


def test_old_generations_are_pruned_and_the_head_kept(kudu) -> None:
    store = KuduStore(kudu.master_addresses, f"offsets_{uuid.uuid4().hex[:8]}", "s", "g", keep=4)
    for i in range(PRUNE_EVERY):
        store.advance({"0": i or None}, {"0": i + 1})
    history = store.history(limit=100)
    assert history[0] == (PRUNE_EVERY, {"0": PRUNE_EVERY})
    assert [g for g, _ in history] == list(range(PRUNE_EVERY, PRUNE_EVERY - 4, -1))  # the newest keep=4


def test_writer_stale_past_retention_is_refused_and_leaves_no_row(kudu) -> None:
    """Its generation n+1 was pruned, so its INSERT succeeds: the head check must still refuse it."""
    table = f"offsets_{uuid.uuid4().hex[:8]}"
    stale = KuduStore(kudu.master_addresses, table, "s", "g", keep=2)
    stale.advance({"0": None}, {"0": 1})  # generation 1
    live = KuduStore(kudu.master_addresses, table, "s", "g", keep=2)
    for i in range(1, PRUNE_EVERY):
        live.advance({"0": i}, {"0": i + 1})  # generations 2..16; 16 prunes generations <= 14
    assert [g for g, _ in live.history(100)] == [16, 15]
    real_newest = stale.newest
    stale.newest = lambda: (1, {"0": 1})  # type: ignore[method-assign] # it read generation 1 long ago
    with pytest.raises(ConsumerConflictError, match="generation 16 exists"):
        stale.advance({"0": 1}, {"0": 99})
    stale.newest = real_newest  # type: ignore[method-assign]
    assert [g for g, _ in live.history(100)] == [16, 15]
    assert live.committed() == {"0": PRUNE_EVERY}
