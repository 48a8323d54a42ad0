"""Options of the YTsaurus queue source: which queue, which consumer, how to connect, how to convert."""

from __future__ import annotations

import logging
import os

from yt.wrapper.errors import YtResponseError

from spyt_queue.errors import ConsumerNotRegisteredError, OptionError
from spyt_queue.options import Options, connect_timeout
from spyt_queue.redaction import shown
from spyt_queue.yt.admin import consumer_registered
from spyt_queue.yt.backend import YtConnection, YtQueueBackend
from spyt_queue.yt.client import check_proxy_reachable
from spyt_queue.yt.declarations import (
    BINARY_STRINGS,
    CONSUMER_PATH,
    INCLUDE_SERVICE_COLUMNS,
    PARSING_TYPE_V3,
    PROXY,
    PULL_BATCH_ROWS,
    QUEUE_PATH,
    READ_FORMAT,
    TOKEN,
    YT_CONFIG,
    YT_CONFIG_PREFIX,
    YT_CONNECTION_OPTIONS,
    YT_SOURCE_OPTIONS,
)

__all__ = [  # the declarations, for the modules that read them with the functions below
    "BINARY_STRINGS",
    "CONSUMER_PATH",
    "INCLUDE_SERVICE_COLUMNS",
    "PARSING_TYPE_V3",
    "PROXY",
    "PULL_BATCH_ROWS",
    "QUEUE_PATH",
    "READ_FORMAT",
    "TOKEN",
    "YT_CONFIG",
    "YT_CONFIG_PREFIX",
    "YT_CONNECTION_OPTIONS",
    "YT_SOURCE_OPTIONS",
    "check_consumer_registered",
    "connection_from_options",
    "plain_cypress_path",
    "reachable_connection",
    "yt_backend_from_options",
]

log = logging.getLogger("spyt_queue.yt")

def connection_from_options(options: Options) -> YtConnection:
    """Proxy from ``proxy`` (or ``YT_PROXY``), token from ``token`` (or ``YT_TOKEN``), ``yt.*`` pass-through.

    ``yt.proxy.request_timeout=30000`` becomes ``{"proxy": {"request_timeout": 30000}}`` in the client config.
    """
    proxy = options.value(PROXY) or os.environ.get("YT_PROXY")
    if not proxy:
        raise OptionError(
            "proxy",
            "no YTsaurus proxy given: set .option('proxy', 'host:port') or the YT_PROXY environment variable "
            "(for the embedded local server, the address printed by 'ytqueue local'); YT_PROXY must be set before "
            "the SparkSession starts: Spark's Python workers keep the environment of its start",
        )
    config: dict = {}
    for key, value in options.with_prefix(YT_CONFIG_PREFIX).items():
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = _typed(value)
    return YtConnection(proxy=proxy, token=options.value(TOKEN) or os.environ.get("YT_TOKEN"), config=config)


def reachable_connection(options: Options) -> YtConnection:
    """:func:`connection_from_options`, after checking that the proxy answers within ``connect_timeout``."""
    connection = connection_from_options(options)
    check_proxy_reachable(connection.proxy, connection.config, connect_timeout(options))
    return connection


def _typed(value: str) -> int | float | bool | str:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def plain_cypress_path(option: str, path: str) -> str:
    """``path`` as the consumer table stores it: absolute, without YPath attributes, ranges or column selectors.

    Committed offsets are keyed by the queue's path string, so ``<append=%true>//home/q`` or ``//home/q{a,b}``
    would hide them; such paths are refused instead of guessed at. A trailing ``/`` is dropped.
    """
    text = path.strip()
    if text.startswith("<"):
        raise OptionError(
            option,
            f"YPath attributes are not supported here, give the plain path (e.g. //home/q), got {shown(option, path)}",
        )
    if not text.startswith("//"):
        raise OptionError(option, f"expected an absolute Cypress path such as //home/queue, got {shown(option, path)}")
    if any(ch in text for ch in "{}[]"):
        raise OptionError(
            option,
            f"column selectors and row ranges are not supported here, give the plain path, got {shown(option, path)}",
        )
    return text.rstrip("/") if len(text) > 2 else text


def yt_backend_from_options(options: Options, streaming: bool) -> YtQueueBackend:
    """Build the YT backend; a streaming read needs ``consumer_path`` (it is where progress is committed).

    Its dead letters (``deadLetter.*``) are bound by :func:`spyt_queue.connect.backend_for`."""
    path = options.value(QUEUE_PATH)
    if not path:
        raise OptionError("path", "give the queue path with .load('//path/to/queue') or .option('path', ...)")
    path = plain_cypress_path("path", path)
    consumer = options.value(CONSUMER_PATH)
    if consumer:
        consumer = plain_cypress_path("consumer_path", consumer)
    if streaming and not consumer:
        raise OptionError(
            "consumer_path",
            "a streaming read needs a consumer table, where ytqueue commits progress after each batch: create and "
            f"register one with `ytqueue create-consumer //path/to/consumer --queue {path}` and pass it with "
            ".option('consumer_path', '//path/to/consumer')",
        )
    parsing_type_v3 = options.value(PARSING_TYPE_V3)
    include_service_columns = options.value(INCLUDE_SERVICE_COLUMNS)
    binary_strings = options.value(BINARY_STRINGS)
    pull_batch_rows = options.value(PULL_BATCH_ROWS)
    read_format = options.value(READ_FORMAT)
    connect_timeout(options)
    backend = YtQueueBackend(
        connection=connection_from_options(options),
        queue_path=path,
        consumer_path=consumer,
        parsing_type_v3=parsing_type_v3,
        include_service_columns=include_service_columns,
        binary_strings=binary_strings,
        pull_batch_rows=pull_batch_rows,
        read_format=read_format,
    )
    return backend


def check_consumer_registered(backend: YtQueueBackend) -> None:
    """Raise :class:`ConsumerNotRegisteredError` in one line, saying how to fix it, when the backend's consumer table
    is missing or not registered for its queue (YT would only say so inside a task, in a long HTTP error dump).

    A cluster that refuses the registration lookup itself (permissions) is not a reason to stop: logged only."""
    queue, consumer = backend.queue_path, backend.consumer_path
    if not consumer:
        return
    client = backend.client
    register = (
        f"`ytqueue create-consumer {consumer} --queue {queue}` (or yt.wrapper's "
        f"register_queue_consumer('{queue}', '{consumer}', vital=False))"
    )
    try:
        if consumer_registered(client, queue, consumer):
            return
        exists = client.exists(consumer)
    except YtResponseError as error:
        log.warning("could not check that consumer %s is registered for %s: %s", consumer, queue, error)
        return
    if not exists:
        raise ConsumerNotRegisteredError(
            f"Consumer {consumer} (consumer_path) does not exist: create and register it with {register}"
        )
    raise ConsumerNotRegisteredError(
        f"Consumer {consumer} (consumer_path) is not registered for queue {queue}: register it with {register}"
    )
