"""The dead-letter target a query's options name (``deadLetter.path`` or ``deadLetter.topic``), for sources and sinks
alike: the options shared by every target are checked here, and the technology's own module
(:mod:`spyt_queue.yt.deadletter`, :mod:`spyt_queue.kafka.deadletter`, named in :data:`TARGETS`) builds the target.
"""

from __future__ import annotations

import importlib
from types import ModuleType

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

#: Which module builds the target of each option (``target_from_options(options, name, create)``): the technologies'
#: folders build their own targets, this module only picks one, as :mod:`spyt_queue.stores.registry` picks a store.
TARGETS: dict[str, str] = {
    "path": "spyt_queue.yt.deadletter",
    "topic": "spyt_queue.kafka.deadletter",
}


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
        return _builder("path").target_from_options(options, path, create)
    assert topic is not None
    for option in (PROXY_OPTION, TOKEN_OPTION):
        if option in options:
            raise OptionError(option, "applies to deadLetter.path, not deadLetter.topic")
    return _builder("topic").target_from_options(options, topic, create)


def _builder(kind: str) -> ModuleType:
    """The module that builds the targets of ``kind`` (:data:`TARGETS`), imported only when a query names one: a
    Kafka target never loads ``yt.wrapper`` (~1-2 s per Python worker), a YT one never loads confluent_kafka."""
    return importlib.import_module(TARGETS[kind])


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
