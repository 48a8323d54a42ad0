"""Reader settings common to every backend: caps, starting/ending positions and data-loss policy."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spyt_queue.errors import OptionError
from spyt_queue.options import BATCH, STREAM, Option, Options, parse_positions
from spyt_queue.redaction import shown

EARLIEST, LATEST = -2, -1
STORE_KINDS = ("consumer", "group", "store")  # startingOffsets resuming from the offset store (aliases)
#: ``min_rows_per_task``: ranges shorter than this share tasks (see :func:`spyt_queue.spark.partitions.pack_ranges`).
#: About the rows a task reads in the time Spark spends setting up one Python task (measured by bench/bench_packing.py).
DEFAULT_MIN_ROWS_PER_TASK = 20_000
#: ``read_mode``: where a streaming query reads its rows. ``executors``: one Python task per input partition (Spark's
#: ``DataSourceStreamReader`` path); ``driver``: the driver's Python runner reads each batch itself and Spark hands it
#: to the executors from its block manager (``SimpleDataSourceStreamReader``), no Python task on executors.
READ_MODES = ("executors", "driver")

PositionsParser = Callable[[str, Any], dict[str, int]]

STARTING_OFFSETS = Option(
    "startingOffsets", "where a query without a checkpoint starts: a named position or per-partition JSON offsets"
)
ENDING_OFFSETS = Option(
    "endingOffsets", "where a batch read ends: latest or per-partition JSON", default="latest", modes=(BATCH,)
)
MIN_ROWS_PER_TRIGGER = Option(
    "minOffsetsPerTrigger",
    "wait for at least N new rows (up to maxTriggerDelay)",
    kind="int",
    aliases=("min_rows_per_trigger",),
    modes=(STREAM,),
)
MAX_ROWS_PER_TRIGGER = Option(
    "maxOffsetsPerTrigger",
    "cap of rows per trigger, split in proportion to each partition's backlog",
    kind="int",
    aliases=("max_rows_per_trigger",),
    modes=(STREAM,),
)
MAX_TRIGGER_DELAY = Option(
    "maxTriggerDelay",
    "with minOffsetsPerTrigger: fire anyway after this delay (15m, 30s, 500ms)",
    default="15m",
    modes=(STREAM,),
)
MAX_ROWS_PER_PARTITION = Option(
    "max_rows_per_partition",
    "cap of rows per queue partition (tablet, Kafka partition) per micro-batch",
    kind="int",
    aliases=("maxRowsPerPartition",),
)
FAIL_ON_DATA_LOSS = Option(
    "failOnDataLoss",
    "rows lost before they were read fail the query (true) or are logged and skipped",
    kind="bool",
    default=True,
    aliases=("fail_on_data_loss",),
)
MAX_ROWS_PER_TASK = Option(
    "maxRecordsPerPartition",
    "cut long ranges into Spark tasks of at most N rows",
    kind="int",
    aliases=("max_rows_per_task",),
)
MIN_TASKS = Option("minPartitions", "cut a batch into at least N Spark tasks", kind="int", aliases=("min_tasks",))
MIN_ROWS_PER_TASK = Option(
    "min_rows_per_task",
    "ranges shorter than N rows share Spark tasks of up to N rows",
    kind="int",
    default=DEFAULT_MIN_ROWS_PER_TASK,
    aliases=("minRowsPerTask",),
    minimum=0,
)
READ_MODE = Option(
    "read_mode",
    "streams: executors reads in Python tasks; driver reads in the driver's runner",
    kind="choice",
    default="executors",
    choices=READ_MODES,
)
FETCH_RETRIES = Option(
    "fetchOffset.numRetries",
    "streams: attempts after a failed fetch of the partitions' ends before the query fails (Spark's Kafka option)",
    kind="int",
    default=3,
    minimum=0,
    modes=(STREAM,),
)
FETCH_RETRY_INTERVAL = Option(
    "fetchOffset.retryIntervalMs",
    "streams: milliseconds between those attempts",
    kind="int",
    default=1000,
    minimum=0,
    modes=(STREAM,),
)
#: The options :meth:`ReaderSettings.parse` reads. Options valid in batch reads only (``endingOffsets``) are refused
#: on a stream by ``parse``; stream-only ones (``maxOffsetsPerTrigger``) are accepted and ignored by batch reads, as in
#: Spark's Kafka source.
READER_OPTIONS = (
    STARTING_OFFSETS,
    ENDING_OFFSETS,
    MIN_ROWS_PER_TRIGGER,
    MAX_ROWS_PER_TRIGGER,
    MAX_TRIGGER_DELAY,
    MAX_ROWS_PER_PARTITION,
    FAIL_ON_DATA_LOSS,
    MAX_ROWS_PER_TASK,
    MIN_TASKS,
    MIN_ROWS_PER_TASK,
    READ_MODE,
    FETCH_RETRIES,
    FETCH_RETRY_INTERVAL,
)
STARTING_TIMESTAMP = Option(
    "startingTimestamp",
    "start every partition at its first record at or after this time (ms)",
    kind="int",
    minimum=0,
)
STARTING_BY_TIMESTAMP = Option("startingOffsetsByTimestamp", "per-partition JSON of start times (ms)", kind="json")
STARTING_TIMESTAMP_STRATEGY = Option(
    "startingOffsetsByTimestampStrategy",
    "a partition with no record at or after the time: error or latest",
    kind="choice",
    default="error",
    choices=("error", "latest"),
)
ENDING_TIMESTAMP = Option(
    "endingTimestamp",
    "end every partition at its first record at or after this time (ms)",
    kind="int",
    minimum=0,
    modes=(BATCH,),
)
ENDING_BY_TIMESTAMP = Option(
    "endingOffsetsByTimestamp", "per-partition JSON of end times (ms)", kind="json", modes=(BATCH,)
)
#: Kafka's ``startingTimestamp`` family, read when ``ReaderSettings.parse`` gets a ``timestamps`` parser.
TIMESTAMP_OPTIONS = (
    STARTING_TIMESTAMP,
    STARTING_BY_TIMESTAMP,
    STARTING_TIMESTAMP_STRATEGY,
    ENDING_TIMESTAMP,
    ENDING_BY_TIMESTAMP,
)


def flat_parser(option: str, data: Any) -> dict[str, int]:
    """Per-partition JSON with flat keys: ``{"0": 5, "1": -2}`` (YT tablets)."""
    return parse_positions(option, data, allow_special=True)


@dataclass(frozen=True)
class Position:
    """A starting or ending position: a named choice, explicit offsets, or timestamps (milliseconds)."""

    kind: str  # consumer | group | store (aliases) | earliest | latest | explicit | timestamp
    explicit: dict[str, int] | None = None
    timestamp: int | None = None
    timestamps: dict[str, int] | None = None
    timestamp_strategy: str = "error"
    option: str = "startingOffsets"  # the option this position came from, named in errors

    def named_partitions(self) -> set[str] | None:
        """Partitions a per-partition JSON position names (offsets or timestamps), ``None`` for other kinds."""
        if self.kind == "explicit":
            return set(self.explicit or {})
        if self.kind == "timestamp" and self.timestamps is not None:
            return set(self.timestamps)
        return None

    @classmethod
    def parse(
        cls, option: str, value: str | None, default: str, allowed: tuple[str, ...], parser: PositionsParser
    ) -> Position:
        """Parse a named choice from ``allowed`` or a JSON object of offsets (-2 = earliest, -1 = latest)."""
        if value is None:
            return cls(default, option=option)
        text = value.strip()
        if text.lower() in allowed:
            return cls(text.lower(), option=option)
        if text.startswith("{"):
            try:
                data: Any = json.loads(text)
            except json.JSONDecodeError as error:
                raise OptionError(option, f"not valid JSON ({error.msg}): {shown(option, value)}") from None
            return cls("explicit", parser(option, data), option=option)
        raise OptionError(option, f"expected one of {', '.join(allowed)} or a JSON object, got {shown(option, value)}")


def parse_duration_ms(option: str, value: str) -> int:
    """Durations as Spark writes them: ``15m``, ``30s``, ``500ms``, ``1h``, ``2 minutes`` or plain milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", value.lower())
    units = {
        "": 1,
        "ms": 1,
        "s": 1000,
        "sec": 1000,
        "second": 1000,
        "seconds": 1000,
        "m": 60_000,
        "min": 60_000,
        "minute": 60_000,
        "minutes": 60_000,
        "h": 3_600_000,
        "hour": 3_600_000,
        "hours": 3_600_000,
        "d": 86_400_000,
        "day": 86_400_000,
        "days": 86_400_000,
    }
    if not match or match.group(2) not in units:
        raise OptionError(option, f"expected a duration such as 15m, 30s or 500ms, got {shown(option, value)}")
    return int(match.group(1)) * units[match.group(2)]


@dataclass(frozen=True)
class ReaderSettings:
    """What to read and how much per batch, validated up front."""

    max_rows_per_partition: int | None
    max_rows_per_trigger: int | None
    starting: Position
    ending: Position
    fail_on_data_loss: bool
    min_rows_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    max_rows_per_task: int | None = None
    min_tasks: int | None = None
    min_rows_per_task: int = DEFAULT_MIN_ROWS_PER_TASK
    read_mode: str = "executors"
    fetch_retries: int = 3
    fetch_retry_interval_ms: int = 1000

    @classmethod
    def parse(
        cls,
        options: Options,
        starting_default: str = "consumer",
        streaming: bool | None = True,
        named: tuple[str, ...] = ("consumer", "store", "earliest", "latest"),
        parser: PositionsParser = flat_parser,
        timestamps: PositionsParser | None = None,
    ) -> ReaderSettings:
        """Parse the common reader options; ``timestamps`` enables Kafka's ``startingTimestamp`` family.

        ``streaming=None`` checks only what is wrong in both modes: ``DataSource.schema()`` runs at ``load()``
        without knowing whether the DataFrame is a stream, so this is all that can be rejected there.
        """
        if streaming is None or streaming or starting_default in named:
            allowed = named
        else:
            allowed = tuple(n for n in named if n not in STORE_KINDS)
        starting = Position.parse(
            STARTING_OFFSETS.name, options.value(STARTING_OFFSETS), starting_default, allowed, parser
        )
        ending = Position.parse(
            ENDING_OFFSETS.name, options.value(ENDING_OFFSETS), "latest", ("latest", "earliest"), parser
        )
        if timestamps is not None:
            starting = _timestamp_position(options, "starting", starting, timestamps)
            if not streaming:
                ending = _timestamp_position(options, "ending", ending, timestamps)
        else:
            for option in (STARTING_TIMESTAMP, STARTING_BY_TIMESTAMP):
                if option.name in options:
                    raise OptionError(option.name, "is only supported by the Kafka adapter")
        if streaming:
            for option in (*READER_OPTIONS, *TIMESTAMP_OPTIONS):
                if STREAM not in option.modes and option.name in options:
                    raise OptionError(option.name, "only batch queries (spark.read) take an ending position")
        else:  # a batch query, or load() (where an ending position is only valid for a batch query)
            _check_batch_positions(starting, ending, check_starting=streaming is not None)
        min_rows = options.value(MIN_ROWS_PER_TRIGGER)
        max_rows = options.value(MAX_ROWS_PER_TRIGGER)
        if min_rows is not None and max_rows is not None and min_rows > max_rows:
            raise OptionError(MIN_ROWS_PER_TRIGGER.name, f"{min_rows} is larger than maxOffsetsPerTrigger {max_rows}")
        return cls(
            max_rows_per_partition=options.value(MAX_ROWS_PER_PARTITION),
            max_rows_per_trigger=max_rows,
            starting=starting,
            ending=ending,
            fail_on_data_loss=options.value(FAIL_ON_DATA_LOSS),
            min_rows_per_trigger=min_rows,
            max_trigger_delay_ms=parse_duration_ms(MAX_TRIGGER_DELAY.name, options.value(MAX_TRIGGER_DELAY)),
            max_rows_per_task=options.value(MAX_ROWS_PER_TASK),
            min_tasks=options.value(MIN_TASKS),
            min_rows_per_task=options.value(MIN_ROWS_PER_TASK) or 0,
            read_mode=options.value(READ_MODE),
            fetch_retries=options.value(FETCH_RETRIES),
            fetch_retry_interval_ms=options.value(FETCH_RETRY_INTERVAL),
        )


def _check_batch_positions(starting: Position, ending: Position, check_starting: bool = True) -> None:
    """Spark's batch rules: a batch never starts at the latest offset nor ends at the earliest one, and start and
    end given per partition must name the same partitions. ``check_starting=False`` skips the starting rules
    (valid for a stream), for ``load()``."""
    if ending.kind == "earliest":
        raise OptionError(ending.option, "'earliest' is not allowed for batch queries (it reads nothing)")
    if check_starting and starting.kind == "latest":
        raise OptionError(starting.option, "'latest' is not allowed for batch queries (it reads nothing)")
    for key, offset in sorted((starting.explicit or {}).items() if check_starting else ()):
        if offset == LATEST:
            raise OptionError(starting.option, f"offset -1 (latest) of {key} is not allowed for batch queries")
    for key, offset in sorted((ending.explicit or {}).items()):
        if offset == EARLIEST:
            raise OptionError(ending.option, f"offset -2 (earliest) of {key} is not allowed for batch queries")
    first, last = starting.named_partitions(), ending.named_partitions()
    if first is not None and last is not None and first != last:
        only_start, only_end = sorted(first - last), sorted(last - first)
        details = "; ".join(
            part
            for part in (
                f"only in {starting.option}: {', '.join(only_start)}" if only_start else "",
                f"only in {ending.option}: {', '.join(only_end)}" if only_end else "",
            )
            if part
        )
        raise OptionError(ending.option, f"must name the same partitions as {starting.option} ({details})")


def _timestamp_position(options: Options, which: str, position: Position, parser: PositionsParser) -> Position:
    """Spark's precedence: ``<which>Timestamp`` > ``<which>OffsetsByTimestamp`` > ``<which>Offsets``.

    An ending timestamp with no record at or after it means the latest offset (Spark's rule), so only the
    starting side has a strategy.
    """
    strategy = "latest"
    if which == "starting":
        strategy = options.value(STARTING_TIMESTAMP_STRATEGY)
    single_option, by_partition_option = (
        (STARTING_TIMESTAMP, STARTING_BY_TIMESTAMP) if which == "starting" else (ENDING_TIMESTAMP, ENDING_BY_TIMESTAMP)
    )
    single = options.value(single_option)
    if single is not None:
        return Position("timestamp", timestamp=single, timestamp_strategy=strategy, option=single_option.name)
    name = by_partition_option.name
    by_partition = options.value(by_partition_option)
    if by_partition is not None:
        return Position("timestamp", timestamps=parser(name, by_partition), timestamp_strategy=strategy, option=name)
    return position
