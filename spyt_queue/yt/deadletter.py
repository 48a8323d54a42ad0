"""Dead letters in a YTsaurus ordered dynamic table (``deadLetter.path``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from spyt_queue.deadletter import (
    DEAD_LETTER_SCHEMA,
    PATH_OPTION,
    PROXY_OPTION,
    TOKEN_OPTION,
    DeadLetter,
    DeadLetterTarget,
)
from spyt_queue.errors import OptionError
from spyt_queue.options import Options
from spyt_queue.yt.admin import create_queue
from spyt_queue.yt.client import YtConnection
from spyt_queue.yt.options import connection_from_options, plain_cypress_path

log = logging.getLogger("spyt_queue.deadletter")


class YtDeadLetterTarget(DeadLetterTarget):
    """An ordered dynamic table, appended to with ``insert_rows`` (durable when it returns)."""

    def __init__(self, connection: YtConnection, path: str, create: bool = False) -> None:
        self.connection = connection
        self.path = path
        self.create = create

    def describe(self) -> str:
        return f"yt:{self.path}"

    def check(self) -> None:
        client = self.connection.client()
        if not client.exists(self.path):
            if not self.create:
                raise OptionError(
                    PATH_OPTION,
                    f"{self.path} does not exist on {self.connection.proxy}: create an ordered dynamic table with "
                    f"columns {', '.join(c['name'] for c in DEAD_LETTER_SCHEMA)} (ytqueue create-table {self.path} "
                    f"--schema {_schema_text()}) or set deadLetter.create=true",
                )
            create_queue(client, self.path, DEAD_LETTER_SCHEMA)
            log.info("created dead-letter table %s", self.path)
            return
        attrs = client.get(self.path, attributes=["type", "dynamic", "sorted", "schema", "tablet_state"]).attributes
        if attrs.get("type") != "table" or not attrs.get("dynamic") or attrs.get("sorted"):
            raise OptionError(PATH_OPTION, f"{self.path} is not an ordered dynamic table (a queue)")
        if attrs.get("tablet_state") != "mounted":
            raise OptionError(PATH_OPTION, f"{self.path} is not mounted (tablet_state={attrs.get('tablet_state')})")
        names = {str(c.get("name")) for c in attrs.get("schema", [])}
        missing = [c["name"] for c in DEAD_LETTER_SCHEMA if c["name"] not in names]
        if missing:
            raise OptionError(PATH_OPTION, f"{self.path} lacks the dead-letter column(s) {', '.join(missing)}")

    def write(self, letters: Sequence[DeadLetter]) -> None:
        """Insert ``letters`` with the calling thread's own client: ``read_mode=driver`` converts a batch's ranges
        on several threads at once (``DriverStreamReader``), and ``yt.wrapper`` clients are not thread-safe."""
        self.connection.thread_client().insert_rows(self.path, [letter.row() for letter in letters])

    def count(self) -> dict[str, int]:
        client = self.connection.client()
        tablets = int(client.get(f"{self.path}/@tablet_count"))
        infos = client.get_tablet_infos(self.path, list(range(tablets)))["tablets"]
        return {str(i): int(t["total_row_count"]) - int(t["trimmed_row_count"]) for i, t in enumerate(infos)}


def _schema_text() -> str:
    return ",".join(f"{c['name']}:{c['type']}" for c in DEAD_LETTER_SCHEMA)


def _cluster(proxy: str | None) -> str:
    """``proxy`` compared as a cluster: without scheme, trailing ``/`` and case (``http://Host:80/`` = ``host:80``)."""
    text = (proxy or "").strip().lower().rstrip("/")
    return text.partition("://")[2] if "://" in text else text


def target_from_options(options: Options, path: str, create: bool) -> YtDeadLetterTarget:
    """``deadLetter.path`` as a target: it connects with ``deadLetter.proxy``/``deadLetter.token``, else the query's
    ``proxy``/``token`` (and ``yt.*``), else ``YT_PROXY``. The query's ``token`` (and ``yt.token``) goes only to the
    query's own cluster: with a ``deadLetter.proxy`` naming another one, ``deadLetter.token`` (else ``YT_TOKEN``)
    is used."""
    path = plain_cypress_path(PATH_OPTION, path)
    raw = options.raw()
    proxy = options.get_str(PROXY_OPTION) or options.get_str("proxy", None, "cluster") or os.environ.get("YT_PROXY")
    if not proxy:
        raise OptionError(PROXY_OPTION, "deadLetter.path needs a YT proxy: set deadLetter.proxy (or YT_PROXY)")
    query_proxy = options.get_str("proxy", None, "cluster") or os.environ.get("YT_PROXY")
    if _cluster(proxy) != _cluster(query_proxy):  # the query's token belongs to the query's cluster only
        for name in [key for key in raw if key.lower() in ("token", "yt.token")]:
            del raw[name]
    raw["proxy"] = proxy
    token = options.get_str(TOKEN_OPTION)
    if token:
        raw["token"] = token
    return YtDeadLetterTarget(connection_from_options(Options(raw)), path, create)
