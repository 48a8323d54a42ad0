"""Binary YSON rows straight from Arrow columns, without a Python object per value.

``insert_rows`` takes its rows as a binary YSON list fragment (``{"id"=1;"v"="a"};{...};``). For columns of
plain types this module builds that text column by column with numpy and Arrow compute kernels: every value
becomes its binary YSON token (``\\x02`` + zigzag varint for integers, ``\\x01`` + length + bytes for strings,
``\\x03`` + 8 bytes for doubles, ``\\x04``/``\\x05`` for booleans, ``#`` for null), and the tokens of a row are
joined element-wise with the constant key prefixes. The bytes are exactly what ``yt.yson.dumps`` writes for the
same rows as Python dicts (see tests/yt/test_sink_batching.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_STRING, _INT64, _DOUBLE, _FALSE, _TRUE, _ENTITY = b"\x01", b"\x02", b"\x03", b"\x04", b"\x05", b"#"
_INTEGERS = (pa.types.is_int8, pa.types.is_int16, pa.types.is_int32, pa.types.is_int64)
_TEXT = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
_FLOATS = (pa.types.is_float32, pa.types.is_float64)
_EMPTY = pa.scalar(b"", pa.large_binary())


def encodable(data_type: pa.DataType) -> bool:
    """Whether :func:`encode_rows` encodes an Arrow column of this type (signed integers, floats, booleans,
    strings, binaries; anything else goes through Python values)."""
    return any(check(data_type) for check in (*_INTEGERS, *_TEXT, *_FLOATS, pa.types.is_boolean))


def _zigzag(values: np.ndarray) -> np.ndarray:
    signed = values.astype(np.int64)
    return ((signed << 1) ^ (signed >> 63)).view(np.uint64)


def _varint_tokens(marker: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per value: ``marker`` followed by the unsigned varint of ``values``; (bytes of all tokens, token lengths)."""
    n = len(values)
    table = np.zeros((n, 11), dtype=np.uint8)
    table[:, 0] = marker
    lengths = np.full(n, 2, dtype=np.int64)
    rest = values.astype(np.uint64, copy=True)
    for k in range(1, 11):
        low = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest >>= np.uint64(7)
        more = rest != 0
        table[:, k] = low | (more.astype(np.uint8) << 7)
        if k < 10:
            lengths += more
        if not more.any():
            break
    return table[np.arange(11) < lengths[:, None]], lengths


def _binary(data: np.ndarray, lengths: np.ndarray) -> pa.Array:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_binary(), len(lengths), [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))]
    )


def _tokens(array: pa.Array) -> pa.Array:
    """The binary YSON token of every value of ``array`` (nulls as ``#``), as a ``large_binary`` array."""
    kind = array.type
    if pa.types.is_boolean(kind):
        tokens = pc.if_else(array, pa.scalar(_TRUE, pa.large_binary()), pa.scalar(_FALSE, pa.large_binary()))
    elif any(check(kind) for check in _INTEGERS):
        values = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        tokens = _binary(*_varint_tokens(_INT64[0], _zigzag(values)))
    elif any(check(kind) for check in _FLOATS):
        values = np.ascontiguousarray(array.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False))
        table = np.empty((len(values), 9), dtype=np.uint8)
        table[:, 0] = _DOUBLE[0]
        table[:, 1:] = values.astype("<f8").view(np.uint8).reshape(-1, 8)
        tokens = _binary(table.reshape(-1), np.full(len(values), 9, dtype=np.int64))
    else:
        text = array.cast(pa.large_binary())
        lengths = pc.binary_length(text).fill_null(0).to_numpy(zero_copy_only=False)
        header = _binary(*_varint_tokens(_STRING[0], _zigzag(lengths)))
        tokens = pc.binary_join_element_wise(header, text.fill_null(b""), _EMPTY)
    if array.null_count:
        tokens = pc.if_else(array.is_null(), pa.scalar(_ENTITY, pa.large_binary()), tokens)
    return tokens


def _key(name: str) -> bytes:
    raw = name.encode()
    return _STRING + _varint_bytes(len(raw) << 1) + raw + b"="


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encode_rows(batch: pa.RecordBatch, names: Sequence[str] | None = None) -> pa.Array:
    """One binary YSON map per row of ``batch`` (each followed by ``;``), as a ``large_binary`` array; every
    column must be :func:`encodable`. ``names`` are the keys (default: the batch's column names)."""
    keys = list(names) if names is not None else batch.schema.names
    if batch.num_rows == 0:
        return pa.array([], pa.large_binary())
    parts: list[pa.Array | pa.Scalar] = []
    for position, (key, column) in enumerate(zip(keys, batch.columns, strict=True)):
        prefix = (b"{" if position == 0 else b";") + _key(key)
        parts.append(pa.scalar(prefix, pa.large_binary()))
        parts.append(_tokens(column))
    parts.append(pa.scalar(b";};", pa.large_binary()))
    if len(parts) == 1:
        return pa.array([b"{};"] * batch.num_rows, pa.large_binary())
    return pc.binary_join_element_wise(*parts, _EMPTY)


def fragment(rows: pa.Array) -> bytes:
    """The bytes of ``rows`` (an :func:`encode_rows` array or a slice of one) as one YSON list fragment."""
    if len(rows) == 0:
        return b""
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int64)[rows.offset : rows.offset + len(rows) + 1]
    data = rows.buffers()[2]
    return data[int(offsets[0]) : int(offsets[-1])].to_pybytes()
