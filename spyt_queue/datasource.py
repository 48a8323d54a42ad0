"""The ``ytqueue`` Python data source: Spark's entry point for reading and writing queues."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from pyspark.errors import PySparkNotImplementedError
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    SimpleDataSourceStreamReader,
)
from pyspark.sql.types import StructType

from spyt_queue.connect import BATCH, LOAD, STREAM, prepare, source_kind
from spyt_queue.errors import SpytQueueError
from spyt_queue.options import Options
from spyt_queue.spark import compat
from spyt_queue.spark.batch_reader import QueueBatchReader
from spyt_queue.spark.compat import SupportsTriggerAvailableNow
from spyt_queue.spark.driver_reader import DriverStreamReader
from spyt_queue.spark.errors import one_line, user_errors
from spyt_queue.spark.stream_reader import QueueStreamReader

log = logging.getLogger("spyt_queue.source")

# What Spark's PythonStreamingSourceRunner.init() puts, at every streaming query start, into the environment map
# of the data source's registered Python function: one java.util.HashMap shared, without a lock, by every query of
# that source in the JVM (UserDefinedPythonDataSource.createPythonFunction passes the same map to each query).
STREAM_RUNNER_ENV = ("SPARK_LOCAL_DIRS", "SPARK_AUTH_SOCKET_TIMEOUT", "SPARK_BUFFER_SIZE", "SPARK_PYTHON_RUNTIME")


def seed_stream_runner_env(spark: Any, name: str = "ytqueue") -> bool:
    """Make query starts leave the shared environment map of data source ``name`` structurally unchanged.

    Spark 4 (checked up to 4.3) writes :data:`STREAM_RUNNER_ENV` into that map on each query's own thread when a
    streaming query of a Python data source starts. Two queries starting at once insert the same new keys
    concurrently, which can leave the map's size one above its entries (or tear a task being serialized
    meanwhile): from then on every task of every query of the source fails while Spark deserializes it
    (``java.io.OptionalDataException`` under ``java.util.HashMap.readObject``), before any Python code runs. Once
    the keys are present, a start only replaces values in place, which changes neither the size nor the table.
    So this puts the values Spark would put, right after registration, before any query can use the map.

    The values are Spark's own (its socket timeout and buffer size settings; the local directories as configured,
    where Spark puts its block manager's directories below them): Spark overwrites all four before any process
    sees them, and Python workers get their own, so only the keys' presence matters.

    Returns whether the map was reached: ``False`` (and nothing done) without a JVM (Spark Connect) or with a
    Spark whose internals differ; the source works as before then.
    """
    try:
        conf = spark.sparkContext._jsc.sc().conf()
        local_dirs = os.environ.get("SPARK_LOCAL_DIRS") or conf.get("spark.local.dir", tempfile.gettempdir())
        values = {
            "SPARK_LOCAL_DIRS": local_dirs,
            "SPARK_AUTH_SOCKET_TIMEOUT": str(conf.getTimeAsSeconds("spark.python.authenticate.socketTimeout", "15s")),
            "SPARK_BUFFER_SIZE": str(conf.getInt("spark.buffer.size", 65536)),
            "SPARK_PYTHON_RUNTIME": "PYTHON_WORKER",
        }
        source = spark._jsparkSession.sessionState().dataSourceManager().lookupDataSource(name)
        env = source.dataSourceCls().envVars()
        for key in STREAM_RUNNER_ENV:
            env.putIfAbsent(key, values[key])
    except Exception as error:  # no JVM (Spark Connect), or other Spark internals: nothing to protect here
        log.debug("could not pre-fill the stream runner environment of %r: %s", name, error)
        return False
    return True


class RejectedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Stands in for a stream reader whose options are invalid, raising the error from the first call Spark makes.

    PySpark's streaming runner calls ``reader.stop()`` in a ``finally`` around ``streamReader()``: an error raised
    there is masked by ``UnboundLocalError: cannot access local variable 'reader'``. Options valid for a batch but
    not for a stream (``endingOffsets``) can not be rejected at ``load()``, which does not say which it is.
    """

    def __init__(self, error: SpytQueueError) -> None:
        self.error = error

    def _fail(self) -> NoReturn:
        raise one_line(self.error)

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
        """The queue's schema mapped to Spark types (the mapping table of docs/reading.md, "Type mapping").

        Runs at ``load()``: the reader options are checked here too, so a mistake fails before any query starts.
        """
        return user_errors(self._schema)

    def _schema(self) -> StructType:
        return prepare(self._options(), LOAD).backend.schema()

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A micro-batch reader committing to the consumer after the sink, reading on executors.

        With ``read_mode=driver`` this raises ``PySparkNotImplementedError``, PySpark's signal to use
        :meth:`simpleStreamReader` instead. Errors are raised from the reader's first call
        (:class:`RejectedStreamReader`, in either mode), so ``query.exception()`` says them in one line."""
        try:
            query = prepare(self._options(), STREAM)
        except SpytQueueError as error:
            return RejectedStreamReader(error)
        assert query.store is not None  # a stream always has one (prepare raises otherwise)
        reader = QueueStreamReader(query.backend, query.settings, query.store)
        if query.settings.read_mode == "driver":
            # PySpark takes the simple-reader path (driver-side reads) only when streamReader() raises this; the
            # reader built here is handed to simpleStreamReader(), which Spark calls next on this same instance.
            self._driver_planner = reader
            raise PySparkNotImplementedError(
                errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "streamReader (read_mode=driver)"}
            )
        return compat.stream_reader(reader)  # the PySpark line's way of telling the reader where batches start

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        """``read_mode=driver``: the same reader, its batches read by the driver's Python runner
        (:class:`~spyt_queue.spark.driver_reader.DriverStreamReader`)."""
        planner = self.__dict__.pop("_driver_planner", None)  # not pickled along with the source
        if planner is None:
            try:
                built = self.streamReader(schema)
            except PySparkNotImplementedError:
                built = self.__dict__.pop("_driver_planner")
            if not isinstance(built, QueueStreamReader):
                raise PySparkNotImplementedError(
                    errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "simpleStreamReader"}
                )
            planner = built
        return compat.simple_stream_reader(DriverStreamReader(planner))  # 4.0/4.1: noting capped one-batch runs

    def reader(self, schema: StructType) -> DataSourceReader:
        """A bounded batch reader (``startingOffsets`` earliest, ``endingOffsets`` latest by default)."""
        return user_errors(self._reader)

    def _reader(self) -> DataSourceReader:
        query = prepare(self._options(), BATCH)
        return QueueBatchReader(query.backend, query.settings, query.store)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """Writes each micro-batch to a YT dynamic table or a Kafka topic."""
        return user_errors(lambda: self._stream_writer(schema, overwrite))

    def _stream_writer(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = self._options()
        return source_kind(options).stream_writer(options, schema, overwrite)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Writes a DataFrame to a YT dynamic table or a Kafka topic."""
        return user_errors(lambda: self._writer(schema, overwrite))

    def _writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = self._options()
        return source_kind(options).batch_writer(options, schema, overwrite)
