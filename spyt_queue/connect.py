"""The one place that turns a user's options into what a query needs: a backend, reader settings, an offset store.

Which kind of source reads the log is chosen once, by :func:`source_kind` (``kafka.bootstrap.servers`` means Kafka,
otherwise a YTsaurus queue path); the chosen :class:`SourceKind` knows its declared options, how to check them, how
to build its backend and reader settings and which writer a ``writeStream`` to it gets. :func:`prepare` validates a
query's options in one pass (names, then values, then the servers: each fails before the next is tried) for each of
Spark's entry points. The Spark adapter (:mod:`spyt_queue.spark`) calls these and knows no backend. Which store keeps
positions is chosen by ``offsets.store`` (see :mod:`spyt_queue.stores.registry`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

from spyt_queue.backend import QueueBackend
from spyt_queue.deadletter import DEAD_LETTER_OPTIONS
from spyt_queue.deadletter_targets import dead_letter_target, prepared_target
from spyt_queue.errors import OptionError, SpytQueueError
from spyt_queue.kafka.options import (
    BOOTSTRAP_SERVERS,
    KAFKA_SOURCE_OPTIONS,
    kafka_backend_from_options,
    kafka_config,
    kafka_reader_settings,
)
from spyt_queue.lag import checkpoint_offset
from spyt_queue.options import Option, Options, connect_timeout, option_names
from spyt_queue.settings import READER_OPTIONS, STORE_KINDS, TIMESTAMP_OPTIONS, ReaderSettings
from spyt_queue.sink_options import without_dead_letter_kafka
from spyt_queue.stores.base import OffsetStore
from spyt_queue.stores.per_query import PerQueryStore, is_query_group, query_group
from spyt_queue.stores.reachability import check_uri_store_reachable
from spyt_queue.stores.registry import OPTION as STORE_OPTION
from spyt_queue.stores.registry import (
    PASSWORD_OPTION,
    STORE_OPTIONS,
    USER_OPTION,
    StoreCredentials,
    check_uri,
    is_native,
    open_store,
)
from spyt_queue.yt.declarations import YT_SOURCE_OPTIONS

#: The option whose presence makes a source or sink a Kafka one.
KAFKA_BOOTSTRAP = BOOTSTRAP_SERVERS


def _yt_options() -> ModuleType:
    """:mod:`spyt_queue.yt.options`, imported on first use."""
    # lazy: yt.wrapper and pandas (~1-2 s per Python worker) load only in processes that read YTsaurus
    from spyt_queue.yt import options

    return options


class SourceKind(ABC):
    """A kind of log a query reads or writes (a YTsaurus queue, Kafka topics): its options and how to open it."""

    #: How error messages name the source.
    what: str

    @abstractmethod
    def declared(self) -> tuple[Option, ...]:
        """Every option a query of this kind reads (reader settings and offset stores included)."""

    @abstractmethod
    def check_options(self, options: Options) -> None:
        """Refuse option names no part of the source reads (a misspelt ``max_rows_per_partiton``), before any work.

        The names are those of either mode: options valid for one mode only (``endingOffsets`` on a stream) are
        refused by :class:`ReaderSettings` with a message of their own."""

    @abstractmethod
    def backend(self, options: Options, streaming: bool) -> QueueBackend:
        """The backend reading the log (validated, not yet connected where avoidable)."""

    @abstractmethod
    def settings(self, options: Options, streaming: bool | None) -> ReaderSettings:
        """Reader settings for a stream, a batch, or (``None``) ``load()``, where only what is invalid in both modes
        can be rejected."""

    @abstractmethod
    def check_reachable(self, options: Options) -> None:
        """Fail within ``connect_timeout`` seconds, in one line naming the endpoint, if the servers do not answer."""

    def check_native_store(self, backend: QueueBackend) -> None:  # noqa: B027 - most kinds have nothing to check
        """Check, on the driver when a query starts, that the backend's own offset store can be used."""

    @abstractmethod
    def stream_writer(self, options: Options, schema: Any, overwrite: bool) -> Any:
        """The ``DataSourceStreamWriter`` of a ``writeStream`` to this kind of target."""

    @abstractmethod
    def batch_writer(self, options: Options, schema: Any, overwrite: bool) -> Any:
        """The ``DataSourceWriter`` of a ``write`` to this kind of target."""


class YtSource(SourceKind):
    """A YTsaurus queue (an ordered dynamic table) read through a consumer table; writes go to dynamic tables."""

    what = "the YTsaurus queue source"

    def declared(self) -> tuple[Option, ...]:
        """The YT source's options, the reader settings, offset stores and dead letters."""
        return (*YT_SOURCE_OPTIONS, *READER_OPTIONS, *STORE_OPTIONS, *DEAD_LETTER_OPTIONS)

    def check_options(self, options: Options) -> None:
        """Unknown names, with a hint for the Kafka adapter's options."""
        own = {name.lower() for name in option_names(self.declared())}
        hints = {
            name: "it is an option of the Kafka adapter, which is used when kafka.bootstrap.servers is set"
            for name in option_names(KAFKA_SOURCE_OPTIONS, TIMESTAMP_OPTIONS)
            if name.lower() not in own
        }
        # never given here (it makes the source a Kafka one): listed so that a near miss gets its did-you-mean
        hints[KAFKA_BOOTSTRAP] = "it makes the source read Kafka topics"
        without_dead_letter_kafka(options).check_known(self.declared(), self.what, hints=hints)

    def backend(self, options: Options, streaming: bool) -> QueueBackend:
        """The YT backend, with its dead-letter target bound to it; a stream needs somewhere to commit: the
        consumer table, unless another store is named."""
        needs_consumer = streaming and is_native(options.get_str(STORE_OPTION))
        backend = _yt_options().yt_backend_from_options(options, streaming=needs_consumer)
        target = dead_letter_target(options)  # validated here, checked on its server when the query connects
        if target is not None:
            backend.dead_letters = target.bind(f"yt:{backend.queue_path}", "source")
        return backend

    def settings(self, options: Options, streaming: bool | None) -> ReaderSettings:
        """A stream starts at the consumer's offsets; a batch read at them only if a store is named, else at the
        earliest row."""
        has_store = options.given(_yt_options().CONSUMER_PATH) or not is_native(options.get_str(STORE_OPTION))
        if streaming or streaming is None:
            return ReaderSettings.parse(options, starting_default="consumer", streaming=streaming)
        if has_store:
            return ReaderSettings.parse(options, starting_default="consumer", streaming=False)
        return ReaderSettings.parse(options, starting_default="earliest", streaming=False, named=("earliest", "latest"))

    def check_reachable(self, options: Options) -> None:
        """The proxy answers, and the dead-letter target exists (or is created with ``deadLetter.create=true``)."""
        _yt_options().reachable_connection(options)
        prepared_target(options)

    def check_native_store(self, backend: QueueBackend) -> None:
        """The consumer table exists and is registered for the queue."""
        _yt_options().check_consumer_registered(backend)

    def stream_writer(self, options: Options, schema: Any, overwrite: bool) -> Any:
        """Micro-batches to a YT dynamic table."""
        # lazy: a sink's modules load only in the processes that write, not in a reader's
        from spyt_queue.yt.sink import yt_stream_writer

        return yt_stream_writer(options, schema, overwrite)

    def batch_writer(self, options: Options, schema: Any, overwrite: bool) -> Any:
        """A DataFrame to a YT dynamic table."""
        from spyt_queue.yt.sink import yt_batch_writer

        return yt_batch_writer(options, schema, overwrite)


class KafkaSource(SourceKind):
    """Kafka topics, with Spark's Kafka source options and rules; writes go to topics."""

    what = "the Kafka source"

    def declared(self) -> tuple[Option, ...]:
        """The Kafka source's options , reader settings and offset stores."""
        return (
            *KAFKA_SOURCE_OPTIONS,
            *READER_OPTIONS,
            *TIMESTAMP_OPTIONS,
            *STORE_OPTIONS,
        )

    def check_options(self, options: Options) -> None:
        """Unknown names, with hints for YTsaurus options and dead letters (the Kafka source has none)."""
        # plain names: the YT declarations live beside yt.wrapper code a Kafka process need not load
        own = {name.lower() for name in option_names(self.declared())}
        hints = {
            name: "it is an option of YTsaurus queues, not of Kafka topics"
            for name in option_names(YT_SOURCE_OPTIONS)
            if name.lower() not in own
        }
        hints["path"] = "a Kafka source reads topics: use subscribe, subscribePattern or assign instead of load(path)"
        for name in option_names(DEAD_LETTER_OPTIONS):
            hints[name] = (
                "the Kafka source returns key and value as bytes and never rejects a record, so it has no dead "
                "letters; set deadLetter.* on the sink (writeStream) to divert records it refuses"
            )
        options.check_known(self.declared(), self.what, hints=hints)

    def backend(self, options: Options, streaming: bool) -> QueueBackend:
        """The Kafka backend; its own store is the consumer group."""
        return kafka_backend_from_options(options)

    def settings(self, options: Options, streaming: bool | None) -> ReaderSettings:
        """Kafka's names and defaults (``startingOffsets`` latest on a stream, earliest on a batch)."""
        return kafka_reader_settings(options, streaming)

    def check_reachable(self, options: Options) -> None:
        """A broker answers a metadata request."""
        # lazy: confluent_kafka (~0.3 s) loads only in processes that read or write Kafka
        from spyt_queue.kafka.clients import check_brokers_reachable

        check_brokers_reachable(kafka_config(options), connect_timeout(options))

    def stream_writer(self, options: Options, schema: Any, overwrite: bool) -> Any:
        """Micro-batches to Kafka topics."""
        from spyt_queue.kafka.sink import kafka_stream_writer

        return kafka_stream_writer(options, schema)

    def batch_writer(self, options: Options, schema: Any, overwrite: bool) -> Any:
        """A DataFrame to Kafka topics."""
        from spyt_queue.kafka.sink import kafka_batch_writer

        return kafka_batch_writer(options, schema, overwrite)


YT_SOURCE, KAFKA_SOURCE = YtSource(), KafkaSource()


def source_kind(options: Options) -> SourceKind:
    """The kind of source (or sink) the options describe: Kafka when ``kafka.bootstrap.servers`` is set."""
    return KAFKA_SOURCE if KAFKA_BOOTSTRAP in options else YT_SOURCE


#: Spark's entry points of a read: ``load()`` (``DataSource.schema``, stream or batch not yet known), a stream, a batch.
LOAD, STREAM, BATCH = "load", "stream", "batch"


@dataclass(frozen=True)
class PreparedQuery:
    """What a read needs, from options validated in one pass."""

    kind: SourceKind
    backend: QueueBackend
    settings: ReaderSettings
    store: OffsetStore | None


def prepare(options: Options, entry: str) -> PreparedQuery:
    """Validate a read's options and open what it needs, in the order a user fixes mistakes: option names, then
    values (backend, settings, store URI), then the servers, then the store. ``entry`` is :data:`LOAD`,
    :data:`STREAM` or :data:`BATCH`; only a stream must have a store, a batch opens one when it starts from it."""
    kind = source_kind(options)
    kind.check_options(options)
    check_uri(options.get_str(STORE_OPTION), store_credentials(options), password_in_uri=False)
    backend = kind.backend(options, streaming=entry == STREAM)
    settings = kind.settings(options, {LOAD: None, STREAM: True, BATCH: False}[entry])
    kind.check_reachable(options)
    if entry != BATCH or settings.starting.kind in STORE_KINDS:
        check_uri_store_reachable(options.get_str(STORE_OPTION), connect_timeout(options))
    store = None
    if entry == STREAM:
        store = require_store(store_for(options, backend))
    elif entry == BATCH and settings.starting.kind in STORE_KINDS:
        store = store_for(options, backend)
    return PreparedQuery(kind, backend, settings, store)


def check_source_options(options: Options) -> None:
    """Refuse option names the source does not read (see :meth:`SourceKind.check_options`)."""
    source_kind(options).check_options(options)


def backend_for(options: Options, streaming: bool) -> QueueBackend:
    """The backend reading the log the options describe (validated, not yet connected where avoidable)."""
    check_uri(options.get_str(STORE_OPTION), store_credentials(options), password_in_uri=False)
    return source_kind(options).backend(options, streaming)


def settings_for(options: Options, streaming: bool | None) -> ReaderSettings:
    """Reader settings for a stream, a batch, or (``None``) ``load()``."""
    return source_kind(options).settings(options, streaming)


def store_credentials(options: Options) -> StoreCredentials:
    """``offsets.store.user`` and ``offsets.store.password``: the credentials of a URI store."""
    return StoreCredentials(options.get_str(USER_OPTION), options.get_str(PASSWORD_OPTION))


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
        if store is not None:
            source_kind(options).check_native_store(backend)  # on the driver when the query starts, not in a task
        return store
    assert uri is not None
    group = group_for(options, backend)
    if not options.get_str("offsets.group") and getattr(backend, "per_query_group", False):
        # no group named: the query's own, as for the consumer group (see spyt_queue.stores.per_query)
        return PerQueryStore(
            group, partial(_open_uri_store, uri=uri, source=backend.source_id, credentials=store_credentials(options))
        )
    return open_store(uri, backend.source_id, group, store_credentials(options))


def _open_uri_store(group: str, *, uri: str, source: str, credentials: StoreCredentials) -> OffsetStore:
    """The ``offsets.store`` of ``group`` (module-level: a per-query store pickles it)."""
    return open_store(uri, source, group, credentials)


def require_store(store: OffsetStore | None) -> OffsetStore:
    """A stream must commit somewhere."""
    if store is None:
        raise OptionError(
            "consumer_path",
            "a streaming read needs somewhere to commit progress: a consumer table (consumer_path) or "
            "offsets.store=zookeeper://host:2181/path",
        )
    return store


@dataclass(frozen=True)
class Watched:
    """A query's log and where it commits, as ``ytqueue status`` reads them (:func:`watch`)."""

    #: The backend of the log the options describe (bounds, and its own store).
    backend: QueueBackend
    #: Where the query commits: the ``offsets.store`` of its group, else the backend's own store (the consumer table,
    #: the Kafka group); ``None`` for a YT queue read without a consumer.
    store: OffsetStore | None
    #: Whether :attr:`store` is an ``offsets.store`` (a server of its own, which may not answer).
    uri_store: bool
    #: The group the positions belong to (``None`` for a YT consumer table, which has no groups).
    group: str | None
    #: The options name no group and no writer token was given: :attr:`group` is the only group of such a query the
    #: store lists (:attr:`own_groups`), else the base such a query's group starts with.
    guessed: bool
    #: The groups of queries naming none, found in a store that can list its groups (a hint when several).
    own_groups: tuple[str, ...] = ()


def watch(options: Options, checkpoint: str | None = None, path_given_by: str | None = None) -> Watched:
    """The backend and store ``ytqueue status`` reads for the query the options describe (the query's own options:
    ``path``/``consumer_path``/``proxy`` or ``kafka.bootstrap.servers``/``subscribe``/``kafka.group.id``, and
    ``offsets.store``/``offsets.group``), built as :func:`prepare` builds them for the query, without the checks a
    query's start makes (an unregistered consumer is the caller's hint, not an error).

    A Kafka query naming no group commits under its own (:mod:`spyt_queue.stores.per_query`), named after the writer
    token its checkpoint keeps: ``checkpoint`` (the query's local ``checkpointLocation``, read by
    :func:`spyt_queue.lag.checkpoint_offset`) names that group exactly; without it, a store that can list its groups
    is searched for the only such group. ``path_given_by`` names where
    the user gave a YT queue's path, for messages (the CLI's ``--queue``)."""
    backend = source_kind(options).backend(options, streaming=False)
    if path_given_by and hasattr(backend, "path_given_by"):
        backend.path_given_by = path_given_by
    uri = options.get_str(STORE_OPTION)
    in_uri = not is_native(uri)
    store = store_for(options, backend) if in_uri else backend.default_store()
    if not isinstance(store, PerQueryStore):
        group = group_for(options, backend) if in_uri else getattr(backend, "group_id", None)
        return Watched(backend, store, in_uri, group, guessed=False)
    if checkpoint is not None:
        offset = checkpoint_offset(checkpoint, backend.source_id)
        if offset is None:
            raise SpytQueueError(
                f"the checkpoint {checkpoint} holds no offset yet: the query has not planned a batch, so it has "
                "committed nothing"
            )
        group = query_group(store.base, offset.writer)
        return Watched(backend, store.open_group(group), in_uri, group, guessed=False)
    base = store.store  # the base group's: a listing covers every group of the store
    own = tuple(g for g in base.groups() or () if is_query_group(store.base, g))
    if len(own) != 1:
        return Watched(backend, base, in_uri, store.base, guessed=True, own_groups=own)
    base.close()
    return Watched(backend, store.open_group(own[0]), in_uri, own[0], guessed=True, own_groups=own)
