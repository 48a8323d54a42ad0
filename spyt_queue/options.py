"""Option parsing shared by every source and sink: typed getters that name the option at fault.

Spark hands Python data sources a case-insensitive dict whose values are all strings; these helpers
turn them into typed values or raise :class:`~spyt_queue.errors.OptionError` naming the option and the
accepted values, before any query starts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spyt_queue.errors import OptionError

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


class Options:
    """Case-insensitive, typed access to a source's or sink's options."""

    def __init__(self, raw: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> None:
        self._raw = {str(k).lower(): v for k, v in dict(raw).items()}
        self._defaults = {str(k).lower(): v for k, v in dict(defaults or {}).items()}

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._raw and self._raw[name.lower()] not in (None, "")

    def raw(self) -> dict[str, str]:
        """All options, keys lower-cased."""
        return dict(self._raw)

    def get_str(self, name: str, default: str | None = None, *aliases: str) -> str | None:
        """The option's string value (checking ``aliases`` too), or ``default``."""
        for source in (self._raw, self._defaults):  # explicit options (any alias) win over session defaults
            for key in (name, *aliases):
                value = source.get(key.lower())
                if value not in (None, ""):
                    return str(value)
        return default

    def require_str(self, name: str, hint: str) -> str:
        """The option's value; a missing one is an error that says what to set."""
        value = self.get_str(name)
        if value is None:
            raise OptionError(name, f"required. {hint}")
        return value

    def get_bool(self, name: str, default: bool, *aliases: str) -> bool:
        """A boolean option: true/false (also 1/0, yes/no, on/off)."""
        value = self.get_str(name, None, *aliases)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise OptionError(name, f"expected true or false, got {value!r}")

    def get_int(self, name: str, default: int | None, *aliases: str, minimum: int = 1) -> int | None:
        """An integer option of at least ``minimum``."""
        value = self.get_str(name, None, *aliases)
        if value is None:
            return default
        try:
            number = int(value.strip())
        except ValueError:
            raise OptionError(name, f"expected an integer >= {minimum}, got {value!r}") from None
        if number < minimum:
            raise OptionError(name, f"expected an integer >= {minimum}, got {number}")
        return number

    def get_choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        """One of ``choices`` (case-insensitive)."""
        value = self.get_str(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered not in choices:
            raise OptionError(name, f"expected one of {', '.join(choices)}, got {value!r}")
        return lowered

    def get_json(self, name: str) -> Any:
        """A JSON option, or ``None`` when absent."""
        value = self.get_str(name)
        if value is None:
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise OptionError(name, f"not valid JSON ({error.msg} at position {error.pos}): {value!r}") from None

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """Options starting with ``prefix``, prefix removed (pass-through configuration)."""
        prefix = prefix.lower()
        return {k[len(prefix) :]: v for k, v in self._raw.items() if k.startswith(prefix)}


def parse_positions(option: str, value: Any, what: str = "partition", allow_special: bool = False) -> dict[str, int]:
    """Parse per-partition positions given as JSON ``{"0": 5, "1": 7}`` (keys are partition keys).

    With ``allow_special``, -2 and -1 stand for the earliest and the latest available row (Kafka's rule).
    """
    minimum = -2 if allow_special else 0
    if not isinstance(value, dict) or not value:
        raise OptionError(option, f'expected a JSON object of {what} -> offset, e.g. {{"0": 5}}')
    positions: dict[str, int] = {}
    for key, offset in value.items():
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < minimum:
            accepted = "an integer >= 0, or -2 (earliest) / -1 (latest)" if allow_special else "an integer >= 0"
            raise OptionError(option, f"offset of {what} {key!r} must be {accepted}, got {offset!r}")
        positions[str(key)] = offset
    return positions
