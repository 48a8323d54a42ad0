"""The one place that turns a user's options into what a query needs: a backend, reader settings, an offset store.

The Spark adapter (:mod:`spyt_queue.spark`) calls these functions and knows no backend. Which backend reads the log
is decided by the options (``kafka.bootstrap.servers`` means Kafka, otherwise a YTsaurus queue path); which store
keeps positions by ``offsets.store`` (see :mod:`spyt_queue.stores.registry`).
"""

from __future__ import annotations

from types import ModuleType

from spyt_queue.backend import QueueBackend
from spyt_queue.deadletter import DEAD_LETTER_OPTIONS
from spyt_queue.deadletter import KAFKA_PREFIX as DEAD_LETTER_KAFKA_PREFIX
from spyt_queue.deadletter_targets import dead_letter_target, prepared_target
from spyt_queue.errors import OptionError
from spyt_queue.kafka.options import (
    KAFKA_PREFIX,
    KAFKA_SOURCE_OPTIONS,
    SPARK_KAFKA_IGNORED_OPTIONS,
    kafka_backend_from_options,
    kafka_config,
    kafka_reader_settings,
)
from spyt_queue.options import Options, connect_timeout
from spyt_queue.settings import READER_OPTIONS, TIMESTAMP_OPTIONS, ReaderSettings
from spyt_queue.stores.base import OffsetStore
from spyt_queue.stores.registry import OPTION as STORE_OPTION
from spyt_queue.stores.registry import (
    PASSWORD_OPTION,
    USER_OPTION,
    StoreCredentials,
    check_uri,
    is_native,
    open_store,
)

#: Offset store options (``offsets.store`` is parsed by :mod:`spyt_queue.stores.registry`, the group here; the
#: password has an option of its own, whose name Spark redacts, never a place in the URI that Spark prints).
STORE_OPTIONS = (STORE_OPTION, "offsets.group", USER_OPTION, PASSWORD_OPTION)


def _yt_options() -> ModuleType:
    """:mod:`spyt_queue.yt.options`, imported on first use."""
    # lazy: yt.wrapper and pandas (~1-2 s per Python worker) load only in processes that read YTsaurus
    from spyt_queue.yt import options

    return options


def is_kafka(options: Options) -> bool:
    """Whether the options describe a Kafka source or sink."""
    return "kafka.bootstrap.servers" in options


def check_source_options(options: Options) -> None:
    """Refuse option names no part of the source reads (a misspelt ``max_rows_per_partiton``), before any work.

    The names are those of either mode: options valid for one mode only (``endingOffsets`` on a stream) are
    refused by :class:`ReaderSettings` with a message of their own."""
    if is_kafka(options):
        known = (*KAFKA_SOURCE_OPTIONS, *SPARK_KAFKA_IGNORED_OPTIONS, *READER_OPTIONS, *TIMESTAMP_OPTIONS)
        yt_only = ("proxy", "consumer_path", "include_service_columns", "parsing_type_v3", "binary_strings")
        hints = {name: "it is an option of YTsaurus queues, not of Kafka topics" for name in yt_only}
        hints["path"] = "a Kafka source reads topics: use subscribe, subscribePattern or assign instead of load(path)"
        for name in DEAD_LETTER_OPTIONS:
            hints[name] = (
                "the Kafka source returns key and value as bytes and never rejects a record, so it has no dead "
                "letters; set deadLetter.* on the sink (writeStream) to divert records it refuses"
            )
        options.check_known((*known, *STORE_OPTIONS), "the Kafka source", prefixes=(KAFKA_PREFIX,), hints=hints)
        return
    yt = _yt_options()
    kafka_only = (*KAFKA_SOURCE_OPTIONS, *TIMESTAMP_OPTIONS)
    hints = {
        name: "it is an option of the Kafka adapter, which is used when kafka.bootstrap.servers is set"
        for name in kafka_only
        if name.lower() not in {known.lower() for known in yt.YT_SOURCE_OPTIONS}
    }
    _without_dead_letter_kafka(options).check_known(
        (*yt.YT_SOURCE_OPTIONS, *READER_OPTIONS, *STORE_OPTIONS, *DEAD_LETTER_OPTIONS),
        "the YTsaurus queue source",
        prefixes=(yt.YT_CONFIG_PREFIX,),
        hints=hints,
    )


#: Options Spark itself passes to every streaming sink (``writeStream...start(path)`` passes ``path`` too).
SPARK_SINK_OPTIONS = ("path", "checkpointLocation", "queryName")


def check_sink_options(options: Options, known: tuple[str, ...], what: str, prefix: str) -> None:
    """Refuse option names ``what`` (a sink) does not read, saying so when one belongs to the source."""
    reading = (
        *READER_OPTIONS,
        *TIMESTAMP_OPTIONS,
        *STORE_OPTIONS,
        "consumer_path",
        "subscribe",
        "include_service_columns",
    )
    hints = {name: "it is a reading option: set it on spark.readStream / spark.read" for name in reading}
    _without_dead_letter_kafka(options).check_known(
        (*known, *SPARK_SINK_OPTIONS, *DEAD_LETTER_OPTIONS), what, prefixes=(prefix,), hints=hints
    )


def _without_dead_letter_kafka(options: Options) -> Options:
    """``options`` without ``deadLetter.kafka.*`` (the dead-letter producer's configuration, checked by
    :func:`spyt_queue.deadletter_targets.dead_letter_target`), so unknown-option messages do not list that prefix."""
    prefix = DEAD_LETTER_KAFKA_PREFIX.lower()
    return Options({key: value for key, value in options.raw().items() if not key.startswith(prefix)})


def check_reachable(options: Options) -> None:
    """Fail within ``connect_timeout`` seconds, in one line naming the endpoint, if the proxy or the Kafka brokers
    do not answer (checked once per process; ``yt.wrapper`` alone retries an unreachable proxy for two minutes)."""
    timeout = connect_timeout(options)
    if is_kafka(options):
        # lazy: confluent_kafka (~0.3 s) loads only in processes that read or write Kafka
        from spyt_queue.kafka.clients import check_brokers_reachable

        check_brokers_reachable(kafka_config(options), timeout)
        return
    _yt_options().reachable_connection(options)
    prepared_target(options)  # the dead-letter target exists (or is created with deadLetter.create=true)


def store_credentials(options: Options) -> StoreCredentials:
    """``offsets.store.user`` and ``offsets.store.password``: the credentials of a URI store."""
    return StoreCredentials(options.get_str(USER_OPTION), options.get_str(PASSWORD_OPTION))


def backend_for(options: Options, streaming: bool) -> QueueBackend:
    """The backend reading the log the options describe (validated, not yet connected where avoidable), with the
    dead-letter target of a YTsaurus source bound to it."""
    check_uri(options.get_str(STORE_OPTION), store_credentials(options), password_in_uri=False)
    if is_kafka(options):
        return kafka_backend_from_options(options)
    # A stream needs somewhere to commit: the consumer table, unless another store is named.
    needs_consumer = streaming and is_native(options.get_str(STORE_OPTION))
    backend = _yt_options().yt_backend_from_options(options, streaming=needs_consumer)
    target = dead_letter_target(options)  # validated here, checked on its server when the query connects
    if target is not None:
        backend.dead_letters = target.bind(f"yt:{backend.queue_path}", "source")
    return backend


def settings_for(options: Options, streaming: bool | None) -> ReaderSettings:
    """Reader settings for a stream, a batch, or (``None``) ``load()``, where only what is invalid in both modes
    can be rejected."""
    if is_kafka(options):
        return kafka_reader_settings(options, streaming)
    has_store = "consumer_path" in options or not is_native(options.get_str(STORE_OPTION))
    if streaming or streaming is None:
        return ReaderSettings.parse(options, starting_default="consumer", streaming=streaming)
    if has_store:
        return ReaderSettings.parse(options, starting_default="consumer", streaming=False)
    return ReaderSettings.parse(options, starting_default="earliest", streaming=False, named=("earliest", "latest"))


def group_for(options: Options, backend: QueueBackend) -> str:
    """The group positions belong to in a non-native store: ``offsets.group``, else the Kafka group id, else the
    YT consumer path, else ``spyt-queue``."""
    given = options.get_str("offsets.group")
    if given:
        return given
    for attribute in ("group_id", "consumer_path"):
        value = getattr(backend, attribute, None)
        if value:
            return str(value)
    return "spyt-queue"


def store_for(options: Options, backend: QueueBackend) -> OffsetStore | None:
    """The offset store of a query: ``offsets.store`` when it names one, else the backend's own."""
    uri = options.get_str(STORE_OPTION)
    if is_native(uri):
        store = backend.default_store()
        if store is not None and not is_kafka(options):
            _yt_options().check_consumer_registered(backend)  # on the driver when the query starts, not inside a task
        return store
    assert uri is not None
    return open_store(uri, backend.source_id, group_for(options, backend), store_credentials(options))


def require_store(store: OffsetStore | None) -> OffsetStore:
    """A stream must commit somewhere."""
    if store is None:
        raise OptionError(
            "consumer_path",
            "a streaming read needs somewhere to commit progress: a consumer table (consumer_path) or "
            "offsets.store=zookeeper://host:2181/path",
        )
    return store
