"""Reader settings common to every backend: caps, starting/ending positions and data-loss policy."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from spyt_queue.errors import OptionError
from spyt_queue.options import Options, parse_positions

STARTING_CHOICES = ("consumer", "earliest", "latest")
EARLIEST, LATEST = -2, -1


@dataclass(frozen=True)
class Position:
    """A starting or ending position: a named choice, or explicit per-partition offsets."""

    kind: str  # "consumer" | "earliest" | "latest" | "explicit"
    explicit: dict[str, int] | None = None

    @classmethod
    def parse(cls, option: str, value: str | None, default: str, allowed: tuple[str, ...]) -> Position:
        """Parse ``earliest``/``latest``/``consumer`` or JSON ``{"0": 5}`` (-2 = earliest, -1 = latest)."""
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
            positions = parse_positions(option, data, allow_special=True)
            return cls("explicit", positions)
        raise OptionError(option, f"expected one of {', '.join(allowed)} or a JSON object, got {value!r}")


@dataclass(frozen=True)
class ReaderSettings:
    """What to read and how much per batch, validated up front."""

    max_rows_per_partition: int | None
    max_rows_per_trigger: int | None
    starting: Position
    ending: Position
    fail_on_data_loss: bool

    @classmethod
    def parse(cls, options: Options, starting_default: str = "consumer", streaming: bool = True) -> ReaderSettings:
        """Parse the common reader options."""
        allowed = STARTING_CHOICES if starting_default == "consumer" else ("earliest", "latest")
        starting = Position.parse("startingOffsets", options.get_str("startingOffsets"), starting_default, allowed)
        ending = Position.parse("endingOffsets", options.get_str("endingOffsets"), "latest", ("latest",))
        if streaming and "endingOffsets" in options:
            raise OptionError("endingOffsets", "only batch queries (spark.read) take an ending position")
        if not streaming and starting.kind == "latest":
            raise OptionError("startingOffsets", "'latest' is not allowed for batch queries (it reads nothing)")
        return cls(
            max_rows_per_partition=options.get_int("max_rows_per_partition", None, "maxRowsPerPartition"),
            max_rows_per_trigger=options.get_int("maxOffsetsPerTrigger", None, "max_rows_per_trigger"),
            starting=starting,
            ending=ending,
            fail_on_data_loss=options.get_bool("failOnDataLoss", True, "fail_on_data_loss"),
        )
