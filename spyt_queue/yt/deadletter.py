"""Dead letters in a YTsaurus ordered dynamic table (``deadLetter.path``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from spyt_queue.deadletter import DEAD_LETTER_SCHEMA, PATH_OPTION, DeadLetter, DeadLetterTarget
from spyt_queue.errors import OptionError
from spyt_queue.yt.admin import create_queue
from spyt_queue.yt.client import YtConnection

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
        self.connection.client().insert_rows(self.path, [letter.row() for letter in letters])

    def count(self) -> dict[str, int]:
        client = self.connection.client()
        tablets = int(client.get(f"{self.path}/@tablet_count"))
        infos = client.get_tablet_infos(self.path, list(range(tablets)))["tablets"]
        return {str(i): int(t["total_row_count"]) - int(t["trimmed_row_count"]) for i, t in enumerate(infos)}


def _schema_text() -> str:
    return ",".join(f"{c['name']}:{c['type']}" for c in DEAD_LETTER_SCHEMA)
