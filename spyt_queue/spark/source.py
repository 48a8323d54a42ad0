"""The ``ytqueue`` Python data source: Spark's entry point for reading and writing queues."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from spyt_queue.connect import backend_for, is_kafka, require_store, settings_for, store_for
from spyt_queue.errors import SpytQueueError
from spyt_queue.options import Options
from spyt_queue.settings import STORE_KINDS


class RejectedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Stands in for a stream reader whose options are invalid, raising the error from the first call Spark makes.

    PySpark's streaming runner calls ``reader.stop()`` in a ``finally`` around ``streamReader()``: an error raised
    there is masked by ``UnboundLocalError: cannot access local variable 'reader'``. Options valid for a batch but
    not for a stream (``endingOffsets``) can not be rejected at ``load()``, which does not say which it is.
    """

    def __init__(self, error: SpytQueueError) -> None:
        self.error = error

    def _fail(self) -> NoReturn:
        raise self.error.with_traceback(None)

    def getDefaultReadLimit(self) -> Any:
        """Raises the option error."""
        self._fail()

    def prepareForTriggerAvailableNow(self) -> None:
        """Raises the option error."""
        self._fail()

    def initialOffset(self) -> dict[str, Any]:
        """Raises the option error."""
        self._fail()

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:
        """Raises the option error."""
        self._fail()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """Raises the option error."""
        self._fail()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Raises the option error."""
        self._fail()

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing was read: nothing to commit."""

    def stop(self) -> None:
        """Nothing to release."""


class YtQueueDataSource(DataSource):
    """``format("ytqueue")``: YTsaurus queues (``.load("//queue")``) with a consumer table, or Kafka topics
    when ``kafka.bootstrap.servers`` is set."""

    session_defaults: dict[str, str] = {}

    @classmethod
    def name(cls) -> str:
        """The short name used with ``format()``."""
        return "ytqueue"

    def _options(self) -> Options:
        return Options(dict(self.options), defaults=self.session_defaults)

    def schema(self) -> StructType:
        """The queue's schema mapped to Spark types (see the README's mapping table).

        Runs at ``load()``: the reader options are checked here too, so a mistake fails before any query starts.
        """
        options = self._options()
        backend = backend_for(options, streaming=False)
        settings_for(options, streaming=None)
        return backend.schema()

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A micro-batch reader committing to the consumer after the sink."""
        from spyt_queue.spark.stream_reader import QueueStreamReader

        options = self._options()
        try:
            backend, settings = backend_for(options, streaming=True), settings_for(options, streaming=True)
            store = require_store(store_for(options, backend))
        except SpytQueueError as error:
            return RejectedStreamReader(error)
        return QueueStreamReader(backend, settings, store)

    def reader(self, schema: StructType) -> DataSourceReader:
        """A bounded batch reader (``startingOffsets`` earliest, ``endingOffsets`` latest by default)."""
        from spyt_queue.spark.batch_reader import QueueBatchReader

        options = self._options()
        backend, settings = backend_for(options, streaming=False), settings_for(options, streaming=False)
        store = store_for(options, backend) if settings.starting.kind in STORE_KINDS else None
        return QueueBatchReader(backend, settings, store)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """Writes each micro-batch to a YT dynamic table."""
        if is_kafka(self._options()):
            from spyt_queue.kafka.sink import kafka_stream_writer

            return kafka_stream_writer(self._options(), schema)
        from spyt_queue.spark.sink import yt_stream_writer

        return yt_stream_writer(self._options(), schema, overwrite)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Writes a DataFrame to a YT dynamic table."""
        if is_kafka(self._options()):
            from spyt_queue.kafka.sink import kafka_batch_writer

            return kafka_batch_writer(self._options(), schema)
        from spyt_queue.spark.sink import yt_batch_writer

        return yt_batch_writer(self._options(), schema, overwrite)
