"""Reader settings common to every backend: caps, starting/ending positions and data-loss policy."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spyt_queue.errors import OptionError
from spyt_queue.options import Options, parse_positions

EARLIEST, LATEST = -2, -1

PositionsParser = Callable[[str, Any], dict[str, int]]


def flat_parser(option: str, data: Any) -> dict[str, int]:
    """Per-partition JSON with flat keys: ``{"0": 5, "1": -2}`` (YT tablets)."""
    return parse_positions(option, data, allow_special=True)


@dataclass(frozen=True)
class Position:
    """A starting or ending position: a named choice, explicit offsets, or timestamps (milliseconds)."""

    kind: str  # consumer | group | earliest | latest | explicit | timestamp
    explicit: dict[str, int] | None = None
    timestamp: int | None = None
    timestamps: dict[str, int] | None = None
    timestamp_strategy: str = "error"

    @classmethod
    def parse(
        cls, option: str, value: str | None, default: str, allowed: tuple[str, ...], parser: PositionsParser
    ) -> Position:
        """Parse a named choice from ``allowed`` or a JSON object of offsets (-2 = earliest, -1 = latest)."""
        if value is None:
            return cls(default)
        text = value.strip()
        if text.lower() in allowed:
            return cls(text.lower())
        if text.startswith("{"):
            try:
                data: Any = json.loads(text)
            except json.JSONDecodeError as error:
                raise OptionError(option, f"not valid JSON ({error.msg}): {value!r}") from None
            return cls("explicit", parser(option, data))
        raise OptionError(option, f"expected one of {', '.join(allowed)} or a JSON object, got {value!r}")


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
        raise OptionError(option, f"expected a duration such as 15m, 30s or 500ms, got {value!r}")
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

    @classmethod
    def parse(
        cls,
        options: Options,
        starting_default: str = "consumer",
        streaming: bool = True,
        named: tuple[str, ...] = ("consumer", "earliest", "latest"),
        parser: PositionsParser = flat_parser,
        timestamps: PositionsParser | None = None,
    ) -> ReaderSettings:
        """Parse the common reader options; ``timestamps`` enables Kafka's ``startingTimestamp`` family."""
        allowed = named if streaming or starting_default in named else tuple(n for n in named if n != "consumer")
        starting = Position.parse(
            "startingOffsets", options.get_str("startingOffsets"), starting_default, allowed, parser
        )
        ending = Position.parse("endingOffsets", options.get_str("endingOffsets"), "latest", ("latest",), parser)
        if timestamps is not None:
            starting = _timestamp_position(options, "starting", starting, timestamps)
            if not streaming:
                ending = _timestamp_position(options, "ending", ending, timestamps)
        elif "startingTimestamp" in options or "startingOffsetsByTimestamp" in options:
            raise OptionError("startingTimestamp", "is only supported by the Kafka adapter")
        if streaming:
            for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
                if name in options:
                    raise OptionError(name, "only batch queries (spark.read) take an ending position")
        elif starting.kind == "latest":
            raise OptionError("startingOffsets", "'latest' is not allowed for batch queries (it reads nothing)")
        min_rows = options.get_int("minOffsetsPerTrigger", None, "min_rows_per_trigger")
        max_rows = options.get_int("maxOffsetsPerTrigger", None, "max_rows_per_trigger")
        if min_rows is not None and max_rows is not None and min_rows > max_rows:
            raise OptionError("minOffsetsPerTrigger", f"{min_rows} is larger than maxOffsetsPerTrigger {max_rows}")
        delay = options.get_str("maxTriggerDelay")
        return cls(
            max_rows_per_partition=options.get_int("max_rows_per_partition", None, "maxRowsPerPartition"),
            max_rows_per_trigger=max_rows,
            starting=starting,
            ending=ending,
            fail_on_data_loss=options.get_bool("failOnDataLoss", True, "fail_on_data_loss"),
            min_rows_per_trigger=min_rows,
            max_trigger_delay_ms=parse_duration_ms("maxTriggerDelay", delay) if delay else 15 * 60 * 1000,
            max_rows_per_task=options.get_int("maxRecordsPerPartition", None, "max_rows_per_task"),
            min_tasks=options.get_int("minPartitions", None, "min_tasks"),
        )


def _timestamp_position(options: Options, which: str, position: Position, parser: PositionsParser) -> Position:
    """Spark's precedence: ``<which>Timestamp`` > ``<which>OffsetsByTimestamp`` > ``<which>Offsets``."""
    strategy = options.get_choice(f"{which}OffsetsByTimestampStrategy", "error", ("error", "latest"))
    single = options.get_int(f"{which}Timestamp", None, minimum=0)
    if single is not None:
        return Position("timestamp", timestamp=single, timestamp_strategy=strategy)
    by_partition = options.get_json(f"{which}OffsetsByTimestamp")
    if by_partition is not None:
        return Position(
            "timestamp", timestamps=parser(f"{which}OffsetsByTimestamp", by_partition), timestamp_strategy=strategy
        )
    return position
