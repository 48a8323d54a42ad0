"""The dead-letter target a query's options name (``deadLetter.path`` or ``deadLetter.topic``), built above the targets
of each technology (:mod:`spyt_queue.yt.deadletter`, :mod:`spyt_queue.kafka.deadletter`) for sources and sinks alike.
"""

from __future__ import annotations

import os

from spyt_queue.deadletter import (
    CREATE_OPTION,
    KAFKA_PREFIX,
    PATH_OPTION,
    PROXY_OPTION,
    TOKEN_OPTION,
    TOPIC_OPTION,
    BoundDeadLetters,
    DeadLetterTarget,
)
from spyt_queue.errors import OptionError
from spyt_queue.options import Options
from spyt_queue.redaction import shown


def dead_letter_target(options: Options) -> DeadLetterTarget | None:
    """The target the options name, validated (not yet checked on its server), or ``None`` (fail on bad rows).

    ``deadLetter.path`` connects with ``deadLetter.proxy``/``deadLetter.token``, else the query's ``proxy``/``token``
    (and ``yt.*``), else ``YT_PROXY``. ``deadLetter.topic`` produces with ``deadLetter.kafka.*``, whose
    ``bootstrap.servers`` defaults to the query's ``kafka.bootstrap.servers``."""
    path, topic = options.get_str(PATH_OPTION), options.get_str(TOPIC_OPTION)
    create = options.get_bool(CREATE_OPTION, False)
    kafka = options.with_prefix(KAFKA_PREFIX)
    if path and topic:
        raise OptionError(PATH_OPTION, "give either deadLetter.path (a YT table) or deadLetter.topic (Kafka), not both")
    if not path and not topic:
        for option in (CREATE_OPTION, PROXY_OPTION, TOKEN_OPTION):
            if option in options:
                raise OptionError(option, "needs deadLetter.path or deadLetter.topic: say where bad rows go")
        if kafka:
            raise OptionError(KAFKA_PREFIX + next(iter(kafka)), "needs deadLetter.topic")
        return None
    if path:
        if kafka:
            raise OptionError(KAFKA_PREFIX + next(iter(kafka)), "applies to deadLetter.topic, not deadLetter.path")
        # lazy: yt.wrapper and pandas (~1-2 s per Python worker) load only where a YT dead-letter table is named
        from spyt_queue.yt.deadletter import YtDeadLetterTarget
        from spyt_queue.yt.options import connection_from_options, plain_cypress_path

        path = plain_cypress_path(PATH_OPTION, path)
        raw = options.raw()
        proxy = options.get_str(PROXY_OPTION) or options.get_str("proxy", None, "cluster") or os.environ.get("YT_PROXY")
        if not proxy:
            raise OptionError(PROXY_OPTION, "deadLetter.path needs a YT proxy: set deadLetter.proxy (or YT_PROXY)")
        raw["proxy"] = proxy
        token = options.get_str(TOKEN_OPTION)
        if token:
            raw["token"] = token
        return YtDeadLetterTarget(connection_from_options(Options(raw)), path, create)
    assert topic is not None
    for option in (PROXY_OPTION, TOKEN_OPTION):
        if option in options:
            raise OptionError(option, "applies to deadLetter.path, not deadLetter.topic")
    if not topic.strip() or any(ch.isspace() for ch in topic):
        raise OptionError(TOPIC_OPTION, f"not a valid topic name: {shown(TOPIC_OPTION, topic)}")
    config = dict(kafka)
    if "bootstrap.servers" not in config:
        servers = options.get_str("kafka.bootstrap.servers")
        if not servers:
            raise OptionError(
                KAFKA_PREFIX + "bootstrap.servers",
                "deadLetter.topic needs brokers: set deadLetter.kafka.bootstrap.servers (a Kafka query's "
                "kafka.bootstrap.servers is used when present)",
            )
        config["bootstrap.servers"] = servers
    # lazy: confluent_kafka (~0.3 s) loads only where a Kafka dead-letter topic is named
    from spyt_queue.kafka.deadletter import KafkaDeadLetterTarget

    return KafkaDeadLetterTarget(config, topic.strip(), create)


def prepared_target(options: Options) -> DeadLetterTarget | None:
    """:func:`dead_letter_target`, checked on its server (created with ``deadLetter.create=true``)."""
    target = dead_letter_target(options)
    if target is not None:
        target.check()
    return target


def sink_dead_letters(options: Options, target_name: str, refused_by: str = "") -> BoundDeadLetters | None:
    """The dead letters of a sink writing to ``target_name``, checked on their server; ``refused_by`` names an
    option the dead-letter target can not be combined with (``producer_path``: a diverted row would leave a gap in
    the producer session's sequence)."""
    target = dead_letter_target(options)
    if target is None:
        return None
    if refused_by:
        option = PATH_OPTION if PATH_OPTION in options else TOPIC_OPTION
        raise OptionError(
            option,
            f"can not be combined with {refused_by}: exactly-once producer sessions need every source row, a bad row "
            "stops the query there",
        )
    target.check()
    return target.bind(target_name, "sink")
