"""The YTsaurus source's and connection's options, declared once (:class:`~spyt_queue.options.Option`).

Declarations only, with no import of ``yt.wrapper`` or pandas: the option checks of every source kind
(:mod:`spyt_queue.connect`, a Kafka source naming YT options, the sinks) read them in processes that never talk to
YTsaurus. The functions that build clients and backends from them are in :mod:`spyt_queue.yt.options`.
"""

from __future__ import annotations

from spyt_queue.options import CONNECT_TIMEOUT, READ, WRITE, Option

#: Rows per pull: each pull costs a round trip and ``yt.wrapper``'s per-request work (a few ms), so fewer, larger
#: pulls; the server still cuts a pull at its data-weight limit (16 MB by default).
DEFAULT_PULL_BATCH_ROWS = 50_000
#: ``read_format`` values: ``auto`` pulls ``schemaful_dsv`` when every column is a flat primitive (else YSON), ``dsv``
#: insists on it (refused for other schemas), ``yson`` always pulls YSON.
READ_FORMATS = ("auto", "yson", "dsv")

YT_CONFIG_PREFIX = "yt."

PROXY = Option(
    "proxy", "the cluster's HTTP proxy (host:port); default: YT_PROXY", aliases=("cluster",), modes=(*READ, WRITE)
)
TOKEN = Option("token", "the cluster's token; default: YT_TOKEN", modes=(*READ, WRITE))
YT_CONFIG = Option(
    YT_CONFIG_PREFIX,
    "passed to yt.wrapper's client config: yt.proxy.request_timeout=30000",
    kind="prefix",
    modes=(*READ, WRITE),
)
#: Options of :func:`connection_from_options`, for sources and sinks alike.
YT_CONNECTION_OPTIONS = (PROXY, TOKEN, YT_CONFIG, CONNECT_TIMEOUT)

QUEUE_PATH = Option("path", "the queue: an ordered dynamic table (or .load(path))")
CONSUMER_PATH = Option(
    "consumer_path", "the consumer table progress is committed to (registered for the queue)", aliases=("consumerPath",)
)
PARSING_TYPE_V3 = Option(
    "parsing_type_v3", "composite YT types as Spark nested types instead of YSON bytes", kind="bool", default=False
)
INCLUDE_SERVICE_COLUMNS = Option(
    "include_service_columns", "prepend the source tablet index and row index columns", kind="bool", default=False
)
BINARY_STRINGS = Option("binary_strings", "read YT string columns as Spark binary", kind="bool", default=False)
PULL_BATCH_ROWS = Option(
    "pull_batch_rows", "rows per pull_consumer request on executors", kind="int", default=DEFAULT_PULL_BATCH_ROWS
)
READ_FORMAT = Option(
    "read_format",
    "wire format of pulls: yson, dsv (schemaful_dsv), or auto",
    kind="choice",
    default="yson",
    choices=READ_FORMATS,
)
#: Options :func:`yt_backend_from_options` reads; reader settings and offset stores add theirs (spyt_queue.connect).
YT_SOURCE_OPTIONS = (
    *YT_CONNECTION_OPTIONS,
    QUEUE_PATH,
    CONSUMER_PATH,
    PARSING_TYPE_V3,
    INCLUDE_SERVICE_COLUMNS,
    BINARY_STRINGS,
    PULL_BATCH_ROWS,
    READ_FORMAT,
)
