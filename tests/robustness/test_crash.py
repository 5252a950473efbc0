"""kill -9 while recording under load: every recording readable, every exchange intact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.robustness.crash import crash_runs


def test_kill_9_leaves_readable_recordings(tmp_path: Path, figures: dict[str, Any]) -> None:
    found = crash_runs(tmp_path, runs=5, clients=8)
    figures.update(found)
    assert found["unreadable"] == 0, found["first_problems"]
    assert found["broken_exchanges"] == found["holes"] == 0, found["first_problems"]
    assert found["recorded_exchanges"] > 0
    # What a kill loses is a tail: per connection, the recorded exchanges are its first ones,
    # with no hole. How long that tail is depends on how far decoding lags forwarding.
    assert found["recorded_exchanges"] <= found["client_round_trips"]
