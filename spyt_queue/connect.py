"""The one place that turns a user's options into what a query needs: a backend, reader settings, an offset store.

The Spark adapter (:mod:`spyt_queue.spark`) calls these functions and knows no backend. Which backend reads the log
is decided by the options (``kafka.bootstrap.servers`` means Kafka, otherwise a YTsaurus queue path); which store
keeps positions by ``offsets.store`` (see :mod:`spyt_queue.stores.registry`).
"""

from __future__ import annotations

from spyt_queue.backend import QueueBackend
from spyt_queue.errors import OptionError
from spyt_queue.options import Options
from spyt_queue.settings import ReaderSettings
from spyt_queue.stores.base import OffsetStore
from spyt_queue.stores.registry import OPTION as STORE_OPTION
from spyt_queue.stores.registry import check_uri, is_native, open_store


def is_kafka(options: Options) -> bool:
    """Whether the options describe a Kafka source or sink."""
    return "kafka.bootstrap.servers" in options


def backend_for(options: Options, streaming: bool) -> QueueBackend:
    """The backend reading the log the options describe (validated, not yet connected where avoidable)."""
    check_uri(options.get_str(STORE_OPTION))
    if is_kafka(options):
        from spyt_queue.kafka.options import kafka_backend_from_options

        return kafka_backend_from_options(options)
    from spyt_queue.yt.options import yt_backend_from_options

    # A stream needs somewhere to commit: the consumer table, unless another store is named.
    needs_consumer = streaming and is_native(options.get_str(STORE_OPTION))
    return yt_backend_from_options(options, streaming=needs_consumer)


def settings_for(options: Options, streaming: bool | None) -> ReaderSettings:
    """Reader settings for a stream, a batch, or (``None``) ``load()``, where only what is invalid in both modes
    can be rejected."""
    if is_kafka(options):
        from spyt_queue.kafka.options import kafka_reader_settings

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
        return backend.default_store()
    assert uri is not None
    return open_store(uri, backend.source_id, group_for(options, backend))


def require_store(store: OffsetStore | None) -> OffsetStore:
    """A stream must commit somewhere."""
    if store is None:
        raise OptionError(
            "consumer_path",
            "a streaming read needs somewhere to commit progress: a consumer table (consumer_path) or "
            "offsets.store=zookeeper://host:2181/path",
        )
    return store
