"""Conformance: value size limits of dynamic tables.

Sources: ``yt/yt/client/table_client/public.h`` (``MaxStringValueLength = MaxAnyValueLength = 16_MB``,
``MaxClientVersionedRowDataWeight = 128_MB``; error ``StringLikeValueLengthLimitExceeded`` = 326,
``RowWeightLimitExceeded`` = 308), ``yt/yt/client/table_client/unversioned_row.cpp`` (``ValidateDynamicValue``:
``Value of type "string" is too long for dynamic data: length N, limit 16777216``, checked with ``>`` for every
string-like data and key value of an ``insert_rows``/``delete_rows``/``lookup_rows`` row; composite ``type_v3``
values are not length-checked there).
"""

from __future__ import annotations

import pytest
from conformance import create_queue, create_sorted_table, tablet_infos
from yt.wrapper.errors import YtResponseError

LIMIT = 16 * 1024 * 1024  # 16 MiB: MaxStringValueLength / MaxAnyValueLength
STRING_TOO_LONG = 326  # NTableClient::EErrorCode::StringLikeValueLengthLimitExceeded


def _too_long(error: YtResponseError, kind: str, length: int) -> None:
    """``error`` (code 326, checked by ``yt_error``) is YT's value-length error for a ``kind`` value of ``length``
    bytes."""
    text = str(error)
    assert f'Value of type "{kind}" is too long for dynamic data: length {length}, limit {LIMIT}' in text, text


def test_string_value_of_16_mib_is_accepted_and_one_byte_more_is_refused_with_nothing_written(yt, queue, yt_error):
    """A queue row with a string of exactly 16 MiB is written; with 16 MiB + 1 the whole request fails with 326
    and none of its rows (also the small ones before it) is written."""
    yt.insert_rows(queue, [{"data": "x" * LIMIT}])
    with yt_error(STRING_TOO_LONG) as failure:
        yt.insert_rows(queue, [{"data": "small"}, {"data": "y" * (LIMIT + 1)}])
    _too_long(failure.value, "string", LIMIT + 1)
    assert tablet_infos(yt, queue, 1)[0]["total_row_count"] == 1


def test_utf8_length_is_counted_in_bytes(yt, yt_root, yt_error):
    """The limit is on the encoded length: 8 Mi two-byte characters plus one byte is over it."""
    queue = create_queue(yt, f"{yt_root}/q", schema=[{"name": "data", "type": "utf8"}])
    with yt_error(STRING_TOO_LONG) as failure:
        yt.insert_rows(queue, [{"data": "é" * (LIMIT // 2) + "a"}])
    _too_long(failure.value, "string", LIMIT + 1)


def test_any_value_over_16_mib_is_refused(yt, yt_root, yt_error):
    """An ``any`` value is measured as its binary YSON (a string scalar: marker, varint length, bytes)."""
    queue = create_queue(yt, f"{yt_root}/q", schema=[{"name": "data", "type": "any"}])
    with yt_error(STRING_TOO_LONG) as failure:
        yt.insert_rows(queue, [{"data": "z" * LIMIT}])
    assert 'Value of type "any" is too long for dynamic data' in str(failure.value)


def test_sorted_table_key_and_value_over_16_mib_are_refused(yt, yt_root, yt_error):
    """Key values (upsert, delete, lookup) and data values of a sorted table have the same limit."""
    table = create_sorted_table(
        yt,
        f"{yt_root}/s",
        schema=[{"name": "key", "type": "string", "sort_order": "ascending"}, {"name": "value", "type": "string"}],
    )
    big = "k" * (LIMIT + 1)
    for call in (
        lambda: yt.insert_rows(table, [{"key": big, "value": "v"}]),
        lambda: yt.insert_rows(table, [{"key": "a", "value": big}]),
        lambda: yt.delete_rows(table, [{"key": big}]),
        lambda: list(yt.lookup_rows(table, [{"key": big}])),
    ):
        with yt_error(STRING_TOO_LONG) as failure:
            call()
        _too_long(failure.value, "string", LIMIT + 1)
    assert list(yt.select_rows(f"* from [{table}]")) == []


ROW_WEIGHT_LIMIT_EXCEEDED = 308  # NTableClient::EErrorCode::RowWeightLimitExceeded
ROW_LIMIT = 128 * 1024 * 1024  # MaxClientVersionedRowDataWeight, refused from this weight on (``>=``)


@pytest.mark.slow
def test_row_of_128_mib_is_refused(yt, yt_root, yt_error):
    """Eight 16 MiB strings: every value is within its limit, the row (1 + 8 * 16 MiB) is not: error 308."""
    schema = [{"name": f"c{i}", "type": "string"} for i in range(8)]
    queue = create_queue(yt, f"{yt_root}/q", schema=schema)
    with yt_error(ROW_WEIGHT_LIMIT_EXCEEDED) as failure:
        yt.insert_rows(queue, [{f"c{i}": "w" * LIMIT for i in range(8)}])
    assert f"Row is too large: data weight {ROW_LIMIT + 1}, limit {ROW_LIMIT}" in str(failure.value)
    assert tablet_infos(yt, queue, 1)[0]["total_row_count"] == 0
