"""``YT_PROXY`` as a user meets it in a classic session: set after the SparkSession started, Spark's Python workers
do not see it, and the error says so instead of only asking to set it."""

from __future__ import annotations

import os

import pytest

from tests.yt.user_errors import first_line

pytestmark = pytest.mark.spark


def test_yt_proxy_set_after_the_session_started_is_named_in_the_error(spark, yt_proxy, monkeypatch) -> None:
    assert "YT_PROXY" not in os.environ or os.environ["YT_PROXY"] != yt_proxy  # the session started without it
    monkeypatch.setenv("YT_PROXY", yt_proxy)
    with pytest.raises(Exception) as caught:
        spark.read.format("ytqueue").load("//home/me/queue").collect()
    line = first_line(caught.value)
    assert "Invalid option 'proxy': no YTsaurus proxy given" in line, line
    assert "YT_PROXY must be set before the SparkSession starts" in line, line
