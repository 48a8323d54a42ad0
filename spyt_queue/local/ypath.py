"""YPath handling: rich paths with attributes, ``cluster:`` prefixes, resolution into components."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yt.yson as yson

from spyt_queue.local.errors import YtError


@dataclass
class RichPath:
    """A path with its attributes (``<cluster=...; append=%true>//tmp/t``)."""

    path: str
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def cluster(self) -> str | None:
        """The ``cluster`` attribute, if any."""
        value = self.attributes.get("cluster")
        return None if value is None else str(value)


def parse_rich_path(value: Any, what: str = "path") -> RichPath:
    """A rich YPath from a parameter value (YSON string with attributes, or text with a ``<...>`` prefix)."""
    if value is None:
        raise YtError(f"Missing required parameter {what!r}")
    attributes: dict[str, Any] = {}
    if getattr(value, "has_attributes", lambda: False)():
        attributes.update({str(k): v for k, v in value.attributes.items()})
    if isinstance(value, dict) and "$value" in value:  # JSON-encoded parameter
        attributes.update({str(k): v for k, v in (value.get("$attributes") or {}).items()})
        value = value["$value"]
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise YtError(f"Error parsing {what!r}: expected a string, got {type(value).__name__}")
    text = str(value).strip()
    if text.startswith("<"):
        end = _attributes_end(text)
        try:
            parsed = yson.loads((text[:end] + " #").encode("utf-8"))
        except Exception as exc:
            raise YtError(f"Error parsing YPath {text!r}: {exc}") from None
        for key, item in parsed.attributes.items():
            attributes.setdefault(str(key), item)
        text = text[end:].strip()
    if text and not text.startswith(("/", "#")) and ":" in text:
        cluster, _, rest = text.partition(":")
        if rest.startswith(("/", "#")):
            attributes.setdefault("cluster", cluster)
            text = rest
    if not text:
        raise YtError("YPath cannot be empty")
    if not text.startswith(("/", "#")):
        raise YtError(f'Path "{text}" does not start with a valid root-designator')
    return RichPath(_without_selectors(text), attributes)


def _without_selectors(text: str) -> str:
    """The path without a trailing column selector ``{a,b}`` and row ranges ``[#10:#100]`` (which the commands
    served here do not use; YTsaurus parses them into the ``columns``/``ranges`` attributes)."""
    for opening, closing in (("[", "]"), ("{", "}")):
        if text.endswith(closing):
            start = text.rfind(opening)
            if start > 0 and text[start - 1] != "\\":
                text = text[:start]
    return text


def _attributes_end(text: str) -> int:
    depth = 0
    quote = False
    escape = False
    for index, char in enumerate(text):
        if quote:
            if escape:
                escape = False
            elif char == "\\":
                escape = True
            elif char == '"':
                quote = False
            continue
        if char == '"':
            quote = True
        elif char in "<[{":
            depth += 1
        elif char in ">]}":
            depth -= 1
            if depth == 0 and char == ">":
                return index + 1
    raise YtError(f"Error parsing YPath {text!r}: unterminated attributes")


def split_path(path: str) -> tuple[list[str], list[str] | None]:
    """``//a/b/@x/y`` -> (``["a", "b"]``, ``["x", "y"]``); the attribute part is ``None`` when absent.

    ``#<id>`` roots are returned as a first component ``"#<id>"``.
    """
    if path.startswith("#"):
        head, _, rest = path.partition("/")
        components = [head]
        tail = rest
    elif path.startswith("//"):
        components = []
        tail = path[2:]
    elif path == "/":
        return [], None
    elif path.startswith("/@"):
        components = []
        tail = path[1:]
    elif path.startswith("/"):  # YTsaurus's tokenizer: after the root "/" comes a "/" or the end
        token = path[1:].split("/", 1)[0]
        raise YtError(f'Expected "slash" in YPath but found "literal" token "{token}"', attributes={"path": path})
    else:
        raise YtError(f'Path "{path}" does not start with a valid root-designator')
    attribute: list[str] | None = None
    parts = _split_unescaped(tail) if tail else []
    for index, part in enumerate(parts):
        if part.startswith("@"):
            if part == "@" and index < len(parts) - 1:  # ``//t/@/key``: the attribute name is missing
                raise YtError('Expected "literal" in YPath but found "slash" token "/"', attributes={"path": path})
            attribute = [part[1:], *parts[index + 1 :]] if part[1:] else parts[index + 1 :]
            break
        if part == "":
            if index == len(parts) - 1:
                break
            raise YtError('Unexpected "slash" token "/" in YPath', attributes={"path": path})
        components.append(part)
    return components, attribute


def _split_unescaped(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escape = False
    for char in text:
        if escape:
            current.append(char)
            escape = False
        elif char == "\\":
            escape = True
        elif char == "/":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def join(components: list[str]) -> str:
    """Components back to ``//a/b`` (``/`` for the root)."""
    return "//" + "/".join(components) if components else "/"
