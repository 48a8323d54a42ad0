"""Keeping secrets out of everything a user sees: error messages, ``describe()`` strings, ``repr()``, logs.

Spark hides an option's value in query plans, progress and its logs when the option's *name* (or the value itself)
matches ``spark.redaction.regex`` (default :data:`SPARK_REDACTION_PATTERN`). spyt-queue follows the same rule for
its own messages, and adds two of its own:

* the password of a URI (``zookeeper://user:password@host/...``) is replaced by ``***`` (:func:`mask_uri`);
* an invalid option value is echoed only when it is short (:data:`SHOWN_CHARS` characters at most); a longer one
  (a token pasted into the wrong option) shows its first 3 characters and its length (:func:`shown`), except a
  mistyped URI (``zookeeper:/zk:2181/spyt``), shown whole with only its password masked, so the typo can be seen.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Spark's default ``spark.redaction.regex``: option names (and values) matching it are redacted.
SPARK_REDACTION_PATTERN = re.compile(r"(?i)secret|password|token|access[.]?key")
#: What Spark shows instead of a redacted value.
REDACTED = "*********(redacted)"
#: Longest invalid option value an error message repeats in full.
SHOWN_CHARS = 16
#: What replaces the password of a URI in messages.
MASK = "***"


def is_secret_name(name: str) -> bool:
    """Whether Spark would redact an option called ``name`` (its default ``spark.redaction.regex``)."""
    return bool(SPARK_REDACTION_PATTERN.search(str(name)))


#: Query parameters of the store URIs (``?acl=...&layout=...``): an ``@`` after ``?name=`` or ``&name=`` of one of
#: them belongs to the parameter's value (a ZooKeeper ``sasl:spyt@REALM`` ACL), not to user information.
URI_PARAMETERS = ("acl", "layout", "timeout", "keep", "family", "create", "transport", "protocol", "buckets")
_PARAMETER_START = re.compile(r"[?&](?:" + "|".join(URI_PARAMETERS) + r")=")


@dataclass(frozen=True)
class UriParts:
    """A URI split as its user meant it: ``scheme://[userinfo@]hosts[/path][?query]``.

    ``userinfo`` is None when the URI has none, else everything between ``://`` and the *last* ``@`` before the
    query parameters, so a password holding an unencoded ``?``, ``#``, ``@``, ``/``, ``%`` or space stays whole
    (``zookeeper://alice:Xy7?k2Lq@zk/spyt`` has the user information ``alice:Xy7?k2Lq``, not the query
    ``k2Lq@zk/spyt``). ``hosts`` runs to the first ``/`` or ``?`` after it; ``path`` (without its leading ``/``)
    to the first ``?``; ``slash`` and ``question`` say whether a path and a query were given."""

    scheme: str
    userinfo: str | None
    hosts: str
    slash: bool
    path: str
    query: str
    question: bool = False

    @property
    def has_password(self) -> bool:
        """Whether the user information holds a password (``user:password``)."""
        return self.userinfo is not None and ":" in self.userinfo


def split_uri(uri: str) -> UriParts | None:
    """``uri`` split by :class:`UriParts`, or None when it has no ``scheme://``."""
    scheme, sep, rest = str(uri).partition("://")
    if not sep:
        return None
    parameter = _PARAMETER_START.search(rest)
    at = rest.rfind("@", 0, parameter.start() if parameter else len(rest))
    userinfo = rest[:at] if at >= 0 else None
    rest = rest[at + 1 :]
    rest, question, query = rest.partition("?")
    hosts, slash, path = rest.partition("/")
    return UriParts(scheme, userinfo, hosts, bool(slash), path, query, bool(question))


def mask_uri(uri: str) -> str:
    """``uri`` with the password of its user information (``user:password@``) replaced by ``***``, and the values
    of query parameters whose names Spark redacts (``?token=...``) too; other text is returned unchanged.

    The user information is split off as :func:`split_uri` does (up to the last ``@``), so a password holding an
    unencoded ``?``, ``#``, ``/``, ``@``, ``%`` or a space is masked whole as well."""
    parts = split_uri(uri)
    if parts is None:
        return uri
    head = parts.hosts + ("/" + parts.path if parts.slash else "")
    if parts.userinfo is not None:
        user, colon, _ = parts.userinfo.partition(":")
        shown_user = f"{user}:{MASK}" if colon and not any(c in user for c in "/?#@ ") else MASK
        head = f"{shown_user}@{head}"
    if not parts.question:
        return f"{parts.scheme}://{head}"
    pairs = []
    for pair in parts.query.split("&"):
        name, equals, _ = pair.partition("=")
        pairs.append(f"{name}={MASK}" if equals and is_secret_name(name) else pair)
    return f"{parts.scheme}://{head}?{'&'.join(pairs)}"


#: A URI with its ``://`` mistyped (``zookeeper:/zk:2181``, ``zookeeper//zk:2181``, ``zookeeper:u:pw@zk``): a
#: lower-case scheme and what stands for ``://``, then the rest, whose user information :func:`shown` masks as
#: :func:`mask_uri` does. ``name:value`` without ``/`` after the colon and without ``@`` may be ``user:password``,
#: and a token holds no ``:``: neither is taken for a URI.
_MISTYPED_URI = re.compile(r"([a-z][a-z0-9+.\-]*(?::/{1,3}|/{2,3}|:(?=\S*@)))(\S+)\Z")


def shown(option: str, value: Any) -> str:
    """How an error message names the value ``value`` given to ``option``: Spark's ``*********(redacted)`` for an
    option whose name Spark redacts, a URI with its password masked, a short value quoted in full, and a long one
    (over :data:`SHOWN_CHARS` characters, such as a token in the wrong option) as its first 3 characters and length:
    ``'y0_…' (46 characters)``."""
    if is_secret_name(option):
        return REDACTED
    text = str(value)
    if "://" in text:
        return repr(mask_uri(text))
    mistyped = _MISTYPED_URI.match(text)
    if mistyped:  # a mistyped URI (zookeeper:/zk:2181/spyt): shown whole, so the typo can be seen, its password masked
        return repr(mistyped.group(1) + mask_uri("x://" + mistyped.group(2))[len("x://") :])
    if len(text) > SHOWN_CHARS:
        return f"{(text[:3] + '…')!r} ({len(text)} characters)"
    return repr(text)


def redact_mapping(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` (nested dicts too) with the values of keys Spark redacts replaced by ``REDACTED`` and
    the password of a URI in any other string value masked (``http_proxy``: ``http://user:***@corp:3128``)."""

    def value_shown(key: Any, value: Any) -> Any:
        if is_secret_name(str(key)):
            return REDACTED
        if isinstance(value, Mapping):
            return redact_mapping(value)
        if isinstance(value, str) and "://" in value:
            return mask_uri(value)
        return value

    return {key: value_shown(key, value) for key, value in config.items()}


class RedactingLogger(logging.LoggerAdapter):
    """A logger for a library that logs what it sends (kazoo logs its ``Auth`` request with the password at DEBUG):
    every record is formatted first and each of ``secrets`` replaced by ``***``."""

    def __init__(self, logger: logging.Logger, secrets: Iterable[str]) -> None:
        super().__init__(logger, {})
        self.secrets = tuple(s for s in secrets if s)

    def __repr__(self) -> str:
        return f"<RedactingLogger {self.logger.name}>"

    def log(self, level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
        """Log ``msg % args`` with the secrets masked."""
        if not self.isEnabledFor(level):
            return
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            text = " ".join(str(part) for part in (msg, *args))
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        kwargs.setdefault("stacklevel", 2)
        self.logger.log(level, "%s", text, **kwargs)
