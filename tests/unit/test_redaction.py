"""The rules of :mod:`spyt_queue.redaction` (the Spark-level proof is tests/yt/test_secrets.py)."""

from __future__ import annotations

import logging

import pytest

from spyt_queue.errors import OptionError
from spyt_queue.options import Options
from spyt_queue.redaction import (
    REDACTED,
    RedactingLogger,
    is_secret_name,
    mask_uri,
    redact_mapping,
    shown,
    split_uri,
)
from spyt_queue.stores.registry import StoreCredentials, check_uri, uri_password

TOKEN = "y0_AgAAAAB3kQ9zAATuwQAAAAEN7rTbAAD5Xq2Lm4vPs8RdHj1ZcW"


@pytest.mark.parametrize(
    ("uri", "masked"),
    [
        ("zookeeper://alice:zkpw9876@zk:2181/spyt", "zookeeper://alice:***@zk:2181/spyt"),
        ("zookeeper://alice@zk/spyt", "zookeeper://***@zk/spyt"),  # no colon: the whole userinfo may be a token
        ("zookeeper://alice:pw/with/slash@zk/spyt", "zookeeper://alice:***@zk/spyt"),
        ("zookeeper://alice:p@ss@zk/spyt?acl=creator", "zookeeper://alice:***@zk/spyt?acl=creator"),
        ("zookeeper://zk/spyt?layout=kafka&token=abc", "zookeeper://zk/spyt?layout=kafka&token=***"),
        ("zookeeper://zk:2181/spyt", "zookeeper://zk:2181/spyt"),
        ("not a uri", "not a uri"),
    ],
)
def test_mask_uri(uri: str, masked: str) -> None:
    assert mask_uri(uri) == masked


def test_shown_values() -> None:
    assert shown("max_rows_per_partition", "10k") == "'10k'"
    assert shown("max_rows_per_partition", "x" * 16) == repr("x" * 16)
    assert shown("max_rows_per_partition", TOKEN) == f"'y0_…' ({len(TOKEN)} characters)"
    assert shown("kafka.sasl.password", "pw") == REDACTED
    assert shown("offsets.store", "zookeeper://alice:zkpw9876@zk/a") == "'zookeeper://alice:***@zk/a'"
    assert all(map(is_secret_name, ("token", "yt.token", "deadLetter.token", "kafka.sasl.password", "s3.access.key")))
    assert not is_secret_name("offsets.store")


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("zookeeper:/localhost:2181/spyt", "zookeeper:/localhost:2181/spyt"),  # one slash short
        ("zookeeper//localhost:2181/spyt", "zookeeper//localhost:2181/spyt"),  # the colon missing
        ("zookeeper:/alice:zkpw9876@localhost:2181/spyt", "zookeeper:/alice:***@localhost:2181/spyt"),
        ("zookeeper:alice:zkpw9876@zk/a", "zookeeper:alice:***@zk/a"),
        ("kudu:/kudu-master:7051/spyt_offsets", "kudu:/kudu-master:7051/spyt_offsets"),
    ],
)
def test_a_mistyped_uri_is_shown_with_only_its_password_masked(typed: str, expected: str) -> None:
    """A long mistyped store URI shows the typo (it was ``'zoo…' (30 characters)``); its password stays masked."""
    assert shown("offsets.store", typed) == repr(expected)


def test_what_is_not_a_uri_is_still_cut_short() -> None:
    """``user:password`` pasted into an option, and a token (base64 may hold ``/``), are not taken for URIs."""
    for secret in ("alice:zkpw9876/abcdefgh", "AQAD/" + TOKEN, "Y0_Ab//cdefghijklmnopq"):
        assert shown("offsets.store", secret) == f"{(secret[:3] + '…')!r} ({len(secret)} characters)", secret


def test_option_errors_do_not_echo_long_values() -> None:
    with pytest.raises(OptionError) as raised:
        Options({"max_rows_per_partition": TOKEN}).get_int("max_rows_per_partition", None)
    assert TOKEN not in str(raised.value) and f"({len(TOKEN)} characters)" in str(raised.value)


def test_redact_mapping_is_nested() -> None:
    config = {"token": TOKEN, "proxy": {"request_timeout": 5, "password": "x"}}
    assert redact_mapping(config) == {"token": REDACTED, "proxy": {"request_timeout": 5, "password": REDACTED}}
    assert config["token"] == TOKEN


def test_redacting_logger_masks_after_formatting(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    log = RedactingLogger(logging.getLogger("tests.redaction"), ["zkpw9876", ""])
    log.debug("Sending request(xid=%s): %s", -4, "Auth(scheme='digest', auth='alice:zkpw9876')")
    log.log(logging.INFO, "no args: zkpw9876")
    assert [r.getMessage() for r in caplog.records] == [
        "Sending request(xid=-4): Auth(scheme='digest', auth='alice:***')",
        "no args: ***",
    ]


def test_store_credentials() -> None:
    assert "zkpw9876" not in repr(StoreCredentials("alice", "zkpw9876"))
    assert uri_password("zookeeper://alice:pw@zk/a") and not uri_password("zookeeper://alice@zk/a")
    check_uri("zookeeper://alice:zkpw9876@zk/a")  # the Python API and the CLI still take it
    with pytest.raises(OptionError, match=r"offsets\.store\.password") as raised:
        check_uri("zookeeper://alice:zkpw9876@zk/a", password_in_uri=False)
    assert "zkpw9876" not in str(raised.value)
    with pytest.raises(OptionError, match="give the password once"):
        check_uri("zookeeper://alice:zkpw9876@zk/a", StoreCredentials(None, "other"))
    with pytest.raises(OptionError, match="needs a user"):
        check_uri("zookeeper://zk/a", StoreCredentials(None, "zkpw9876"))
    with pytest.raises(OptionError, match="only a store URI"):
        check_uri("consumer", StoreCredentials("alice", "zkpw9876"))


@pytest.mark.parametrize("password", ["Xy7?k2Lq", "Xy7#k2Lq", "Xy7@k2Lq", "Xy7/k2Lq", "Xy7%k2Lq", "Xy7 k2Lq"])
@pytest.mark.parametrize("scheme", ["zookeeper", "hbase", "kudu"])
def test_a_password_holding_uri_characters_is_split_off_whole(scheme: str, password: str) -> None:
    """``zookeeper://alice:Xy7?k2Lq@zk/spyt``: the user meant the password ``Xy7?k2Lq``, not the query
    ``k2Lq@zk/spyt``; masked whole, detected as a password, and the parameters after the path still parsed."""
    uri = f"{scheme}://alice:{password}@zk:2181/spyt?keep=3"
    parts = split_uri(uri)
    assert parts is not None and parts.userinfo == f"alice:{password}" and parts.has_password
    assert (parts.hosts, parts.path, parts.query) == ("zk:2181", "spyt", "keep=3")
    assert mask_uri(uri) == f"{scheme}://alice:***@zk:2181/spyt?keep=3"
    assert uri_password(uri)


def test_an_at_sign_in_a_store_parameter_is_no_user_information() -> None:
    """A ZooKeeper SASL ACL (``sasl:spyt@REALM``) keeps its ``@``: the URI has no user information."""
    uri = "zookeeper://zk:2181/spyt?acl=sasl:spyt@EXAMPLE.COM:cdrwa"
    parts = split_uri(uri)
    assert parts is not None and parts.userinfo is None and parts.query == "acl=sasl:spyt@EXAMPLE.COM:cdrwa"
    assert mask_uri(uri) == uri and not uri_password(uri)
