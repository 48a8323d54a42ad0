"""Options every sink shares: what Spark passes to a sink, dead letters, and the unknown-option check of a sink.

A sink's own options are declared beside its writer; :func:`check_sink_options` refuses names no part of the sink
reads, saying so when one belongs to the source (a reading option set on ``writeStream``).
"""

from __future__ import annotations

from spyt_queue.deadletter import DEAD_LETTER_OPTIONS
from spyt_queue.deadletter import KAFKA_PREFIX as DEAD_LETTER_KAFKA_PREFIX
from spyt_queue.options import Option, Options, check_shown_values, option_names
from spyt_queue.settings import READER_OPTIONS, TIMESTAMP_OPTIONS
from spyt_queue.stores.registry import STORE_OPTIONS

#: Options Spark itself passes to every streaming sink (``writeStream...start(path)`` passes ``path`` too).
SPARK_SINK_OPTIONS = (
    Option("path", "the target (or .save(path))", modes=("write",)),
    Option("checkpointLocation", "Spark's checkpoint directory", modes=("write",)),
    Option("queryName", "Spark's query name", modes=("write",)),
)


def check_sink_options(
    options: Options,
    known: tuple[str | Option, ...],
    what: str,
    prefix: str = "",
    source_options: tuple[Option, ...] = (),
) -> None:
    """Refuse option names ``what`` (a sink) does not read, saying so when one belongs to a source: the reader
    settings and offset stores every source shares, and ``source_options`` (the sources a sink is usually fed by,
    declared in their technologies' folders)."""
    own = {name.lower() for name in option_names(known)}
    reading = (
        name
        for name in option_names(READER_OPTIONS, TIMESTAMP_OPTIONS, STORE_OPTIONS, source_options)
        if name.lower() not in own and not name.endswith(".")
    )
    hints = {name: "it is a reading option: set it on spark.readStream / spark.read" for name in reading}
    without_dead_letter_kafka(options).check_known(
        (*known, *SPARK_SINK_OPTIONS, *DEAD_LETTER_OPTIONS), what, prefixes=(prefix,) if prefix else (), hints=hints
    )


def without_dead_letter_kafka(options: Options) -> Options:
    """``options`` without ``deadLetter.kafka.*`` (the dead-letter producer's configuration, checked by
    :func:`spyt_queue.deadletter_targets.dead_letter_target`), so unknown-option messages do not list that prefix;
    first every value, those too, is checked for secrets Spark would print (:func:`check_shown_values`)."""
    check_shown_values(options.raw())
    prefix = DEAD_LETTER_KAFKA_PREFIX.lower()
    return Options({key: value for key, value in options.raw().items() if not key.startswith(prefix)})
