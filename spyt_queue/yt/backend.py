"""The YTsaurus queue backend: bounds from ``get_tablet_infos``, reads with ``pull_consumer``, and the
consumer table advanced with ``advance_consumer(old_offset=...)`` in one tablet transaction.

It closes the gaps of SPYT's source: every pull is checked against ``$row_index`` (a trimmed range is
reported instead of being silently read past), advances are compare-and-set, bounds need no Queue Agent,
and tablets without a consumer row start at their first available row.
"""

from __future__ import annotations

import copy
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import yt.yson as yson
from pyspark.sql.types import StructType
from yt.wrapper import YsonFormat, YtClient
from yt.wrapper.errors import YtResponseError

from spyt_queue.backend import BatchJournal, DataLossHandler, PartitionBounds, QueueBackend
from spyt_queue.errors import OptionError, SchemaMismatchError, SpytQueueError, UnreachableError
from spyt_queue.stores.base import OffsetStore
from spyt_queue.yt.arrow_rows import RowConverter
from spyt_queue.yt.batch_journal import YtBatchJournal
from spyt_queue.yt.client import YtConnection
from spyt_queue.yt.consumer_store import YtConsumerStore
from spyt_queue.yt.declarations import DEFAULT_PULL_BATCH_ROWS
from spyt_queue.yt.dsv_rows import DsvDecoder, dsv_format, dsv_unsupported_columns, row_index_sequence
from spyt_queue.yt.errors import has_code, is_transient_yt_error
from spyt_queue.yt.schema import YtSchema, spark_schema

log = logging.getLogger("spyt_queue.yt")

_RESOLVE_ERROR = 500
_ROW_INDEX = b"$row_index"

_DISCOVERY_CHECKED: set[int] = set()


def skip_empty_proxy_discovery(client: YtClient) -> None:
    """Ask the proxy once per client whether it has heavy proxies; if it has none, turn discovery off.

    ``yt.wrapper`` asks ``/hosts`` before every heavy request (``pull_consumer``, ``select_rows``, ``insert_rows``,
    ``advance_consumer``), one extra round trip each. With an empty answer it sends them to the proxy it was given,
    which is what it does with discovery off: the routing is the same, minus a request per pull. A cluster that
    lists heavy proxies keeps discovery (and its choice among them); so does a failed check.
    """
    key = id(client)
    if key in _DISCOVERY_CHECKED:
        return
    _DISCOVERY_CHECKED.add(key)
    proxy_config = client.config["proxy"]
    if not proxy_config.get("enable_proxy_discovery", True):
        return
    try:
        from yt.wrapper.http_driver import HeavyProxyProvider  # lazy: versions without it leave discovery on (below)

        heavy = HeavyProxyProvider(client)._discover_heavy_proxies()
    except Exception as error:  # an old client without the method, or the proxy is unreachable right now
        log.debug("heavy proxy discovery check failed: %s", error)
        return
    if not heavy:
        proxy_config["enable_proxy_discovery"] = False


@dataclass(frozen=True)
class Pull:
    """One pull's rows, in either wire format: their row indexes (a ``range`` when contiguous) and how to build the
    reader's record batch of the first ``keep`` of them."""

    indexes: Sequence[int]
    batch: Callable[[int], pa.RecordBatch]


class YtQueueBackend(QueueBackend):
    """One YT queue read through one consumer (or without a consumer for batch reads)."""

    #: Where rows that do not convert go (``deadLetter.*``, set by the options); ``None``: they stop the query.
    dead_letters: Any = None

    def __init__(
        self,
        connection: YtConnection,
        queue_path: str,
        consumer_path: str | None,
        parsing_type_v3: bool = False,
        include_service_columns: bool = False,
        binary_strings: bool = False,
        pull_batch_rows: int = DEFAULT_PULL_BATCH_ROWS,
        empty_pull_retries: int = 10,
        read_format: str = "yson",
        *,
        path_given_by: str = "the path given to load()",
    ) -> None:
        """``path_given_by`` names where the user gave ``queue_path`` (a Spark ``load()``, a CLI option), for the
        message when it does not exist."""
        self.connection = connection
        self.path_given_by = path_given_by
        self.queue_path = queue_path
        self.consumer_path = consumer_path
        self.parsing_type_v3 = parsing_type_v3
        self.include_service_columns = include_service_columns
        self.binary_strings = binary_strings
        self.pull_batch_rows = pull_batch_rows
        self.empty_pull_retries = empty_pull_retries
        self._yt_schema: YtSchema | None = None
        self._table_id = ""
        self._converter: RowConverter | None = None
        self.read_format = read_format
        self._dsv: DsvDecoder | None = None
        self._dsv_refused = False
        self._known: frozenset[bytes] | None = None
        #: Pulls read per format in this process (``dsv``; ``yson``; ``dsv_redone``: DSV pulls re-read in YSON).
        self.pull_counts: dict[str, int] = {"dsv": 0, "yson": 0, "dsv_redone": 0}
        self._thread_client = False  # a copy of thread_copy(): the reading thread's own client

    # -- pickling: executors get configuration and the schema, never a live client ---------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_converter"] = None
        state["_dsv"] = None
        state["pull_counts"] = {"dsv": 0, "yson": 0, "dsv_redone": 0}
        state["_thread_client"] = False
        return state

    def thread_copy(self) -> YtQueueBackend:
        """A copy reading with the calling thread's own ``YtClient`` (``yt.wrapper`` clients are not thread-safe),
        with its own converters and pull counts, as an executor's unpickled copy has."""
        twin = copy.copy(self)
        twin.__dict__.update(self.__getstate__())
        twin._thread_client = True
        return twin

    @property
    def client(self) -> YtClient:
        """The process-wide cached ``YtClient``, or for a :meth:`thread_copy` the thread's own."""
        client = self.connection.thread_client() if self._thread_client else self.connection.client()
        skip_empty_proxy_discovery(client)
        return client

    @property
    def source_id(self) -> str:
        """``yt:<path>#<table id>``: a queue deleted and re-created at the same path is another source."""
        self.yt_schema  # noqa: B018 - fetches the table id with the schema, once
        return f"yt:{self.queue_path}#{self._table_id}"

    def describe(self, partition: str) -> str:
        """Human-readable name of a partition, for messages."""
        return f"tablet {partition} of {self.queue_path}"

    @property
    def yt_schema(self) -> YtSchema:
        """The queue's YT schema (fetched once, then carried along when pickled)."""
        if self._yt_schema is None:
            try:
                attributes = self.client.get(self.queue_path, attributes=["type", "dynamic", "schema", "sorted", "id"])
            except YtResponseError as error:
                if has_code(error, _RESOLVE_ERROR):
                    raise SpytQueueError(
                        f"Queue {self.queue_path} does not exist on {self.connection.proxy} "
                        f"(check {self.path_given_by})"
                    ) from error
                raise
            attrs = attributes.attributes
            if attrs.get("type") != "table" or not attrs.get("dynamic") or attrs.get("sorted"):
                raise SpytQueueError(
                    f"{self.queue_path} is not a queue: ytqueue reads ordered dynamic tables "
                    f"(type={attrs.get('type')}, dynamic={attrs.get('dynamic')}, sorted={attrs.get('sorted')})"
                )
            self._table_id = str(attrs.get("id", ""))
            self._yt_schema = YtSchema.parse(attrs["schema"])
        return self._yt_schema

    def schema(self) -> StructType:
        self._check_read_format()
        return spark_schema(
            self._data_schema(),
            parsing_type_v3=self.parsing_type_v3,
            include_service_columns=self.include_service_columns,
            binary_strings=self.binary_strings,
        )

    def _data_schema(self) -> YtSchema:
        """The queue's columns without system columns (``$timestamp``, ``$cumulative_data_weight``)."""
        return YtSchema(tuple(c for c in self.yt_schema.columns if not c.name.startswith("$")))

    def _check_read_format(self) -> None:
        """Refuse ``read_format=dsv`` for a queue with columns ``schemaful_dsv`` cannot carry."""
        if self.read_format != "dsv":
            return
        unsupported = dsv_unsupported_columns(self._data_schema())
        if unsupported:
            raise OptionError(
                "read_format",
                f"dsv reads flat primitive columns only, but {self.queue_path} has column(s) "
                f"{', '.join(repr(c) for c in unsupported)} of a type schemaful_dsv cannot carry (any/yson, composite, "
                "decimal, uuid): use read_format=auto (DSV when it can, YSON otherwise) or yson",
            )

    def _use_dsv(self) -> bool:
        """Whether pulls ask for ``schemaful_dsv`` (``read_format`` and the queue's column types)."""
        if self.read_format == "yson":
            return False
        self._check_read_format()
        return not dsv_unsupported_columns(self._data_schema())

    # -- driver side -----------------------------------------------------------------------------------
    def tablet_count(self) -> int:
        """Current number of tablets of the queue (a missing path or a table that is not a queue is refused)."""
        self._require_queue()
        try:
            return int(self.client.get(f"{self.queue_path}/@tablet_count"))
        except YtResponseError as error:
            if has_code(error, _RESOLVE_ERROR):
                self._require_queue(fresh=True)  # removed or replaced since the schema was read: say which
            raise

    def _require_queue(self, fresh: bool = False) -> None:
        """Raise the "does not exist" / "is not a queue" error of :attr:`yt_schema` (cached unless ``fresh``)."""
        cached = self._yt_schema
        if fresh:
            self._yt_schema = None
        if self._yt_schema is None:
            self.yt_schema  # noqa: B018 - the property performs the type check
        if cached is not None:
            self._yt_schema = cached  # a fresh check must not change the schema a running query converts with

    def bounds(self) -> dict[str, PartitionBounds]:
        count = self.tablet_count()
        if count == 0:
            return {}
        infos = self.client.get_tablet_infos(self.queue_path, list(range(count)))
        tablets = infos["tablets"]
        return {
            str(i): PartitionBounds(int(t["trimmed_row_count"]), int(t["total_row_count"]))
            for i, t in enumerate(tablets)
        }

    def batch_journal(self) -> BatchJournal | None:
        """The consumer node, when ``consumer_path`` was given (:mod:`spyt_queue.yt.batch_journal`)."""
        if not self.consumer_path:
            return None
        return YtBatchJournal(self.connection, self.consumer_path, self.source_id)

    def default_store(self) -> OffsetStore | None:
        """The consumer table, when ``consumer_path`` was given."""
        if not self.consumer_path:
            return None
        return YtConsumerStore(self.connection, self.queue_path, self.consumer_path)

    def is_transient(self, error: BaseException) -> bool:
        return is_transient_yt_error(error)

    # -- executor side ---------------------------------------------------------------------------------
    def _pull_bytes(self, tablet: int, offset: int, count: int, fmt: Any) -> bytes:
        """One pull of ``tablet`` from ``offset``; a proxy that stays away through the client's retries is
        :class:`UnreachableError` naming the tablet (the task fails; a restart resumes from the checkpoint)."""
        try:
            return self._pull_raw(tablet, offset, count, fmt)
        except Exception as error:
            if not self.is_transient(error) or isinstance(error, SpytQueueError):
                raise
            text = " ".join(str(error).split())[:300]
            raise UnreachableError(
                f"Could not pull rows from {offset} of {self.describe(str(tablet))}: the YTsaurus proxy did not answer "
                f"through the client's retries ({type(error).__name__}: {text}); the batch fails and a restart "
                "resumes from the checkpoint (yt.proxy.retries.* sets how long a pull waits)"
            ) from None

    def _pull_raw(self, tablet: int, offset: int, count: int, fmt: Any) -> bytes:
        if self.consumer_path:
            response = self.client.pull_consumer(
                self.consumer_path, self.queue_path, offset, tablet, max_row_count=count, format=fmt, raw=True
            )
        else:
            response = self.client.pull_queue(
                self.queue_path, offset, tablet, max_row_count=count, format=fmt, raw=True
            )
        return response.read() if hasattr(response, "read") else b"".join(response)

    def _pull(self, tablet: int, offset: int, count: int) -> list[dict[bytes, Any]]:
        """Up to ``count`` rows from ``offset`` of ``tablet`` in binary YSON, parsed."""
        data = self._pull_bytes(tablet, offset, count, YsonFormat(format="binary"))
        self.pull_counts["yson"] += 1
        return list(yson.loads(data, yson_type="list_fragment", always_create_attributes=False, encoding=None))

    def _pull_columns(
        self, tablet: int, offset: int, count: int, arrow_schema: pa.Schema
    ) -> tuple[np.ndarray, pa.RecordBatch] | None:
        """Up to ``count`` rows from ``offset`` of ``tablet`` in ``schemaful_dsv``: (row indexes, data columns), or
        ``None`` when this pull's values need YSON (see :class:`DsvDecoder`)."""
        if self._dsv is None:
            self._dsv = DsvDecoder(self._data_schema(), arrow_schema)
        try:
            data = self._pull_bytes(tablet, offset, count, dsv_format(self._data_schema()))
        except YtResponseError as error:
            if self.read_format != "auto" or self.is_transient(error):
                raise
            # A cluster that refuses schemaful_dsv for pulls: this reader goes on in YSON (whose pull reports any
            # other error as it always has).
            log.warning("%s: schemaful_dsv pull failed, reading in YSON: %s", self.describe(str(tablet)), error)
            self._dsv_refused = True
            return None
        decoded = self._dsv.decode(data)
        if decoded is None:
            self.pull_counts["dsv_redone"] += 1
            log.debug("pull at %d of %s re-read in YSON: schemaful_dsv cannot carry it exactly", offset, tablet)
            return None
        self.pull_counts["dsv"] += 1
        return decoded

    def _yson_pull(self, tablet: int, offset: int, count: int) -> Pull:
        """A YSON pull (:meth:`_pull`) as a :class:`Pull`: row indexes as a range when the rows are contiguous."""
        rows = self._pull(tablet, offset, count)
        if not rows:
            return Pull(range(0), lambda keep: self._empty_batch())
        known = self._known_keys()
        grown = [key for key in rows[-1] if key not in known and not key.startswith(b"$")]  # the last row: the newest
        if grown:
            raise self._grown(sorted(key.decode(errors="replace") for key in grown))
        first, last = rows[0][_ROW_INDEX], rows[-1][_ROW_INDEX]
        indexes: Sequence[int] = (
            range(first, last + 1) if last - first + 1 == len(rows) else [row[_ROW_INDEX] for row in rows]
        )
        converter = self._row_converter()
        return Pull(indexes, lambda keep: converter.convert(rows[:keep], tablet, indexes[:keep]))

    def _dsv_pull(self, tablet: int, offset: int, count: int) -> Pull | None:
        """A ``schemaful_dsv`` pull (:meth:`_pull_columns`) as a :class:`Pull`, ``None`` when it must be read in
        YSON instead (a value DSV cannot carry exactly, or a cluster refusing DSV pulls)."""
        pulled = self._pull_columns(tablet, offset, count, self._row_converter().arrow_schema)
        if pulled is None:
            return None
        row_indexes, data = pulled
        if not len(row_indexes):
            return Pull(range(0), lambda keep: self._empty_batch())
        indexes = row_index_sequence(row_indexes)
        return Pull(indexes, lambda keep: self._columns_batch(row_indexes[:keep], data.slice(0, keep), tablet))

    def _known_keys(self) -> frozenset[bytes]:
        """The keys a pulled YSON row may carry: the queue's columns when the query started, and system columns."""
        if self._known is None:
            self._known = frozenset(c.name.encode() for c in self.yt_schema.columns)
        return self._known

    def _check_not_grown(self) -> None:
        """Fail when the queue has columns it did not have when the query started (a DSV pull names its columns, so
        it would leave new ones out without a word): one ``get`` of the schema per range read in DSV."""
        fresh = YtSchema.parse(self.client.get(f"{self.queue_path}/@schema"))
        known = {c.name for c in self.yt_schema.columns}
        grown = [c.name for c in fresh.columns if c.name not in known and not c.name.startswith("$")]
        if grown:
            raise self._grown(grown)

    def _grown(self, columns: list[str]) -> SchemaMismatchError:
        return SchemaMismatchError(
            f"Queue {self.queue_path} gained column(s) {', '.join(map(repr, columns))} after this query started: Spark "
            "fixes a streaming query's schema when it starts, so restart the query to read them (from its checkpoint: "
            "nothing is lost or read twice)"
        )

    def _row_converter(self) -> RowConverter:
        if self._converter is None:
            self._converter = RowConverter(
                self._data_schema(),
                self.schema(),
                self.parsing_type_v3,
                self.include_service_columns,
                describe_source=f" of {self.queue_path}",
                dead_letters=self.dead_letters,
            )
        return self._converter

    def _empty_batch(self) -> pa.RecordBatch:
        return self._row_converter().arrow_schema.empty_table().to_batches()[0]

    def read_range(
        self, partition: str, start: int, end: int, on_data_loss: DataLossHandler
    ) -> Iterator[pa.RecordBatch]:
        """Exactly the rows ``[start, end)`` of a tablet, pulled ``pull_batch_rows`` at a time in DSV or YSON
        (:meth:`_dsv_pull`, :meth:`_yson_pull`), with trimmed and missing rows reported to ``on_data_loss``."""
        tablet = int(partition)
        expected = start
        empty_pulls = 0
        columnar = self._use_dsv()
        if columnar and not self._dsv_refused:
            self._check_not_grown()
        while expected < end:
            want = min(end - expected, self.pull_batch_rows)
            pull = self._dsv_pull(tablet, expected, want) if columnar and not self._dsv_refused else None
            if pull is None:
                pull = self._yson_pull(tablet, expected, want)
            indexes = pull.indexes
            if not len(indexes):
                empty_pulls += 1
                lower = self.bounds().get(partition, PartitionBounds(0, 0)).lower
                if lower >= end:
                    on_data_loss.report(
                        f"rows [{expected}, {end}) of {self.describe(partition)} were removed before they were read"
                    )
                    return
                if empty_pulls > self.empty_pull_retries:
                    raise SpytQueueError(
                        f"Read no rows at offset {expected} of {self.describe(partition)}, although the "
                        f"batch covers rows up to {end} and the tablet reports rows from {lower}"
                    )
                time.sleep(min(0.05 * 2**empty_pulls, 2.0))
                continue
            empty_pulls = 0
            first = int(indexes[0])
            if first < expected:
                raise SpytQueueError(f"{self.describe(partition)}: asked for rows from {expected} but got row {first}")
            if first > expected:
                on_data_loss.report(
                    f"rows [{expected}, {min(first, end)}) of {self.describe(partition)} were removed "
                    "(trimmed) before they were read"
                )
            if not isinstance(indexes, range):
                self._report_gaps(partition, indexes, on_data_loss)
            keep = len(indexes)
            if indexes[-1] >= end:
                # a pull that starts past ``end`` (rows trimmed beyond the range) keeps nothing
                keep = max(0, end - first) if isinstance(indexes, range) else sum(1 for i in indexes if i < end)
            if keep:
                yield pull.batch(keep)
                expected = int(indexes[keep - 1]) + 1
            else:
                expected = end

    def _columns_batch(self, row_indexes: np.ndarray, data: pa.RecordBatch, tablet: int) -> pa.RecordBatch:
        """The reader's record batch from a DSV pull's data columns (service columns prepended when asked for)."""
        assert self._converter is not None
        arrays = list(data.columns)
        if self.include_service_columns:
            arrays[:0] = [pa.repeat(pa.scalar(tablet, pa.int64()), len(row_indexes)), pa.array(row_indexes, pa.int64())]
        return pa.RecordBatch.from_arrays(arrays, schema=self._converter.arrow_schema)

    def _report_gaps(self, partition: str, indexes: Sequence[int], on_data_loss: DataLossHandler) -> None:
        for previous, current in itertools.pairwise(indexes):
            if current != previous + 1:
                on_data_loss.report(
                    f"rows [{previous + 1}, {current}) of {self.describe(partition)} are missing from a pull"
                )
