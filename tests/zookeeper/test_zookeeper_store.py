"""ZooKeeper-specific promises of ``spyt_queue.zookeeper.store``: the URI, the layout old Kafka tooling reads,
ACLs and digest authentication, and outages (the shared contract is in ``test_store_conformance.py``)."""

from __future__ import annotations

import uuid

import pytest

from spyt_queue.committer import Committer
from spyt_queue.errors import ConsumerConflictError, OptionError, SpytQueueError
from spyt_queue.zookeeper.store import ZooKeeperStore, decode_component, encode_component, from_uri, parse_uri


@pytest.fixture
def kazoo(zookeeper):
    """A plain kazoo client on the session server, playing "another tool"."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper.hosts, timeout=15)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def root() -> str:
    return f"/zk-store-tests/{uuid.uuid4().hex[:10]}"


# --------------------------------------------------------------------------------------------------- URI


def test_uri_hosts_root_and_defaults() -> None:
    parsed = parse_uri("zookeeper://zk1,zk2:2182/spyt/my-query")
    assert parsed["hosts"] == "zk1:2181,zk2:2182"
    assert parsed["root"] == "/spyt/my-query"
    assert parsed["layout"] == "source" and parsed["acl"] is None and parsed["auth"] is None
    assert parse_uri("zookeeper://zk")["root"] == "/consumers"
    assert parse_uri("zookeeper://zk/")["root"] == "/consumers"
    assert parse_uri("zookeeper://zk:2181/a/b/?layout=kafka&timeout=2.5") | {"acl": None} == {
        "hosts": "zk:2181",
        "root": "/a/b",
        "layout": "kafka",
        "acl": None,
        "auth": None,
        "timeout": 2.5,
    }


def test_uri_credentials_and_acls() -> None:
    parsed = parse_uri("zookeeper://spyt:p%40ss@zk/r?acl=creator;world:anyone:r&acl=ip:10.0.0.0/8:all")
    assert parsed["auth"] == [("digest", "spyt:p@ss")]
    entries = [(a.id.scheme, a.id.id, a.perms) for a in parsed["acl"]]
    assert entries == [("auth", "", 31), ("world", "anyone", 1), ("ip", "10.0.0.0/8", 31)]


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("kudu://zk/a", "expected 'zookeeper://"),
        ("zookeeper:///a", "no ZooKeeper host"),
        ("zookeeper://zk:abc/a", "not 'host' or 'host:port'"),
        ("zookeeper://zk/a//b", "empty, '.' or '..' segment"),
        ("zookeeper://zk/a/../b", "empty, '.' or '..' segment"),
        ("zookeeper://zk/a?chroot=/x", "unknown ZooKeeper URI parameter"),
        ("zookeeper://zk/a?layout=storm", "layout must be one of"),
        ("zookeeper://zk/a?timeout=soon", "timeout must be a number"),
        ("zookeeper://zk/a?acl=world:anyone:rx", "scheme:id:perms"),
        ("zookeeper://zk/a?acl=creator", "needs credentials"),
    ],
)
def test_bad_uris_name_the_option(uri: str, message: str) -> None:
    with pytest.raises(OptionError, match=r"offsets\.store") as raised:
        parse_uri(uri)
    assert message in str(raised.value)


@pytest.mark.parametrize("text", ["0", "events:3", "yt:/home/q#1-2", ".", "..", "a%2Fb", "é/ü", " x "])
def test_znode_names_are_reversible_and_valid(text: str) -> None:
    name = encode_component(text)
    assert decode_component(name) == text
    assert "/" not in name and name not in (".", "..") and name.isascii() and name.isprintable()


def test_describe_names_the_place_not_the_password() -> None:
    store = from_uri("zookeeper://spyt:secret@zk:2181/spyt/q", "kafka:subscribe=events", "enricher")
    assert store.describe() == "zookeeper://zk:2181/spyt/q/enricher/offsets/kafka:subscribe=events"
    assert "secret" not in store.describe()


# ------------------------------------------------------------------------------------------------ layout


def test_layout_one_znode_per_partition_with_the_decimal_next_offset(zookeeper, kazoo, root: str) -> None:
    store = from_uri(zookeeper.uri(f"{root}/spyt/my-query"), "yt:/home/me/q#1-2-3-4", "//home/me/consumer")
    try:
        store.advance({"0": None, "1": None}, {"0": 120, "1": 98})
    finally:
        store.close()
    base = f"{root}/spyt/my-query/%2F%2Fhome%2Fme%2Fconsumer/offsets/yt:%2Fhome%2Fme%2Fq#1-2-3-4"
    assert sorted(kazoo.get_children(base)) == ["0", "1"]
    assert kazoo.get(f"{base}/0")[0] == b"120" and kazoo.get(f"{base}/1")[0] == b"98"


def test_kafka_layout_is_what_old_kafka_tooling_reads_and_writes(zookeeper, kazoo, root: str) -> None:
    kazoo.create(f"{root}/consumers/enricher/offsets/events/0", b"17", makepath=True)  # an old consumer's commit
    store = from_uri(zookeeper.uri(f"{root}/consumers?layout=kafka"), "kafka:subscribe=events", "enricher")
    try:
        assert store.committed() == {"events:0": 17}
        store.advance({"events:0": 17, "events:3": None}, {"events:0": 20, "events:3": 42})
        assert kazoo.get(f"{root}/consumers/enricher/offsets/events/3")[0] == b"42"
        assert kazoo.get(f"{root}/consumers/enricher/offsets/events/0")[0] == b"20"
        with pytest.raises(Exception, match="layout=kafka keeps Kafka partitions"):
            store.advance({"0": None}, {"0": 1})  # a YT tablet key has no topic
    finally:
        store.close()


# ---------------------------------------------------------------------------------------- ACL and auth


def test_acl_and_digest_auth_from_the_uri(zookeeper, kazoo, root: str) -> None:
    from kazoo.exceptions import NoAuthError

    uri = zookeeper.uri(f"{root}/secure?acl=creator;world:anyone:r").replace("://", "://spyt:s3cret@")
    owner = from_uri(uri, "src", "g")
    stranger = from_uri(zookeeper.uri(f"{root}/secure"), "src", "g")
    try:
        owner.advance({"0": None}, {"0": 5})
        owner.advance({"0": 5}, {"0": 6})
        path = owner.path_of("0")
        acls = {(a.id.scheme, a.perms) for a in kazoo.get_acls(path)[0]}
        assert acls == {("digest", 31), ("world", 1)}
        assert stranger.committed() == {"0": 6}  # world-readable
        with pytest.raises(SpytQueueError, match="refused to write the committed positions") as raised:
            stranger.advance({"0": 6}, {"0": 7})
        assert isinstance(raised.value.__cause__, NoAuthError)
        assert "offsets.store.user, offsets.store.password" in str(raised.value)
        assert not stranger.is_transient(raised.value) and not isinstance(raised.value, ConsumerConflictError)
        assert owner.committed() == {"0": 6}
    finally:
        owner.close()
        stranger.close()


# ------------------------------------------------------------------------------------------------ outages


def test_unreachable_server_is_transient() -> None:
    from integration.kafka_broker import _free_ports

    store = ZooKeeperStore(f"127.0.0.1:{_free_ports(1, '127.0.0.1')[0]}", "/r", "src", "g", timeout=1)
    with pytest.raises(Exception) as raised:
        store.committed()
    assert store.is_transient(raised.value)
    store.close()


def test_outage_is_transient_and_the_committer_gets_through_after_it(tmp_path) -> None:
    from integration.zookeeper import ZooKeeperServer

    server = ZooKeeperServer(work_dir=tmp_path / "zk")
    server.start()
    store = ZooKeeperStore(server.hosts, "/r", "src", "g", timeout=4)
    try:
        store.advance({"0": None}, {"0": 5})
        server.stop()  # a given work_dir keeps the data
        with pytest.raises(Exception) as raised:
            store.advance({"0": 5}, {"0": 6})
        assert store.is_transient(raised.value)
        server = ZooKeeperServer(server.port, work_dir=tmp_path / "zk")
        server.start()
        committer = Committer(store, retries=30, backoff_seconds=0.2, max_backoff_seconds=1.0)
        committer.remember({"0": 5})
        assert committer.advance_to({"0": 6}) is True
        assert store.committed() == {"0": 6}
    finally:
        store.close()
        server.stop()


def test_a_store_survives_pickling_after_use(zookeeper) -> None:
    """Spark pickles the stream reader (and its store) to ship it between Python processes."""
    import pickle

    from spyt_queue.zookeeper.store import ZooKeeperStore

    store = ZooKeeperStore.from_uri(zookeeper.uri("/pickled"), "yt://q#1", "g")
    try:
        store.advance({"0": None}, {"0": 3})
        copy = pickle.loads(pickle.dumps(store))
        try:
            assert copy.committed() == {"0": 3}
        finally:
            copy.close()
    finally:
        store.close()
