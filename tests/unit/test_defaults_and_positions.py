"""Session defaults under option aliases, and ending positions that leave unlisted partitions at their end (pure
logic, no server)."""

from __future__ import annotations

from spyt_queue.backend import PartitionBounds
from spyt_queue.options import Options
from spyt_queue.positions import resolve_positions
from spyt_queue.settings import Position


def test_explicit_options_win_over_session_defaults_under_any_alias() -> None:
    options = Options({"dynBatchSize": "10"}, defaults={"dyn_batch_size": "1000"})
    assert options.get_int("dyn_batch_size", None, "dynBatchSize") == 10
    assert Options({}, defaults={"dyn_batch_size": "1000"}).get_int("dyn_batch_size", None) == 1000


def test_ending_offsets_leave_unlisted_partitions_at_their_end() -> None:
    bounds = {"t:0": PartitionBounds(0, 100), "t:1": PartitionBounds(5, 50)}
    ending = Position("explicit", explicit={"t:0": 60})
    assert resolve_positions(ending, bounds, {}, ending=True) == {"t:0": 60, "t:1": 50}
    starting = Position("explicit", explicit={"t:0": 60})
    assert resolve_positions(starting, bounds, {}) == {"t:0": 60, "t:1": 5}
