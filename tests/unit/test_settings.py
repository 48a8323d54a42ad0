"""Reader option rules (Spark's Kafka source rules) and position resolution, without servers."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from spyt_queue.backend import PartitionBounds
from spyt_queue.errors import OptionError
from spyt_queue.kafka.options import kafka_reader_settings
from spyt_queue.options import Options
from spyt_queue.positions import plan_positions, resolve_positions
from spyt_queue.settings import EARLIEST, LATEST, Position, ReaderSettings

BOUNDS = {"t:0": PartitionBounds(2, 10), "t:1": PartitionBounds(0, 5)}


def kafka(streaming: bool | None, **options: str) -> ReaderSettings:
    return kafka_reader_settings(Options({"kafka.bootstrap.servers": "b:9092", **options}), streaming)


class Stamps:
    """A backend stand-in answering timestamp lookups: records at or after ``ts`` exist only below ``until``."""

    def __init__(self, until: int) -> None:
        self.until = until

    def offsets_for_timestamps(self, timestamps: Mapping[str, int]) -> dict[str, int | None]:
        return {key: (3 if ts < self.until else None) for key, ts in timestamps.items()}

    def describe(self, key: str) -> str:
        topic, _, part = key.rpartition(":")
        return f"partition {part} of topic {topic}"


@pytest.mark.parametrize(
    ("options", "option", "text"),
    [
        ({"startingOffsets": '{"t": {"0": -1}}'}, "startingOffsets", "offset -1 (latest) of t:0"),
        ({"startingOffsets": "latest"}, "startingOffsets", "'latest' is not allowed"),
        ({"endingOffsets": '{"t": {"0": -2}}'}, "endingOffsets", "offset -2 (earliest) of t:0"),
        ({"endingOffsets": "earliest"}, "endingOffsets", "'earliest' is not allowed"),
        (
            {"startingOffsets": '{"t": {"0": 1}}', "endingOffsets": '{"t": {"1": 3}}'},
            "endingOffsets",
            "only in startingOffsets: t:0; only in endingOffsets: t:1",
        ),
        (
            {"startingOffsetsByTimestamp": '{"t": {"0": 1}}', "endingOffsets": '{"t": {"0": 3, "1": 3}}'},
            "endingOffsets",
            "must name the same partitions as startingOffsetsByTimestamp",
        ),
    ],
)
def test_batch_rules(options: dict[str, str], option: str, text: str) -> None:
    with pytest.raises(OptionError) as caught:
        kafka(False, **options)
    assert caught.value.option == option
    assert text in str(caught.value)


def test_load_checks_only_what_is_invalid_in_every_mode() -> None:
    kafka(None, startingOffsets="latest", endingOffsets="latest")  # each valid in one mode
    kafka(None, startingOffsets='{"t": {"0": -1}}')  # a stream may start at the latest offset
    with pytest.raises(OptionError, match="'minOffsetsPerTrigger': 10 is larger"):
        kafka(None, minOffsetsPerTrigger="10", maxOffsetsPerTrigger="5")
    with pytest.raises(OptionError, match="'endingOffsets': offset -2"):
        kafka(None, endingOffsets='{"t": {"0": -2}}')  # wrong for a batch, and a stream takes no ending at all
    with pytest.raises(OptionError, match="'endingOffsets': only batch queries"):
        kafka(True, endingOffsets="latest")


def test_positions_naming_missing_partitions_name_them() -> None:
    with pytest.raises(OptionError, match=r"'startingOffsets': names partitions that do not exist: partition t:7"):
        resolve_positions(Position("explicit", explicit={"t:0": 1, "t:7": 0}), BOUNDS, {})
    ending = Position("explicit", explicit={"x:0": 1}, option="endingOffsets")
    with pytest.raises(OptionError, match="'endingOffsets': names partitions that do not exist: partition 0 of topic"):
        resolve_positions(ending, BOUNDS, {}, Stamps(0), ending=True)  # type: ignore[arg-type]


def test_plan_keeps_earliest_and_latest_unbound() -> None:
    start = plan_positions(Position("explicit", explicit={"t:0": 4}), BOUNDS, {})
    assert start == {"t:0": 4, "t:1": EARLIEST}
    assert plan_positions(Position("latest"), BOUNDS, {}, ending=True) == {"t:0": LATEST, "t:1": LATEST}
    assert resolve_positions(Position("group"), BOUNDS, {"t:0": 7, "t:1": None}) == {"t:0": 7, "t:1": 0}


def test_timestamps_ending_falls_back_to_latest_and_starting_errors_name_the_option() -> None:
    backend = Stamps(until=100)
    ending = kafka(False, endingTimestamp="500").ending
    assert resolve_positions(ending, BOUNDS, {}, backend, ending=True) == {"t:0": 10, "t:1": 5}  # type: ignore[arg-type]
    for option, value in (("startingTimestamp", "500"), ("startingOffsetsByTimestamp", '{"t": {"0": 500}}')):
        starting = kafka(False, **{option: value}).starting
        with pytest.raises(OptionError, match=rf"'{option}': no record of partition 0 of topic t .* after 500"):
            resolve_positions(starting, BOUNDS, {}, backend)  # type: ignore[arg-type]
    latest = kafka(False, startingTimestamp="500", startingOffsetsByTimestampStrategy="latest").starting
    assert resolve_positions(latest, BOUNDS, {}, backend) == {"t:0": 10, "t:1": 5}  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["consumer_path", "consumerPath", "CONSUMERPATH"])
def test_a_yt_batch_read_naming_a_consumer_starts_at_it_under_every_name_of_the_option(name: str) -> None:
    """``consumerPath`` is an alias of ``consumer_path``: a batch read naming the consumer either way starts at its
    offsets (it started at the earliest row with the alias)."""
    from spyt_queue.connect import settings_for

    assert settings_for(Options({name: "//home/c"}), streaming=False).starting.kind == "consumer"
    assert settings_for(Options({}), streaming=False).starting.kind == "earliest"


def test_given_sees_an_option_under_any_of_its_names() -> None:
    from spyt_queue.options import Option

    option = Option("consumer_path", "doc", aliases=("consumerPath",))
    assert Options({"consumerpath": "//c"}).given(option)
    assert not Options({"consumer_path": ""}).given(option)
