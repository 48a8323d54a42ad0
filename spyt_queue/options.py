"""Option parsing shared by every source and sink: typed getters that name the option at fault.

Spark hands Python data sources a case-insensitive dict whose values are all strings; these helpers
turn them into typed values or raise :class:`~spyt_queue.errors.OptionError` naming the option and the
accepted values, before any query starts. A rejected value is shown through :func:`spyt_queue.redaction.shown`
(short values in full, long ones by their first characters and length, never the value of a secret option).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from spyt_queue.errors import OptionError
from spyt_queue.redaction import is_secret_name, mask_uri, shown, split_uri

#: Seconds a source or sink waits for a YTsaurus proxy or Kafka broker to answer at ``load()``/``save()``/
#: ``start()`` before failing with one line naming the endpoint (the ``connect_timeout`` option).
DEFAULT_CONNECT_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_OPTION = "connect_timeout"

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


#: Where an option applies: a streaming read, a batch read, a write (sinks).
STREAM, BATCH, WRITE = "stream", "batch", "write"
READ = (STREAM, BATCH)
#: Kinds :meth:`Options.value` knows how to parse; ``prefix`` declares a pass-through family (``yt.<key>``).
KINDS = ("str", "int", "bool", "choice", "json", "seconds", "prefix")


@dataclass(frozen=True)
class Option:
    """One option a source or sink reads, declared once beside the code that reads it.

    The declaration is the single source of the option's names (for the unknown-option check and its did-you-mean
    hint), its type and default (for :meth:`Options.value`), the modes it applies to, and a one-line doc; the option
    tables of ``docs/`` are tested against the declarations (``tests/unit/test_option_declarations.py``).
    """

    name: str
    doc: str
    kind: str = "str"
    default: Any = None
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    minimum: int = 1
    modes: tuple[str, ...] = READ

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: kind {self.kind!r} is not one of {KINDS}")
        if self.kind == "choice" and self.default is not None and self.default not in self.choices:
            raise ValueError(f"option {self.name}: default {self.default!r} is not one of {self.choices}")

    @property
    def names(self) -> tuple[str, ...]:
        """The option's name and its aliases."""
        return (self.name, *self.aliases)


def option_names(*groups: Iterable[Option]) -> tuple[str, ...]:
    """Every name (aliases included) of the declared options in ``groups``, pass-through prefixes excluded."""
    return tuple(name for group in groups for option in group if option.kind != "prefix" for name in option.names)


def option_prefixes(*groups: Iterable[Option]) -> tuple[str, ...]:
    """The pass-through prefixes (``yt.``, ``kafka.``) declared in ``groups``."""
    return tuple(option.name for group in groups for option in group if option.kind == "prefix")


def find_option(name: str, *groups: Iterable[Option]) -> Option | None:
    """The declaration ``name`` (or one of its aliases, any case) belongs to, if any."""
    lowered = name.lower()
    for group in groups:
        for option in group:
            if lowered in (n.lower() for n in option.names):
                return option
    return None


CONNECT_TIMEOUT = Option(
    CONNECT_TIMEOUT_OPTION,
    "seconds to wait at load()/save()/start() for the proxy or brokers to answer",
    kind="seconds",
    default=DEFAULT_CONNECT_TIMEOUT_S,
    modes=(*READ, WRITE),
)


class Options:
    """Case-insensitive, typed access to a source's or sink's options."""

    def __init__(self, raw: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> None:
        self._raw = {str(k).lower(): v for k, v in dict(raw).items()}
        self._defaults = {str(k).lower(): v for k, v in dict(defaults or {}).items()}

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._raw and self._raw[name.lower()] not in (None, "")

    def given(self, option: Option) -> bool:
        """Whether ``option`` is set, under its name or any of its aliases (an empty value counts as not set)."""
        return any(name in self for name in option.names)

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
        raise OptionError(name, f"expected true or false, got {shown(name, value)}")

    def get_int(self, name: str, default: int | None, *aliases: str, minimum: int = 1) -> int | None:
        """An integer option of at least ``minimum``."""
        value = self.get_str(name, None, *aliases)
        if value is None:
            return default
        try:
            number = int(value.strip())
        except ValueError:
            raise OptionError(name, f"expected an integer >= {minimum}, got {shown(name, value)}") from None
        if number < minimum:
            raise OptionError(name, f"expected an integer >= {minimum}, got {number}")
        return number

    def get_choice(self, name: str, default: str, choices: tuple[str, ...], *aliases: str) -> str:
        """One of ``choices`` (case-insensitive)."""
        value = self.get_str(name, None, *aliases)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered not in choices:
            raise OptionError(name, f"expected one of {', '.join(choices)}, got {shown(name, value)}")
        return lowered

    def value(self, option: Option) -> Any:
        """The value of a declared option, parsed by its kind, with its default and aliases."""
        if option.kind == "int":
            return self.get_int(option.name, option.default, *option.aliases, minimum=option.minimum)
        if option.kind == "bool":
            return self.get_bool(option.name, bool(option.default), *option.aliases)
        if option.kind == "choice":
            return self.get_choice(option.name, option.default, option.choices, *option.aliases)
        if option.kind == "json":
            return self.get_json(option.name, *option.aliases)
        if option.kind == "seconds":
            return self.get_seconds(option.name, option.default, *option.aliases)
        if option.kind == "prefix":
            return self.with_prefix(option.name)
        return self.get_str(option.name, option.default, *option.aliases)

    def get_seconds(self, name: str, default: float, *aliases: str) -> float:
        """A finite number of seconds > 0."""
        value = self.get_str(name, None, *aliases)
        if value is None:
            return default
        try:
            seconds = float(value.strip())
        except ValueError:
            seconds = -1.0
        if not 0 < seconds < float("inf"):
            raise OptionError(name, f"expected a number of seconds > 0, got {shown(name, value)}")
        return seconds

    def get_json(self, name: str, *aliases: str) -> Any:
        """A JSON option, or ``None`` when absent."""
        value = self.get_str(name, None, *aliases)
        if value is None:
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise OptionError(
                name, f"not valid JSON ({error.msg} at position {error.pos}): {shown(name, value)}"
            ) from None

    def check_known(
        self,
        known: Iterable[str | Option],
        what: str,
        prefixes: Iterable[str] = (),
        hints: Mapping[str, str] | None = None,
    ) -> None:
        """Refuse an option that is neither in ``known`` nor under one of the pass-through ``prefixes``.

        Spark lower-cases option names, so the comparison ignores case; the error names the option as Spark gave
        it and suggests the closest known name (``difflib``). ``hints`` maps option names that belong elsewhere
        (a Kafka option on a YT source) to a sentence saying so. ``known`` holds declared options (their aliases
        and pass-through prefixes count) or plain names.
        """
        check_shown_values(self._raw)
        known = list(known)
        declared = [entry for entry in known if isinstance(entry, Option)]
        names = [entry for entry in known if isinstance(entry, str)]
        canonical = {name.lower(): name for name in (*names, *option_names(declared))}
        # one entry per prefix: a sink's pass-through prefix is often declared by its options too ("yt.*, yt.*")
        open_prefixes = tuple(dict.fromkeys(prefix.lower() for prefix in (*prefixes, *option_prefixes(declared))))
        elsewhere = {name.lower(): name for name in (hints or {})}
        for key in sorted(self._raw):
            if key in canonical or (open_prefixes and key.startswith(open_prefixes)):
                continue
            hint = {name.lower(): text for name, text in (hints or {}).items()}.get(key, "")
            raise OptionError(key, unknown_option_message(key, canonical, what, open_prefixes, hint, elsewhere))

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """Options starting with ``prefix``, prefix removed (pass-through configuration)."""
        prefix = prefix.lower()
        return {k[len(prefix) :]: v for k, v in self._raw.items() if k.startswith(prefix)}


#: Options with a refusal of their own for a password in a URI value (``offsets.store``: naming the store options).
#: The option naming where a query's positions are kept (declared in :mod:`spyt_queue.stores.registry`).
STORE_OPTION = "offsets.store"
OWN_URI_CHECK = (STORE_OPTION,)
_URI_START = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
#: librdkafka's option for an inline PEM private key (``kafka.ssl.key.pem``, ``deadLetter.kafka.ssl.key.pem``); any
#: value holding a PEM private key (``-----BEGIN [ENCRYPTED|RSA|EC ]PRIVATE KEY-----``) is refused as well.
INLINE_KEY_SUFFIX = "ssl.key.pem"
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")


def check_shown_values(raw: Mapping[str, str]) -> None:
    """Refuse option values Spark would print in query plans, the UI and its logs with a secret inside: Spark hides
    a value only when the option's *name* (or the value) matches ``spark.redaction.regex``, and it does not look
    inside a URI or a PEM block. A URI with a password (``yt.proxy.http_proxy=http://user:pw@corp:3128``) and inline
    private key material (``kafka.ssl.key.pem``, or a PEM private key in any value) are refused, naming the option
    and what to use instead (``ssl.key.location`` + ``ssl.key.password`` for a key); the message shows the URI
    masked and never the key."""
    for name, value in raw.items():
        text = str(value)
        if name.lower().endswith(INLINE_KEY_SUFFIX) or _PRIVATE_KEY.search(text):
            prefix = name[: -len(INLINE_KEY_SUFFIX)] if name.lower().endswith(INLINE_KEY_SUFFIX) else "kafka."
            prefix = "deadLetter.kafka." if prefix.lower() == "deadletter.kafka." else prefix
            raise OptionError(
                name,
                "inline private key material is refused: Spark would show it in query plans, the UI and its logs; "
                f"put the key in a file the driver and executors read and set {prefix}ssl.key.location to it (with "
                f"{prefix}ssl.key.password if it is encrypted; Spark redacts that option)",
            )
        if is_secret_name(name) or name.lower() in OWN_URI_CHECK:
            continue
        start = _URI_START.search(text)
        parts = split_uri(text[start.start() :]) if start else None
        if parts is not None and parts.has_password:
            raise OptionError(
                name,
                f"{mask_uri(text[start.start() :])!r} holds a password, which Spark would show in query plans, the UI "
                "and its logs: remove it from the URI. For an HTTP proxy set HTTPS_PROXY/HTTP_PROXY in the "
                "environment of the driver and executors instead (yt.wrapper and the Kafka client read them); for "
                "other credentials use their own options (token, kafka.sasl.password), which Spark redacts",
            )


def connect_timeout(options: Options) -> float:
    """``connect_timeout``: seconds to wait for a proxy or broker at ``load()``/``save()``/``start()``."""
    return float(options.value(CONNECT_TIMEOUT))


def unknown_option_message(
    key: str,
    canonical: Mapping[str, str],
    what: str,
    prefixes: tuple[str, ...] = (),
    hint: str = "",
    elsewhere: Mapping[str, str] | None = None,
) -> str:
    """The reason an unknown option is refused, with the closest known name (``did you mean``) or the open prefixes.

    ``elsewhere`` (lower-cased name -> name): options of another source or sink (``kafka.bootstrap.servers`` on a
    YT source); a near miss of one of them is suggested too, so ``kafka.bootstrap.server`` gets its did-you-mean."""
    message = f"not an option of {what}"
    if hint:
        return f"{message}: {hint}"
    close = difflib.get_close_matches(key, list(canonical), n=1, cutoff=0.6)
    if not close and elsewhere:
        near = difflib.get_close_matches(key, list(elsewhere), n=1, cutoff=0.8)
        if near:
            return f"{message}; did you mean '{elsewhere[near[0]]}'?"
    if not close:  # a misspelt prefix (kafak.bootstrap.servers): compare with the prefix put back
        for prefix in prefixes:
            head, dot, tail = key.partition(".")
            if dot and difflib.SequenceMatcher(None, head + ".", prefix).ratio() >= 0.6:
                close = [prefix + tail]
                break
    else:
        close = [canonical[close[0]]]
    if close:
        message += f"; did you mean '{close[0]}'?"
    else:
        message += " (see the option tables in docs/: reading.md, kafka.md, writing-yt.md, hbase.md, kudu.md"
        if prefixes:
            message += f"; {', '.join(p + '*' for p in prefixes)} options are passed through"
        message += ")"
    return message


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
