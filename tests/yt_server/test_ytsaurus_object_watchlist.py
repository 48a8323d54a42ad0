"""YTsaurus's ``yt/yt/tests/integration/queues/test_object_watchlist.py``, ported to one node.

The file checks what the master itself keeps for the queue agent's Cypress synchronizer:
``//sys/@queue_agent_object_revisions``, the queues (ordered dynamic tables) and consumers (sorted dynamic tables
with ``@treat_as_queue_consumer``) by path with their ``@attribute_revision``. Each test keeps its YTsaurus calls,
arguments and expected values; ``yt_commands_shim`` stands in for ``yt_commands`` and ``//tmp`` is a fresh
directory per test, so the listing is read for that directory only (a real cluster, and this server across
tests, hold other queues too).

Ported (``TestQueueAgentObjectRevisions``): ``test_attribute_opaqueness``; ``test_create``, ``test_copy`` and
``test_treat_as_queue_consumer_modifications`` without their replicated tables (``replicated_table`` and
``table_replica`` are not served by ytqueue local); ``test_alter``.

Skipped, with the reason: ``test_transactional_create``, ``test_transactional_copy``, ``test_transactional_fun``
(Cypress changes in a master transaction are not isolated here: a table created inside one is listed at once);
``TestQueueAgentObjectsRevisionsPortal`` (portals and secondary master cells).
"""

from __future__ import annotations

import builtins

import pytest
import yt.yson as yson
import yt_commands_shim as ytc
from yt_commands_shim import create, get, raises_yt_error, remove, set, start_transaction


@pytest.fixture(autouse=True)
def _bind(yt, yt_root: str) -> None:
    ytc.bind(yt, yt_root)


def _in_this_test(objects: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The listing restricted to this test's ``//tmp``, paths written as ``//tmp/...``."""
    root = ytc._BOUND.root
    return {
        kind: {"//tmp" + path[len(root) :]: revision for path, revision in items.items() if path.startswith(root + "/")}
        for kind, items in objects.items()
    }


def alter_table(path: str, **kwargs: object) -> None:
    ytc.execute_command("alter_table", {"path": path, **kwargs})


def copy(source_path: str, destination_path: str) -> None:
    ytc.execute_command("copy", {"source_path": source_path, "destination_path": destination_path})


class QueueAgentHelpers:
    @staticmethod
    def get_objects():
        return _in_this_test(get("//sys/@queue_agent_object_revisions"))

    @staticmethod
    def assert_registered_queues_are(*paths):
        queues = QueueAgentHelpers.get_objects()["queues"]
        assert queues.keys() == builtins.set(paths)
        for path in paths:
            assert queues[path] == get(path + "/@attribute_revision")

    @staticmethod
    def assert_registered_consumers_are(*paths):
        consumers = QueueAgentHelpers.get_objects()["consumers"]
        assert consumers.keys() == builtins.set(paths)
        for path in paths:
            assert consumers[path] == get(path + "/@attribute_revision")


def test_attribute_opaqueness() -> None:
    full_attributes = get("//sys/@")
    assert full_attributes["queue_agent_object_revisions"] == yson.YsonEntity()


def test_create() -> None:
    create("table", "//tmp/q1", attributes={"dynamic": True, "schema": [{"name": "data", "type": "string"}]})
    create("table", "//tmp/q2", attributes={"dynamic": True, "schema": [{"name": "data", "type": "string"}]})
    create("table", "//tmp/q3", attributes={"dynamic": False, "schema": [{"name": "data", "type": "string"}]})
    # YTsaurus also creates a replicated queue and its replica here (not served by ytqueue local).
    QueueAgentHelpers.assert_registered_queues_are("//tmp/q1", "//tmp/q2")

    sorted_schema = [{"name": "data", "type": "string", "sort_order": "ascending"}, {"name": "test", "type": "string"}]
    create(
        "table", "//tmp/c1", attributes={"dynamic": True, "schema": sorted_schema, "treat_as_queue_consumer": True}
    )
    create("table", "//tmp/c2", attributes={"dynamic": True, "schema": sorted_schema})
    with raises_yt_error('Builtin attribute "treat_as_queue_consumer" cannot be set'):
        create(
            "table",
            "//tmp/c3",
            attributes={
                "dynamic": True,
                "schema": [{"name": "data", "type": "string"}, {"name": "test", "type": "string"}],
                "treat_as_queue_consumer": True,
            },
        )
    with raises_yt_error('Builtin attribute "treat_as_queue_consumer" cannot be set'):
        create(
            "table",
            "//tmp/c4",
            attributes={"dynamic": False, "schema": sorted_schema, "treat_as_queue_consumer": True},
        )

    QueueAgentHelpers.assert_registered_consumers_are("//tmp/c1")

    remove("//tmp/q1")
    remove("//tmp/q2")
    QueueAgentHelpers.assert_registered_queues_are()

    remove("//tmp/c1")
    remove("//tmp/c2")
    QueueAgentHelpers.assert_registered_consumers_are()


def test_alter() -> None:
    create("table", "//tmp/q1", attributes={"dynamic": False, "schema": [{"name": "data", "type": "string"}]})
    QueueAgentHelpers.assert_registered_queues_are()

    alter_table("//tmp/q1", dynamic=True)
    QueueAgentHelpers.assert_registered_queues_are("//tmp/q1")

    alter_table("//tmp/q1", schema=[{"name": "data", "type": "string"}, {"name": "kek", "type": "string"}])
    QueueAgentHelpers.assert_registered_queues_are("//tmp/q1")

    alter_table("//tmp/q1", dynamic=False)
    QueueAgentHelpers.assert_registered_queues_are()

    remove("//tmp/q1")
    QueueAgentHelpers.assert_registered_queues_are()


def test_copy() -> None:
    create("table", "//tmp/q1", attributes={"dynamic": True, "schema": [{"name": "data", "type": "string"}]})
    QueueAgentHelpers.assert_registered_queues_are("//tmp/q1")

    create(
        "table",
        "//tmp/c1",
        attributes={
            "dynamic": True,
            "schema": [
                {"name": "data", "type": "string", "sort_order": "ascending"},
                {"name": "test", "type": "string"},
            ],
            "treat_as_queue_consumer": True,
        },
    )
    QueueAgentHelpers.assert_registered_consumers_are("//tmp/c1")

    copy("//tmp/q1", "//tmp/q2")
    QueueAgentHelpers.assert_registered_queues_are("//tmp/q1", "//tmp/q2")

    # Copying doesn't carry over the treat_as_queue_consumer flag.
    copy("//tmp/c1", "//tmp/c2")
    QueueAgentHelpers.assert_registered_consumers_are("//tmp/c1")

    remove("//tmp/q1")
    remove("//tmp/q2")
    remove("//tmp/c1")
    remove("//tmp/c2")
    QueueAgentHelpers.assert_registered_queues_are()
    QueueAgentHelpers.assert_registered_consumers_are()


def test_treat_as_queue_consumer_modifications() -> None:
    create(
        "table",
        "//tmp/c1",
        attributes={
            "dynamic": True,
            "schema": [
                {"name": "data", "type": "string", "sort_order": "ascending"},
                {"name": "test", "type": "string"},
            ],
        },
    )
    QueueAgentHelpers.assert_registered_consumers_are()

    set("//tmp/c1/@treat_as_queue_consumer", True)
    QueueAgentHelpers.assert_registered_consumers_are("//tmp/c1")

    set("//tmp/c1/@treat_as_queue_consumer", False)
    QueueAgentHelpers.assert_registered_consumers_are()

    tx = start_transaction()
    with raises_yt_error("Operation cannot be performed in transaction"):
        set("//tmp/c1/@treat_as_queue_consumer", True, transaction_id=tx)
