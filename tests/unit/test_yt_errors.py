"""YT error classification uses yt.wrapper's own predicates (error codes anywhere in the error tree), no text."""

from __future__ import annotations

import pytest
from yt.packages.requests.exceptions import ConnectionError as RequestsConnectionError
from yt.packages.requests.exceptions import ReadTimeout
from yt.wrapper.errors import YtResponseError

from spyt_queue.yt.errors import is_transient_yt_error


def response(code: int, inner: int | None = None, message: str = "x") -> YtResponseError:
    error = {"code": 1 if inner is not None else code, "message": message, "attributes": {}}
    if inner is not None:
        error["inner_errors"] = [{"code": inner, "message": "inner", "attributes": {}}]
    return YtResponseError(error)


@pytest.mark.parametrize(
    "code",
    [1700, 1701, 1702, 11000, 108, 105, 3],
    ids=["lock", "intermediate", "unmounted", "txn", "queue", "transport", "timeout"],
)
def test_transient_codes_at_the_top_or_nested(code: int) -> None:
    assert is_transient_yt_error(response(code))
    assert is_transient_yt_error(response(0, inner=code)), "codes count anywhere in the error tree"


@pytest.mark.parametrize("code", [3100, 500, 901, 1], ids=["cas-conflict", "resolve", "access", "generic"])
def test_permanent_errors_are_not_retried(code: int) -> None:
    assert not is_transient_yt_error(response(code))


def test_text_does_not_decide() -> None:
    assert not is_transient_yt_error(response(1, message="Service unavailable"))


def test_transport_errors_of_the_http_client_are_transient() -> None:
    assert is_transient_yt_error(ReadTimeout("read timed out"))
    assert is_transient_yt_error(RequestsConnectionError("refused"))
    assert not is_transient_yt_error(ValueError("bad"))


def test_an_empty_answer_is_transient_and_bad_yson_is_not() -> None:
    """A server cut off before its answer's body leaves yt.wrapper parsing an empty YSON body (seen in the commit
    outage scenario: the query failed at once with 'Yson load failed'); a body that is not YSON is the data's fault."""
    from yt import yson

    with pytest.raises(Exception) as empty:
        yson.loads(b"")
    with pytest.raises(Exception) as bad:
        yson.loads(b"{a=")
    assert is_transient_yt_error(empty.value)
    assert not is_transient_yt_error(bad.value)
