"""Wire formats: parameters, structured values and tabular rows in YSON (binary/text) and JSON.

Rows are held as ``dict[bytes, value]`` with YT strings as ``bytes`` (``yt.yson.loads(..., encoding=None)``);
structured values (parameters, attributes, command results) use ``str``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yt.yson as yson

from spyt_queue.local.errors import YtError

try:  # The C bindings; ``yt.yson`` uses them too, this only skips a Python-level wrapper.
    import yt_yson_bindings as _bindings
except ImportError:  # pragma: no cover - the package requires the bindings
    _bindings = None

YSON_CONTENT_TYPES = {
    "binary": "application/x-yt-yson-binary",
    "text": "application/x-yt-yson-text",
    "pretty": "application/x-yt-yson-pretty",
}
SUPPORTED_FORMATS = ("yson", "json")


@dataclass(frozen=True)
class Format:
    """A parsed YT format specification (``<format=binary>yson``, ``<encode_utf8=%false>json``...)."""

    name: str
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def yson_format(self) -> str:
        """``binary``, ``text`` or ``pretty`` for YSON."""
        return str(self.attributes.get("format", "binary"))

    @property
    def is_binary_yson(self) -> bool:
        """Whether stored binary YSON rows can be sent as they are."""
        return self.name == "yson" and self.yson_format == "binary"

    @property
    def content_type(self) -> str:
        """The HTTP Content-Type of a body in this format."""
        if self.name == "json":
            return "application/json"
        if self.name == "schemaful_dsv":
            return "text/tab-separated-values"
        return YSON_CONTENT_TYPES.get(self.yson_format, "application/x-yt-yson-binary")

    @property
    def encode_utf8(self) -> bool:
        """JSON ``encode_utf8`` (default true): YT byte strings map byte-per-code-point."""
        return bool(self.attributes.get("encode_utf8", True))


def parse_format(spec: Any, what: str = "format") -> Format:
    """Parse a format parameter value; unsupported formats fail with a YT error."""
    if spec is None:
        raise YtError(f"Missing {what}")
    if isinstance(spec, dict) and "$value" in spec:  # JSON-encoded YSON with attributes
        name, attributes = spec["$value"], dict(spec.get("$attributes") or {})
    else:
        name = spec
        attributes = dict(spec.attributes) if getattr(spec, "has_attributes", lambda: False)() else {}
    if isinstance(name, bytes):
        name = name.decode()
    if not isinstance(name, str):
        raise YtError(f"Error parsing {what}: expected a string, got {type(name).__name__}")
    name = str.__str__(name)
    attributes = {_to_str(k): v for k, v in attributes.items()}
    if what == "output_format" and name not in (*SUPPORTED_FORMATS, "schemaful_dsv", "web_json"):
        # CreateSchemafulWriterForFormat / CreateConsumerForFormat (yt/yt/library/formats/format.cpp): arrow, skiff,
        # protobuf, dsv, yamr... are static-table (read_table) formats only.
        raise YtError(f'Unsupported output format "{name}"', attributes={"format": name})
    if name == "schemaful_dsv" and what == "output_format":
        _schemaful_dsv_config(attributes)
        return Format(name, attributes)
    if name not in SUPPORTED_FORMATS:
        raise YtError(
            f"Format {name!r} is not supported by the local server (supported: yson, json)", attributes={"format": name}
        )
    if name == "yson" and str(attributes.get("format", "binary")) not in YSON_CONTENT_TYPES:
        raise YtError(f"Invalid YSON format {attributes.get('format')!r}")
    return Format(str(name), attributes)


def _to_str(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# --------------------------------------------------------------------------------------------------------------
# Parameters and structured values


def parse_parameters(data: bytes, header_format: str) -> dict[str, Any]:
    """Parameters from ``X-YT-Parameters`` or a POST body in the header format (``yson`` or ``json``)."""
    if not data.strip():
        return {}
    try:
        if header_format == "json":
            value = yson.json_to_yson(json.loads(data))
        else:
            value = yson.loads(data)
    except Exception as exc:  # the YSON/JSON parsers raise several types
        raise YtError(f"Unable to parse parameters: {exc}") from None
    if not isinstance(value, dict):
        raise YtError("Parameters must be a map")
    return dict(value)


def header_format_of(header: str | None) -> str:
    """``yson`` or ``json`` from ``X-YT-Header-Format`` (``<format=text>yson``, ``json``); default ``json``."""
    if not header:
        return "json"
    text = header.strip()
    if text.endswith("yson"):
        return "yson"
    if text.endswith("json"):
        return "json"
    raise YtError(f"Unsupported header format {header!r}")


def encode_header_value(value: Any, header_format: str) -> str:
    """A structured value for a response header, in the request's header format."""
    if header_format == "yson":
        return yson.dumps(value, yson_format="text").decode("latin-1")
    return json.dumps(to_json(value, encode_utf8=True), ensure_ascii=True)


def to_json(value: Any, encode_utf8: bool = True) -> Any:
    """YSON value to YT's JSON representation (``$attributes``/``$value``, byte strings per ``encode_utf8``)."""
    attributes = None
    if getattr(value, "has_attributes", None) is not None and value.has_attributes():
        attributes = value.attributes
    if isinstance(value, bytes):
        result: Any = value.decode("latin-1") if encode_utf8 else value.decode("utf-8", "replace")
    elif isinstance(value, str):
        result = value.encode("utf-8").decode("latin-1") if encode_utf8 else str(value)
    elif isinstance(value, bool):
        result = bool(value)
    elif isinstance(value, int):
        result = int(value)
    elif isinstance(value, float):
        result = float(value)
    elif isinstance(value, dict):
        result = {_json_key(k, encode_utf8): to_json(v, encode_utf8) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        result = [to_json(v, encode_utf8) for v in value]
    elif value is None or isinstance(value, yson.YsonEntity):
        result = None
    else:
        result = str(value)
    if attributes:
        return {"$attributes": to_json(attributes, encode_utf8), "$value": result}
    return result


def _json_key(key: Any, encode_utf8: bool) -> str:
    if isinstance(key, bytes):
        return key.decode("latin-1") if encode_utf8 else key.decode("utf-8", "replace")
    return key.encode("utf-8").decode("latin-1") if encode_utf8 else str(key)


def encode_structured(value: Any, fmt: Format) -> bytes:
    """A structured command result in ``fmt``."""
    if fmt.name == "schemaful_dsv":
        raise YtError('Unsupported output format "schemaful_dsv"', attributes={"format": fmt.name})
    if fmt.name == "json":
        return json.dumps(to_json(value, fmt.encode_utf8), ensure_ascii=False).encode("utf-8")
    return yson.dumps(value, yson_format=fmt.yson_format)


def decode_structured(data: bytes, fmt: Format) -> Any:
    """A structured input value (``set``) in ``fmt``."""
    try:
        if fmt.name == "json":
            return _json_input_value(json.loads(data), fmt.encode_utf8, as_bytes=False)
        return yson.loads(data)
    except YtError:
        raise
    except Exception as exc:
        raise YtError(f"Error parsing input value: {exc}") from None


# --------------------------------------------------------------------------------------------------------------
# Tabular rows


def decode_rows(data: bytes, fmt: Format) -> list[dict[bytes, Any]]:
    """Rows of a tabular request body (binary/text YSON list fragment or JSON lines)."""
    if not data:
        return []
    try:
        if fmt.name == "yson":
            if _bindings is not None:
                rows = list(
                    _bindings.loads(data, yson_type="list_fragment", encoding=None, always_create_attributes=False)
                )
            else:  # pragma: no cover
                rows = list(yson.loads(data, yson_type="list_fragment", encoding=None))
        else:
            rows = [
                _json_input_value(json.loads(line), fmt.encode_utf8, as_bytes=True)
                for line in data.splitlines()
                if line.strip()
            ]
    except YtError:
        raise
    except Exception as exc:
        raise YtError(f"Error parsing input rows in format {fmt.name}: {exc}") from None
    for row in rows:
        if not isinstance(row, dict):
            raise YtError(f"Invalid row: expected a map, got {type(row).__name__}")
    return rows


def _json_input_value(value: Any, encode_utf8: bool, as_bytes: bool) -> Any:
    if isinstance(value, dict):
        if "$value" in value and set(value) <= {"$value", "$attributes", "$type"}:
            inner = _json_input_value(value["$value"], encode_utf8, as_bytes)
            if value.get("$type") == "uint64":
                inner = yson.YsonUint64(int(inner))
            attributes = value.get("$attributes")
            if attributes:
                return yson.to_yson_type(inner, attributes=_json_input_value(attributes, encode_utf8, as_bytes))
            return inner
        return {
            _json_input_value(k, encode_utf8, as_bytes): _json_input_value(v, encode_utf8, as_bytes)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_json_input_value(v, encode_utf8, as_bytes) for v in value]
    if isinstance(value, str):
        if encode_utf8:
            try:
                raw = value.encode("latin-1")
            except UnicodeEncodeError:
                raise YtError("Invalid JSON string: a code point above 255 with encode_utf8=%true") from None
        else:
            raw = value.encode("utf-8")
        return raw if as_bytes else raw.decode("utf-8", "replace")
    return value


def dumps_rows(rows: list[Any], fmt: Format) -> bytes:
    """Rows in ``fmt``: a YSON list fragment, JSON lines or schemaful DSV lines."""
    if not rows:
        return b""
    if fmt.name == "schemaful_dsv":
        return _schemaful_dsv(rows, fmt)
    if fmt.name == "yson":
        if _bindings is not None and fmt.yson_format == "binary":
            return _bindings.dumps(rows, yson_type="list_fragment", yson_format="binary")
        return yson.dumps(rows, yson_type="list_fragment", yson_format=fmt.yson_format)
    parts = [json.dumps(to_json(row, fmt.encode_utf8), ensure_ascii=False) for row in rows]
    return ("\n".join(parts) + "\n").encode("utf-8")


def loads_fragment(data: bytes) -> list[Any]:
    """Binary YSON list fragment to rows (the storage format)."""
    if not data:
        return []
    if _bindings is not None:
        return list(_bindings.loads(data, yson_type="list_fragment", encoding=None, always_create_attributes=False))
    return list(yson.loads(data, yson_type="list_fragment", encoding=None))  # pragma: no cover


def dumps_fragment(rows: list[Any]) -> bytes:
    """Rows to a binary YSON list fragment (the storage format)."""
    if _bindings is not None:
        return _bindings.dumps(rows, yson_type="list_fragment", yson_format="binary")
    return yson.dumps(rows, yson_type="list_fragment", yson_format="binary")  # pragma: no cover


def dumps_value(value: Any) -> bytes:
    """One binary YSON value (for ``any`` columns and data weight)."""
    return yson.dumps(value, yson_format="binary")


def encode_row_stream(rows: Iterable[Any], fmt: Format, batch: int = 2048) -> Iterator[bytes]:
    """Encode rows in batches, for streaming responses of unbounded length."""
    buffer: list[Any] = []
    for row in rows:
        buffer.append(row)
        if len(buffer) >= batch:
            yield dumps_rows(buffer, fmt)
            buffer = []
    if buffer:
        yield dumps_rows(buffer, fmt)


# --------------------------------------------------------------------------------------------------------------
# Schemaful DSV (yt/yt/library/formats/schemaful_dsv_writer.cpp, TSchemafulDsvFormatConfig)


@dataclass(frozen=True)
class _DsvConfig:
    columns: tuple[bytes, ...] | None
    record_separator: bytes
    field_separator: bytes
    escaping: bool
    escaping_symbol: bytes
    missing_value_mode: str
    missing_value_sentinel: bytes
    header: bool


def _dsv_char(attributes: dict[str, Any], name: str, default: str) -> bytes:
    value = attributes.get(name, default)
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
    if len(raw) != 1:
        raise YtError(f'Error parsing schemaful DSV format: "{name}" must be one character', code=2)
    return raw


def _schemaful_dsv_config(attributes: dict[str, Any]) -> _DsvConfig:
    """The writer config with YTsaurus's defaults (``\\n``, ``\\t``, escaping on with ``\\``, missing values
    fail); duplicate columns are refused as the config postprocessor refuses them."""
    columns = attributes.get("columns")
    names: tuple[bytes, ...] | None = None
    if columns is not None:
        names = tuple(c if isinstance(c, bytes) else str(c).encode("utf-8") for c in columns)
        seen: set[bytes] = set()
        for name in names:
            if name in seen:
                raise YtError(
                    f'Duplicate column name "{name.decode("utf-8", "replace")}" in schemaful DSV configuration'
                )
            seen.add(name)
    mode = attributes.get("missing_value_mode", "fail")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("fail", "skip_row", "print_sentinel"):
        raise YtError(f'Error parsing EMissingSchemafulDsvValueMode value "{mode}"')
    sentinel = attributes.get("missing_value_sentinel", "")
    return _DsvConfig(
        names,
        _dsv_char(attributes, "record_separator", "\n"),
        _dsv_char(attributes, "field_separator", "\t"),
        bool(attributes.get("enable_escaping", True)),
        _dsv_char(attributes, "escaping_symbol", "\\"),
        mode,
        sentinel if isinstance(sentinel, bytes) else str(sentinel).encode("utf-8"),
        bool(attributes.get("enable_column_names_header", False)),
    )


# EscapeForward of escape.h: the escaped byte is written after the escaping symbol as itself, except these.
_ESCAPE_FORWARD = {0: b"0", 9: b"t", 10: b"n", 13: b"r"}


def _dsv_escape(value: bytes, config: _DsvConfig) -> bytes:
    """``EscapeAndWrite`` with the table of ``ConfigureEscapeTable``: only the record separator, the field separator
    and the escaping symbol are escaped (``\\r`` and NUL pass through unless one of them is a separator)."""
    stops = {config.record_separator[0], config.field_separator[0]}
    if not config.escaping:
        return value
    stops.add(config.escaping_symbol[0])
    if not any(b in stops for b in value):
        return value
    out = bytearray()
    for byte in value:
        if byte in stops:
            out += config.escaping_symbol + _ESCAPE_FORWARD.get(byte, bytes((byte,)))
        else:
            out.append(byte)
    return bytes(out)


def format_double(value: float) -> bytes:
    """A double as YTsaurus's ``WriteDouble`` prints it: Arcadia's ``FloatToString`` (shortest round-trip digits,
    decimal notation for exponents in [-10, 21), else ``d.ddde+XX``), with ``.`` appended when the text has neither
    a ``.`` nor an ``e`` (``42.``, ``inf.``, ``nan.``)."""
    import decimal

    if value != value:
        text = "nan"
    elif value in (float("inf"), float("-inf")):
        text = "inf" if value > 0 else "-inf"
    elif value == 0:
        text = "-0" if str(value).startswith("-") else "0"
    else:
        sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
        text_digits = "".join(map(str, digits))
        point = len(text_digits) + int(exponent)  # decimal point position from the left
        scientific = point - 1
        if -10 <= scientific < 21:
            if point <= 0:
                body = "0." + "0" * (-point) + text_digits
            elif point >= len(text_digits):
                body = text_digits + "0" * (point - len(text_digits))
            else:
                body = text_digits[:point] + "." + text_digits[point:]
        else:
            mantissa = text_digits[0] + ("." + text_digits[1:] if len(text_digits) > 1 else "")
            body = f"{mantissa}e{'+' if scientific >= 0 else '-'}{abs(scientific)}"
        text = ("-" if sign else "") + body
    if "." not in text and "e" not in text:
        text += "."
    return text.encode("ascii")


def _dsv_value(value: Any, column: bytes, config: _DsvConfig) -> bytes:
    if isinstance(value, bool) or isinstance(value, yson.YsonBoolean):
        return b"true" if value else b"false"
    if isinstance(value, int):
        return str(int(value)).encode("ascii")
    if isinstance(value, float):
        return format_double(float(value))
    if isinstance(value, bytes):
        return _dsv_escape(value, config)
    if isinstance(value, str):
        return _dsv_escape(value.encode("utf-8"), config)
    kind = "composite" if isinstance(value, (list, dict)) else "any"
    raise YtError(
        f'Values of type "{kind}" are not supported by the chosen format',
        code=315,  # NTableClient::EErrorCode::FormatCannotRepresentRow
        attributes={"column": column.decode("utf-8", "replace")},
    )


def _schemaful_dsv(rows: list[Any], fmt: Format) -> bytes:
    """``TSchemafulWriterForSchemafulDsv``: the ``columns`` in their order (all columns of the row when absent),
    nulls and missing columns per ``missing_value_mode`` (``fail``: error, ``skip_row``, ``print_sentinel``)."""
    config = _schemaful_dsv_config(fmt.attributes)
    out = bytearray()
    columns = config.columns
    for row in rows:
        names = columns if columns is not None else tuple(k if isinstance(k, bytes) else k.encode() for k in row)
        values = [row.get(name, row.get(name.decode("utf-8", "replace"))) for name in names]
        missing = next((i for i, v in enumerate(values) if v is None or isinstance(v, yson.YsonEntity)), None)
        if missing is not None:
            if config.missing_value_mode == "skip_row":
                continue
            if config.missing_value_mode == "fail":
                name = names[missing].decode("utf-8", "replace")
                raise YtError(f'Column "{name}" is in schema but missing')
        fields = [
            config.missing_value_sentinel
            if v is None or isinstance(v, yson.YsonEntity)
            else _dsv_value(v, names[i], config)
            for i, v in enumerate(values)
        ]
        out += config.field_separator.join(fields) + config.record_separator
    return bytes(out)
