"""Helpers of the YTsaurus conformance suite (``tests/yt_server``).

Everything here drives a cluster only through ``yt.wrapper``. Helpers poll where real YTsaurus is
asynchronous (tablet state transitions, the queue consumer registration cache, trimming), so the same
suite is valid against the embedded server and against a real cluster (``YT_PROXY``).

The module name is deliberately unique (not ``helpers``): pytest's default ``prepend`` import mode puts
every test directory on ``sys.path`` and two ``helpers.py`` files would shadow each other.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import yt.yson
from yt.wrapper import YtClient
from yt.wrapper.errors import YtResponseError

T = TypeVar("T")

REAL_CLUSTER = bool(os.environ.get("YT_PROXY"))

#: How long to wait for asynchronous effects (seconds). Real clusters cache registrations for seconds.
DEFAULT_TIMEOUT = 60.0 if REAL_CLUSTER else 15.0

# Error codes, each with the YTsaurus source that defines it.
RESOLVE_ERROR = 500  # NYTree::EErrorCode::ResolveError (yt/yt/core/ytree/public.h); YtError.is_resolve_error
ALREADY_EXISTS = 501  # NYTree::EErrorCode::AlreadyExists; YtError.is_already_exists
AUTHORIZATION_ERROR = 901  # NSecurityClient::EErrorCode::AuthorizationError (security_client/public.h)
TRANSACTION_LOCK_CONFLICT = 1700  # NTabletClient::EErrorCode::TransactionLockConflict (tablet_client/public.h)
TABLET_NOT_MOUNTED = 1702  # NTabletClient::EErrorCode::TabletNotMounted; "Table %v has no mounted tablets"
CONSUMER_OFFSET_CONFLICT = 3100  # NQueueClient::EErrorCode::ConsumerOffsetConflict (queue_client/public.h)
INVALID_EPOCH = 3101  # NQueueClient::EErrorCode::InvalidEpoch
ZOMBIE_EPOCH = 3102  # NQueueClient::EErrorCode::ZombieEpoch
INVALID_ROW_SEQUENCE_NUMBERS = 3103  # NQueueClient::EErrorCode::InvalidRowSequenceNumbers
NO_SUCH_TRANSACTION = 11000  # NTransactionClient::EErrorCode::NoSuchTransaction (sticky_transaction_pool.cpp)

#: A minimal queue schema (as in yt/python/yt/wrapper/tests/test_queue_commands.py).
QUEUE_SCHEMA = [{"name": "data", "type": "string"}]

#: The schema recommended for queues by queues.md: with the $timestamp and $cumulative_data_weight columns.
QUEUE_SCHEMA_WITH_SYSTEM_COLUMNS = [
    {"name": "$timestamp", "type": "uint64"},
    {"name": "$cumulative_data_weight", "type": "int64"},
    {"name": "data", "type": "string"},
]

#: YTConsumerTableSchema (yt/yt/client/queue_client/consumer_client.cpp; init_queue_agent_state.py).
CONSUMER_SCHEMA = [
    {"name": "queue_cluster", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "queue_path", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "partition_index", "type": "uint64", "sort_order": "ascending", "required": True},
    {"name": "offset", "type": "uint64", "required": True},
    {"name": "meta", "type": "any", "required": False},
]

#: PRODUCER_OBJECT_TABLE_SCHEMA (yt/python/yt/environment/init_queue_agent_state.py).
PRODUCER_SCHEMA = [
    {"name": "queue_cluster", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "queue_path", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "session_id", "type": "string", "sort_order": "ascending", "required": True},
    {"name": "sequence_number", "type": "int64", "required": True},
    {"name": "epoch", "type": "int64", "required": True},
    {"name": "user_meta", "type": "any", "required": False},
    {"name": "system_meta", "type": "any", "required": False},
]

#: A small sorted dynamic table schema.
SORTED_SCHEMA = [
    {"name": "key", "type": "int64", "sort_order": "ascending"},
    {"name": "value", "type": "string"},
    {"name": "count", "type": "int64"},
]


def configure_client(client: YtClient) -> YtClient:
    """Make ``client`` fail fast: no client-side retries of dynamic-table commands, no interrupts.

    ``yt.wrapper`` retries tablet errors (1700, 1702, ...) for up to 10 minutes by default
    (``dynamic_table_retries`` in default_config.py); a conformance test wants to see the error itself.
    """
    client.config["dynamic_table_retries"]["enable"] = False
    # The background pinger of ``Transaction(...)`` interrupts the main thread when a ping fails
    # (default ``ping_failed_mode="interrupt_main"``), which would abort the whole pytest run;
    # pinging is checked explicitly by test_ping_transaction instead.
    client.config["ping_failed_mode"] = "pass"
    return client


def as_bool(value: Any) -> bool:
    """A YSON boolean (``YsonBoolean`` from ``yt.wrapper``) as ``bool``; anything else fails the test."""
    assert isinstance(value, (bool, yt.yson.YsonBoolean)), f"expected a boolean, got {value!r}"
    return bool(value)


def wait_until(
    predicate: Callable[[], T],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = 0.05,
    message: str = "condition",
    ignore_errors: bool = False,
) -> T:
    """Poll ``predicate`` until it returns a truthy value and return that value."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as error:
            if not ignore_errors:
                raise
            last_error = error
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}; last error: {last_error!r}")
        time.sleep(interval)
        interval = min(interval * 1.5, 1.0)


def wait_tablet_state(yt: YtClient, path: str, state: str, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Wait until ``path/@tablet_state`` is ``state`` (transitions are asynchronous on a real cluster)."""
    wait_until(lambda: yt.get(path + "/@tablet_state") == state, timeout, message=f"{path} to be {state}")


def create_queue(
    yt: YtClient,
    path: str,
    schema: list[dict[str, Any]] | None = None,
    tablet_count: int = 1,
    mount: bool = True,
    **attributes: Any,
) -> str:
    """Create an ordered dynamic table (a queue) with ``tablet_count`` tablets and mount it synchronously."""
    attrs: dict[str, Any] = {"dynamic": True, "schema": schema or QUEUE_SCHEMA}
    if tablet_count != 1:
        attrs["tablet_count"] = tablet_count
    attrs.update(attributes)
    yt.create("table", path, attributes=attrs)
    if mount:
        yt.mount_table(path, sync=True)
    return path


def create_sorted_table(yt: YtClient, path: str, schema: list[dict[str, Any]] | None = None, mount: bool = True) -> str:
    """Create a sorted dynamic table and mount it synchronously."""
    yt.create("table", path, attributes={"dynamic": True, "schema": schema or SORTED_SCHEMA})
    if mount:
        yt.mount_table(path, sync=True)
    return path


def _ensure_mounted(yt: YtClient, path: str) -> None:
    # The queue_consumer / queue_producer type handlers mount the table themselves
    # (test_producer.py: "Check that producer is mounted automatically"); wait for that.
    wait_tablet_state(yt, path, "mounted")


def create_consumer(yt: YtClient, path: str) -> str:
    """Create a consumer with the ``queue_consumer`` type alias (queues.md "Creating a consumer")."""
    yt.create("queue_consumer", path)
    _ensure_mounted(yt, path)
    return path


def create_producer(yt: YtClient, path: str) -> str:
    """Create a producer with the ``queue_producer`` type alias (queues.md "Creating a producer")."""
    yt.create("queue_producer", path)
    _ensure_mounted(yt, path)
    return path


def register_consumer(
    yt: YtClient, queue: str, consumer: str, vital: bool = False, partitions: list[int] | None = None
) -> None:
    """Register ``consumer`` for ``queue`` and wait until ``pull_consumer`` accepts it.

    Real clusters serve registrations from a cache refreshed every few seconds (queues.md / the
    registration manager), so the first pulls may still fail with an authorization error.
    """
    yt.register_queue_consumer(queue, consumer, vital=vital, partitions=partitions)

    def usable() -> bool:
        try:
            yt.pull_consumer(consumer, queue, offset=0, partition_index=0, max_row_count=1)
            return True
        except YtResponseError as error:
            if error.contains_code(AUTHORIZATION_ERROR):
                return False
            raise

    wait_until(usable, message=f"registration of {consumer} for {queue} to become usable")


def insert(yt: YtClient, path: str, rows: Iterable[dict[str, Any]], **kwargs: Any) -> None:
    """``insert_rows`` with the rows materialised (the client streams them once)."""
    yt.insert_rows(path, list(rows), **kwargs)


def tablet_infos(yt: YtClient, path: str, tablet_count: int) -> list[dict[str, Any]]:
    """``get_tablet_infos`` for tablets ``0..tablet_count-1``."""
    return list(yt.get_tablet_infos(path, list(range(tablet_count)))["tablets"])


def pull(yt: YtClient, queue: str, offset: int, partition_index: int = 0, **kwargs: Any) -> list[dict]:
    """``pull_queue`` returning a list."""
    return list(yt.pull_queue(queue, offset=offset, partition_index=partition_index, **kwargs))


def select(yt: YtClient, query: str, **kwargs: Any) -> list[dict]:
    """``select_rows`` returning a list."""
    return list(yt.select_rows(query, **kwargs))


def consumer_offsets(yt: YtClient, consumer: str, queue: str) -> dict[int, int]:
    """``{partition_index: offset}`` of ``queue`` as stored in the consumer table (read via select_rows)."""
    rows = select(yt, f'* from [{consumer}] where [queue_path] = "{queue}"')
    return {int(row["partition_index"]): int(row["offset"]) for row in rows}


def strip_system_columns(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without ``$``-prefixed system columns."""
    return [{k: v for k, v in row.items() if not k.startswith("$")} for row in rows]


def make_tablet_transaction_id(counter: int = 0x1234) -> str:
    """A well-formed id of a tablet transaction nobody started.

    Object type 2 (``AtomicTabletTransaction``) lives in the low 16 bits of the third part; the client
    treats types 1 and 4 as master transactions (``object_type_from_uuid``), so this one is "tablet".
    """
    return f"{counter:x}-{0xABCDEF:x}-{(0x10 << 16) | 2:x}-{0x5EED:x}"


def yson_list(data: bytes) -> list[Any]:
    """Parse a binary YSON list fragment."""
    return list(yt.yson.loads(data, yson_type="list_fragment"))
