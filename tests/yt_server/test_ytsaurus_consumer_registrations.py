"""YTsaurus's ``yt/yt/tests/integration/queues/test_consumer_registrations.py``, ported to one node.

Each test keeps its YTsaurus name, calls, arguments, expected values and error patterns; ``yt_commands_shim``
stands in for ``yt_commands`` (``//tmp`` is a fresh directory per test, ``primary`` this cluster's name). The
registration table of the original is the cluster's own registration store here, and registrations take effect at
once, so each ``wait(...)`` holds on its first check.

Ported (``TestConsumerRegistrations``, with ``_create_simple_registration_table``): ``test_list_registrations``,
``test_list_registrations_for_symlinks``, ``test_symlink_registrations`` (its plain-table pair; the replicated and
chaos-replicated pairs need replicated tables), ``test_normalize_cluster`` (``NormalizeClusterName`` chops
``.yt.yandex.net``). ``TestDataApi``: ``test_pull_queue`` (table and symlink),
``test_pull_consumer`` (table and symlink), ``test_advance_consumer`` (table and symlink, with and without
``meta``).

Skipped, with the reason:

* ``test_api_and_permissions`` - users and ACLs (``create_user``, ``@acl``, ``authenticated_user``) and several
  clusters; the server has no ACLs.
* ``test_write_availability``, ``test_read_availability`` - several clusters with tablet cells disabled and RPC
  proxies restarted (replicated/chaos registration tables).
* ``test_multicluster_symlink_registrations`` - tables and links created on other clusters
  (``remote_0``/``remote_1``).
* the ``_create_replicated_registration_table``/``_create_chaos_registration_table`` parametrisations - replicated
  and chaos tables.
* ``TestDataApi`` ``test_pull_replicated_queue``, ``test_pull_chaos_replicated_queue``,
  ``test_pull_replicated_consumer``, ``test_pull_chaos_replicated_consumer`` - replicated/chaos tables, users and
  ACLs.
"""

from __future__ import annotations

import builtins

import pytest
import yt.yson as yson
import yt_commands_shim as ytc
from yt_commands_shim import (
    advance_consumer,
    commit_transaction,
    create,
    insert_rows,
    link,
    list_queue_consumer_registrations,
    pull_consumer,
    pull_queue,
    raises_yt_error,
    register_queue_consumer,
    remove,
    select_rows,
    start_transaction,
    sync_mount_table,
    unregister_queue_consumer,
    wait,
)


@pytest.fixture(autouse=True)
def _bind(yt, yt_root: str) -> None:
    ytc.bind(yt, yt_root)


class QueueConsumerRegistration:
    def __init__(self, queue_cluster, queue_path, consumer_cluster, consumer_path, vital, partitions=None):
        self.key = (queue_cluster, queue_path, consumer_cluster, consumer_path)
        self.value = (vital, partitions)

    def __eq__(self, other):
        return (self.key, self.value) == (other.key, other.value)

    def __repr__(self):
        return str((self.key, self.value))

    def __hash__(self):
        return hash(self.key + self.value)

    @staticmethod
    def _normalize_partitions(partitions):
        if partitions is None:
            return partitions
        if partitions == yson.YsonEntity():
            return None
        return tuple(partitions)

    @classmethod
    def from_list_registrations(cls, r):
        return cls(
            r["queue_path"].attributes["cluster"],
            str(r["queue_path"]),
            r["consumer_path"].attributes["cluster"],
            str(r["consumer_path"]),
            r["vital"],
            cls._normalize_partitions(r["partitions"]),
        )


def listed_registrations_are_equal(listed_registrations, expected_registrations):
    expected_registrations = {
        r if isinstance(r, QueueConsumerRegistration) else QueueConsumerRegistration(*r) for r in expected_registrations
    }
    actual_registrations = {QueueConsumerRegistration.from_list_registrations(r) for r in listed_registrations}
    return actual_registrations == expected_registrations


def registrations_are(expected_registrations):
    """The cluster's registrations (``_registrations_are`` over the single registration store)."""
    return listed_registrations_are_equal(list_queue_consumer_registrations(), expected_registrations)


class TestConsumerRegistrations:
    def test_list_registrations(self):
        attrs = {"dynamic": True, "schema": [{"name": "a", "type": "string"}]}
        create("table", "//tmp/q1", attributes=attrs)
        create("table", "//tmp/q2", attributes=attrs)
        create("table", "//tmp/c1", attributes=attrs)
        create("table", "//tmp/c2", attributes=attrs)

        register_queue_consumer("//tmp/q1", "//tmp/c1", vital=True)
        register_queue_consumer("//tmp/q1", "//tmp/c2", vital=False)
        register_queue_consumer("//tmp/q2", "//tmp/c1", vital=True, partitions=[1, 5, 4, 3])

        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(queue_path="//tmp/q1", consumer_path="//tmp/c1"),
                [("primary", "//tmp/q1", "primary", "//tmp/c1", True)],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(queue_path="//tmp/q1"),
                [
                    ("primary", "//tmp/q1", "primary", "//tmp/c1", True),
                    ("primary", "//tmp/q1", "primary", "//tmp/c2", False),
                ],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(consumer_path="//tmp/c1"),
                [
                    ("primary", "//tmp/q1", "primary", "//tmp/c1", True),
                    ("primary", "//tmp/q2", "primary", "//tmp/c1", True, (1, 5, 4, 3)),
                ],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(consumer_path="primary://tmp/c2"),
                [("primary", "//tmp/q1", "primary", "//tmp/c2", False)],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(),
                [
                    ("primary", "//tmp/q1", "primary", "//tmp/c1", True),
                    ("primary", "//tmp/q1", "primary", "//tmp/c2", False),
                    ("primary", "//tmp/q2", "primary", "//tmp/c1", True, (1, 5, 4, 3)),
                ],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(queue_path="remote_0://tmp/q1"), []
            )
        )

        # tests for paths with attributes
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(
                    queue_path="<append=true>//tmp/q1[#10:#100]", consumer_path="<append=true>//tmp/c1[#20:#200]"
                ),
                [("primary", "//tmp/q1", "primary", "//tmp/c1", True)],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(queue_path="<append=true>//tmp/q1[#10:#100]"),
                [
                    ("primary", "//tmp/q1", "primary", "//tmp/c1", True),
                    ("primary", "//tmp/q1", "primary", "//tmp/c2", False),
                ],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(consumer_path="<append=true>//tmp/c1[#20:#200]"),
                [
                    ("primary", "//tmp/q1", "primary", "//tmp/c1", True),
                    ("primary", "//tmp/q2", "primary", "//tmp/c1", True, (1, 5, 4, 3)),
                ],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(consumer_path="<append=true>primary://tmp/c2[#20:#200]"),
                [("primary", "//tmp/q1", "primary", "//tmp/c2", False)],
            )
        )

        unregister_queue_consumer("//tmp/q1", "//tmp/c1")
        unregister_queue_consumer("//tmp/q1", "//tmp/c2")
        unregister_queue_consumer("//tmp/q2", "//tmp/c1")

        wait(lambda: listed_registrations_are_equal(list_queue_consumer_registrations(), []))

    def test_list_registrations_for_symlinks(self):
        attrs = {"dynamic": True, "schema": [{"name": "a", "type": "string"}]}
        create("table", "//tmp/q1", attributes=attrs)
        create("table", "//tmp/q2", attributes=attrs)
        create("table", "//tmp/c1", attributes=attrs)
        create("table", "//tmp/c2", attributes=attrs)

        link("//tmp/q1", "//tmp/q1-link")
        link("//tmp/q2", "//tmp/q2-link")
        link("//tmp/c1", "//tmp/c1-link")
        link("//tmp/c2", "//tmp/c2-link")

        register_queue_consumer("//tmp/q1-link", "//tmp/c1-link", vital=True)
        register_queue_consumer("//tmp/q1-link", "//tmp/c2-link", vital=False)
        register_queue_consumer("//tmp/q2-link", "//tmp/c1-link", vital=True, partitions=[1, 5, 4, 3])

        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(queue_path="//tmp/q1-link", consumer_path="//tmp/c1-link"),
                [("primary", "//tmp/q1", "primary", "//tmp/c1", True)],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(queue_path="//tmp/q1-link"),
                [
                    ("primary", "//tmp/q1", "primary", "//tmp/c1", True),
                    ("primary", "//tmp/q1", "primary", "//tmp/c2", False),
                ],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(consumer_path="//tmp/c1-link"),
                [
                    ("primary", "//tmp/q1", "primary", "//tmp/c1", True),
                    ("primary", "//tmp/q2", "primary", "//tmp/c1", True, (1, 5, 4, 3)),
                ],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(consumer_path="primary://tmp/c2-link"),
                [("primary", "//tmp/q1", "primary", "//tmp/c2", False)],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(),
                [
                    ("primary", "//tmp/q1", "primary", "//tmp/c1", True),
                    ("primary", "//tmp/q1", "primary", "//tmp/c2", False),
                    ("primary", "//tmp/q2", "primary", "//tmp/c1", True, (1, 5, 4, 3)),
                ],
            )
        )
        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(queue_path="remote_0://tmp/q1-link"), []
            )
        )

        unregister_queue_consumer("//tmp/q1-link", "//tmp/c1-link")
        unregister_queue_consumer("//tmp/q1-link", "//tmp/c2-link")
        unregister_queue_consumer("//tmp/q2-link", "//tmp/c1-link")

        wait(lambda: listed_registrations_are_equal(list_queue_consumer_registrations(), []))

    def test_symlink_registrations(self):
        create("table", "//tmp/q", attributes={"dynamic": True, "schema": TestDataApi.DEFAULT_QUEUE_SCHEMA})
        create(
            "table",
            "//tmp/c",
            attributes={
                "dynamic": True,
                "schema": ytc.CONSUMER_OBJECT_TABLE_SCHEMA,
                "treat_as_queue_consumer": True,
            },
        )

        for queue, consumer in (("//tmp/q", "//tmp/c"),):
            link(queue, f"{queue}-link")
            register_queue_consumer(f"{queue}-link", consumer, vital=True)
            wait(lambda: registrations_are({("primary", queue, "primary", consumer, True)}))  # noqa: B023
            unregister_queue_consumer(f"{queue}-link", consumer)
            wait(lambda: registrations_are(builtins.set()))

            link(consumer, f"{consumer}-link")
            register_queue_consumer(queue, f"{consumer}-link", vital=True)
            wait(lambda: registrations_are({("primary", queue, "primary", consumer, True)}))  # noqa: B023
            unregister_queue_consumer(queue, f"{consumer}-link")
            wait(lambda: registrations_are(builtins.set()))

            register_queue_consumer(f"{queue}-link", f"{consumer}-link", vital=True)
            wait(lambda: registrations_are({("primary", queue, "primary", consumer, True)}))  # noqa: B023
            unregister_queue_consumer(f"{queue}-link", f"{consumer}-link")
            wait(lambda: registrations_are(builtins.set()))

            remove(f"{queue}-link")
            remove(f"{consumer}-link")

    def test_normalize_cluster(self):
        attrs = {"dynamic": True, "schema": [{"name": "a", "type": "string"}]}
        create("table", "//tmp/q1", attributes=attrs)
        create("table", "//tmp/c1", attributes=attrs)

        register_queue_consumer(
            "<cluster=cluster.yt.yandex.net>//tmp/q1", "<cluster=cluster.yt.yandex.net>//tmp/c1", vital=True
        )

        wait(
            lambda: listed_registrations_are_equal(
                list_queue_consumer_registrations(),
                [
                    ("cluster", "//tmp/q1", "cluster", "//tmp/c1", True),
                ],
            )
        )


class TestDataApi:
    DEFAULT_QUEUE_SCHEMA = [
        {"name": "$timestamp", "type": "uint64"},
        {"name": "$cumulative_data_weight", "type": "int64"},
        {"name": "data", "type": "string"},
    ]

    @staticmethod
    def _create_queue(path, schema=None, mount=True, **kwargs):
        attributes = {
            "dynamic": True,
            "schema": schema if schema is not None else TestDataApi.DEFAULT_QUEUE_SCHEMA,
        }
        attributes.update(kwargs)
        create("table", path, attributes=attributes)
        if mount:
            sync_mount_table(path)

    @staticmethod
    def _create_consumer(path, mount=True, without_meta=False, **kwargs):
        attributes = {
            "dynamic": True,
            "schema": ytc.CONSUMER_OBJECT_TABLE_SCHEMA_WITHOUT_META
            if without_meta
            else ytc.CONSUMER_OBJECT_TABLE_SCHEMA,
            "treat_as_queue_consumer": True,
        }
        attributes.update(kwargs)
        create("table", path, attributes=attributes)
        if mount:
            sync_mount_table(path)

    @staticmethod
    def _create_symlink_queue(path):
        TestDataApi._create_queue(f"{path}-original")
        link(f"{path}-original", path)

    @staticmethod
    def _create_symlink_consumer(path, without_meta=False):
        TestDataApi._create_consumer(f"{path}-original", without_meta=without_meta)
        link(f"{path}-original", path)

    @staticmethod
    def _assert_rows_contain(actual_rows, expected_rows):
        assert len(actual_rows) == len(expected_rows)

        for actual_row, expected_row in zip(actual_rows, expected_rows, strict=True):
            assert {**actual_row, **expected_row} == actual_row

    @pytest.mark.parametrize("create_queue", ["_create_queue", "_create_symlink_queue"])
    def test_pull_queue(self, create_queue):
        getattr(self, create_queue)("//tmp/q")

        insert_rows("//tmp/q", [{"data": "foo"}])
        insert_rows("//tmp/q", [{"data": "bar"}])

        self._assert_rows_contain(
            pull_queue("//tmp/q", offset=1, partition_index=0),
            [{"$tablet_index": 0, "$row_index": 1, "data": "bar"}],
        )
        self._assert_rows_contain(
            pull_queue("//tmp/q", offset=0, partition_index=0, max_row_count=1),
            [{"$tablet_index": 0, "$row_index": 0, "data": "foo"}],
        )
        self._assert_rows_contain(
            pull_queue("//tmp/q", offset=0, partition_index=0),
            [
                {"$tablet_index": 0, "$row_index": 0, "data": "foo"},
                {"$tablet_index": 0, "$row_index": 1, "data": "bar"},
            ],
        )
        self._assert_rows_contain(
            pull_queue("//tmp/q", offset=0, partition_index=0, max_data_weight=5),
            [{"$tablet_index": 0, "$row_index": 0, "data": "foo"}],
        )

    @pytest.mark.parametrize("create_consumer", ["_create_consumer", "_create_symlink_consumer"])
    def test_pull_consumer(self, create_consumer):
        self._create_queue("//tmp/q")
        getattr(self, create_consumer)("//tmp/c")

        insert_rows("//tmp/q", [{"data": "foo"}])
        insert_rows("//tmp/q", [{"data": "bar"}])

        with raises_yt_error(code=ytc.AuthorizationErrorCode):
            pull_consumer("//tmp/c", "//tmp/q", offset=1, partition_index=0)

        register_queue_consumer("//tmp/q", "//tmp/c", vital=False)

        self._assert_rows_contain(
            pull_consumer("//tmp/c", "//tmp/q", offset=1, partition_index=0),
            [{"$tablet_index": 0, "$row_index": 1, "data": "bar"}],
        )
        self._assert_rows_contain(
            pull_consumer("//tmp/c", "//tmp/q", offset=0, partition_index=0, max_row_count=1),
            [{"$tablet_index": 0, "$row_index": 0, "data": "foo"}],
        )
        self._assert_rows_contain(
            pull_consumer("//tmp/c", "//tmp/q", offset=0, partition_index=0),
            [
                {"$tablet_index": 0, "$row_index": 0, "data": "foo"},
                {"$tablet_index": 0, "$row_index": 1, "data": "bar"},
            ],
        )
        self._assert_rows_contain(
            pull_consumer("//tmp/c", "//tmp/q", offset=0, partition_index=0, max_data_weight=5),
            [{"$tablet_index": 0, "$row_index": 0, "data": "foo"}],
        )
        self._assert_rows_contain(
            pull_consumer("//tmp/c", "//tmp/q", partition_index=0, offset=None),
            [
                {"$tablet_index": 0, "$row_index": 0, "data": "foo"},
                {"$tablet_index": 0, "$row_index": 1, "data": "bar"},
            ],
        )

        advance_consumer("//tmp/c", "//tmp/q", partition_index=0, old_offset=None, new_offset=1)

        self._assert_rows_contain(
            pull_consumer("//tmp/c", "//tmp/q", partition_index=0, offset=None),
            [{"$tablet_index": 0, "$row_index": 1, "data": "bar"}],
        )

        with raises_yt_error("Invalid tablet index for table"):
            pull_consumer("//tmp/c", "//tmp/q", partition_index=1, offset=None)

        register_queue_consumer("abc://tmp/q", "//tmp/c", vital=False)
        with raises_yt_error("Queue cluster"):
            pull_consumer("//tmp/c", "abc://tmp/q", partition_index=0, offset=None)

        with raises_yt_error("Queue cluster"):
            pull_consumer("//tmp/c", "abc://tmp/q", partition_index=0, offset=0)

    @pytest.mark.parametrize("create_consumer", ["_create_consumer", "_create_symlink_consumer"])
    @pytest.mark.parametrize("without_meta", [False, True])
    def test_advance_consumer(self, create_consumer, without_meta):
        getattr(self, create_consumer)("//tmp/c", without_meta=without_meta)

        def select_queue_partition_from_consumer(queue, partition_index=0):
            rows = select_rows(
                f'* from [//tmp/c] where [queue_path] = "{queue}" and [partition_index] = {partition_index}'
            )
            assert len(rows) <= 1
            return rows

        def get_offset(queue, partition_index=0):
            rows = select_queue_partition_from_consumer(queue, partition_index)
            if rows:
                return rows[0]["offset"]
            return None

        def get_meta(queue, partition_index=0):
            rows = select_queue_partition_from_consumer(queue, partition_index)
            if rows and len(rows) > 0 and "meta" in rows[0]:
                return rows[0]["meta"]
            return None

        assert get_offset("//tmp/q1") is None

        with raises_yt_error("Failed to resolve queue path"):
            advance_consumer("//tmp/c", "//tmp/q1", partition_index=0, old_offset=None, new_offset=3, client_side=False)

        self._create_queue("//tmp/q1")
        self._create_queue("//tmp/q2")
        self._create_queue("//tmp/q3")
        self._create_queue("//tmp/q4")

        insert_rows("//tmp/q1", [{"data": "foo"}] * 6)

        advance_consumer("//tmp/c", "//tmp/q1", partition_index=0, old_offset=None, new_offset=3, client_side=False)
        assert get_offset("//tmp/q1") == 3

        if without_meta:
            assert get_meta("//tmp/q1") is None
        else:
            meta = get_meta("//tmp/q1")
            # Each row weight is equal to 20.
            assert meta["cumulative_data_weight"] == 60
            assert "offset_timestamp" in meta

        with raises_yt_error(ytc.ConsumerOffsetConflict):
            advance_consumer("//tmp/c", "//tmp/q1", partition_index=0, old_offset=4, new_offset=5, client_side=False)

        advance_consumer("//tmp/c", "//tmp/q1", partition_index=0, old_offset=3, new_offset=5, client_side=False)
        assert get_offset("//tmp/q1") == 5

        if without_meta:
            assert get_meta("//tmp/q1") is None
        else:
            meta = get_meta("//tmp/q1")
            assert meta["cumulative_data_weight"] == 100
            assert "offset_timestamp" in meta

        advance_consumer("//tmp/c", "//tmp/q1", partition_index=0, old_offset=None, new_offset=7, client_side=False)
        assert get_offset("//tmp/q1") == 7

        if without_meta:
            assert get_meta("//tmp/q1") is None
        else:
            assert get_meta("//tmp/q1") == yson.YsonEntity()

        advance_consumer("//tmp/c", "//tmp/q2", partition_index=0, old_offset=0, new_offset=42, client_side=False)
        assert get_offset("//tmp/q2") == 42

        tx = start_transaction(type="tablet")
        advance_consumer(
            "//tmp/c",
            "//tmp/q3",
            partition_index=0,
            old_offset=None,
            new_offset=1543,
            transaction_id=tx,
            client_side=False,
        )
        advance_consumer(
            "//tmp/c",
            "//tmp/q4",
            partition_index=0,
            old_offset=None,
            new_offset=1543,
            transaction_id=tx,
            client_side=False,
        )

        assert get_offset("//tmp/q3") is None
        assert get_offset("//tmp/q4") is None

        commit_transaction(tx)
        assert get_offset("//tmp/q3") == 1543
        assert get_offset("//tmp/q4") == 1543
