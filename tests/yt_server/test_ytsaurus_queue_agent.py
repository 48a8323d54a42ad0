"""YTsaurus's ``yt/yt/tests/integration/queues/test_queue_agent.py``: the tests that need no queue agent, ported.

Almost every test of that file drives the queue agent process (its orchids, the Cypress synchronizer, automatic
trimming, rates, sharding, alerts) and is skipped: ``ytqueue local`` runs no queue agent (see the conformance
table in ``spyt_queue/local/README.md``). ``TestMasterIntegration`` checks what the master itself answers about
queue attributes; what of it applies to one node without the agent is ported here with the same calls and
expected values (``yt_commands_shim`` stands in for ``yt_commands``; ``//tmp`` is a fresh directory per test).

Ported: ``TestMasterIntegration::test_non_queues`` without its ``replicated_table`` (replicated tables are not
served), ``test_revision_changes_on_queue_attribute_change``, ``test_revision_changes_on_consumer_attribute_change``.
Skipped, with the reason: ``test_queue_attributes``, ``test_consumer_attributes``, ``test_producer_attributes``
(``@queue_status``/``@queue_consumer_status``/``@queue_producer_status`` come from a queue agent after the Cypress
synchronizer registered the object); ``test_queue_agent_stage``
(``//sys/@config/queue_agent_server/default_queue_agent_stage`` and an agent that reports an unknown stage);
``test_revision_changes_on_producer_attribute_change`` (it runs only where
``_should_skip_queue_producer_attributes_tests`` allows, and expects ``create("queue_producer")`` without
``@treat_as_queue_producer``, which this server sets).

``test_queue_agent_stage_without_agent`` is a check of this port's own: the parts of ``test_queue_agent_stage`` the
master answers alone (the ``production`` default of ``@queue_agent_stage`` on dynamic tables, set and read back,
``remove`` back to the default, and ``Operation cannot be performed in transaction`` for a set inside a master
transaction, as ``TTableNodeProxy::SetBuiltinAttribute`` validates).
"""

from __future__ import annotations

import pytest
import yt.yson as yson
import yt_commands_shim as ytc
from conformance import REAL_CLUSTER
from yt_commands_shim import (
    CONSUMER_OBJECT_TABLE_SCHEMA,
    create,
    exists,
    get,
    raises_yt_error,
    register_queue_consumer,
    remove,
    set,
    start_transaction,
    sync_mount_table,
)


@pytest.fixture(autouse=True)
def _bind(yt, yt_root: str) -> None:
    ytc.bind(yt, yt_root)


def test_non_queues() -> None:
    create("table", "//tmp/q_static", attributes={"schema": [{"name": "data", "type": "string"}]})
    create(
        "table",
        "//tmp/q_sorted_dynamic",
        attributes={
            "dynamic": True,
            "schema": [
                {"name": "key", "type": "string", "sort_order": "ascending"},
                {"name": "value", "type": "string"},
            ],
        },
    )
    # YTsaurus also creates a sorted replicated table here; replicated tables are not served by ytqueue local.
    queue_attributes = ["queue_status", "queue_partitions"]

    result = get("//tmp", attributes=queue_attributes)
    for name in ("q_static", "q_sorted_dynamic"):
        assert not result[name].attributes
        for attribute in queue_attributes:
            assert not exists("//tmp/" + name + "/@" + attribute)

    dynamic_table_attributes = ["queue_agent_stage"]
    result = get("//tmp", attributes=dynamic_table_attributes)
    for name in ("q_static",):
        assert not result[name].attributes
        for attribute in dynamic_table_attributes:
            assert not exists("//tmp/" + name + "/@" + attribute)


def test_queue_agent_stage_without_agent() -> None:
    create("table", "//tmp/q", attributes={"dynamic": True, "schema": [{"name": "data", "type": "string"}]})
    sync_mount_table("//tmp/q")
    create(
        "table",
        "//tmp/c",
        attributes={"dynamic": True, "schema": CONSUMER_OBJECT_TABLE_SCHEMA, "treat_as_queue_consumer": True},
    )

    assert get("//tmp/q/@queue_agent_stage") == "production"
    assert get("//tmp/c/@queue_agent_stage") == "production"
    assert get("//tmp", attributes=["queue_agent_stage"])["q"].attributes == {"queue_agent_stage": "production"}

    set("//tmp/q/@queue_agent_stage", "testing")
    assert get("//tmp/q/@queue_agent_stage") == "testing"
    set("//tmp/c/@queue_agent_stage", "testing")
    set("//tmp/c/@queue_agent_stage", "production")
    assert get("//tmp/c/@queue_agent_stage") == "production"

    remove("//tmp/q/@queue_agent_stage")
    assert get("//tmp/q/@queue_agent_stage") == "production"

    set("//tmp/q/@queue_agent_stage", "testing")
    # There is no queue agent with stage "testing", so accessing queue status would result in an error.
    with raises_yt_error('Queue agent stage "testing" is not found'):
        get("//tmp/q/@queue_status")
    tx = start_transaction()
    with raises_yt_error("Operation cannot be performed in transaction"):
        set("//tmp/q/@queue_agent_stage", "value_under_tx", transaction_id=tx)
    with raises_yt_error("Operation cannot be performed in transaction"):
        remove("//tmp/q/@queue_agent_stage", transaction_id=tx)
    with raises_yt_error("Operation cannot be performed in transaction"):
        set("//tmp/c/@treat_as_queue_consumer", False, transaction_id=tx)
    ytc.execute_command("abort_transaction", {"transaction_id": tx})
    assert get("//tmp/q/@queue_agent_stage") == "testing"
    assert get("//tmp/c/@treat_as_queue_consumer")


def _create_queue(path: str) -> None:
    """``TestQueueAgentBase._create_queue`` with its defaults (one partition, ``$timestamp`` and
    ``$cumulative_data_weight`` columns, mounted)."""
    schema = [
        {"name": "data", "type": "string"},
        {"name": "$timestamp", "type": "uint64"},
        {"name": "$cumulative_data_weight", "type": "int64"},
    ]
    create("table", path, attributes={"dynamic": True, "schema": schema})
    sync_mount_table(path)


def _create_registered_consumer(consumer_path: str, queue_path: str, vital: bool = False) -> None:
    """``TestQueueAgentBase._create_registered_consumer``: a mounted consumer table, registered."""
    create(
        "table",
        consumer_path,
        attributes={"dynamic": True, "schema": CONSUMER_OBJECT_TABLE_SCHEMA, "treat_as_queue_consumer": True},
    )
    sync_mount_table(consumer_path)
    register_queue_consumer(queue_path, consumer_path, vital=vital)


def _set_and_assert_revision_change(path, attribute, value):
    old_revision = get(path + "/@attribute_revision")
    set(f"{path}/@{attribute}", value)
    assert get(f"{path}/@{attribute}") == value
    assert get(f"{path}/@attribute_revision") > old_revision


def test_revision_changes_on_queue_attribute_change() -> None:
    create("table", "//tmp/q", attributes={"dynamic": True, "schema": [{"name": "data", "type": "string"}]})
    sync_mount_table("//tmp/q")

    _set_and_assert_revision_change("//tmp/q", "queue_agent_stage", "testing")


def test_revision_changes_on_consumer_attribute_change() -> None:
    _create_queue("//tmp/q")
    sync_mount_table("//tmp/q")
    _create_registered_consumer("//tmp/c", "//tmp/q")

    _set_and_assert_revision_change("//tmp/c", "treat_as_queue_consumer", True)
    _set_and_assert_revision_change("//tmp/c", "queue_agent_stage", "testing")
    # TODO(max42): this attribute is deprecated.
    _set_and_assert_revision_change("//tmp/c", "vital_queue_consumer", True)
    _set_and_assert_revision_change("//tmp/c", "target_queue", "haha:muahaha")


@pytest.mark.skipif(REAL_CLUSTER, reason="a real cluster runs a queue agent for its stages")
def test_queue_agent_attributes_without_agent() -> None:
    """A check of this port's own: with no queue agent serving a stage, the agent-backed attributes of queues,
    consumers and producers fail as ``GetQueueAgentAttributeAsync`` does (``Queue agent stage "production" is not
    found``); they are opaque in ``get(path/@)`` and absent on other tables."""
    _create_queue("//tmp/q")
    _create_registered_consumer("//tmp/c", "//tmp/q")
    create("queue_producer", "//tmp/p")
    for path, names in (
        ("//tmp/q", ("queue_status", "queue_partitions")),
        ("//tmp/c", ("queue_consumer_status", "queue_consumer_partitions")),
        ("//tmp/p", ("queue_producer_status", "queue_producer_partitions")),
    ):
        full_attributes = get(path + "/@")
        for name in names:
            assert full_attributes[name] == yson.YsonEntity()
            assert exists(f"{path}/@{name}")
            with raises_yt_error('Queue agent stage "production" is not found'):
                get(f"{path}/@{name}")
    assert not exists("//tmp/c/@queue_status")
    assert not exists("//tmp/q/@queue_consumer_status")
