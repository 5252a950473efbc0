"""kill -9 while recording under load: every recording readable, every exchange intact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.robustness.crash import crash_runs
from golem_proxy.live.spool_place import SPOOL_DIR_ENV


def test_kill_9_leaves_readable_recordings(tmp_path: Path, figures: dict[str, Any]) -> None:
    found = crash_runs(tmp_path, runs=5, clients=8)
    figures.update(found)
    assert found["unreadable"] == 0, found["first_problems"]
    assert found["broken_exchanges"] == found["holes"] == 0, found["first_problems"]
    assert found["recorded_exchanges"] > 0
    # What a kill loses is a tail: per connection, the recorded exchanges are its first ones,
    # with no hole. How long that tail is depends on how far decoding lags forwarding.
    assert found["recorded_exchanges"] <= found["client_round_trips"]


def test_kill_9_with_the_spool_then_recover_leaves_every_exchange_and_no_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The spools' bytes where they can be looked at (else a memory file system, linked).
    spools = tmp_path / "spools"
    spools.mkdir()
    monkeypatch.setenv(SPOOL_DIR_ENV, str(spools))
    work = tmp_path / "work"
    work.mkdir()
    found = crash_runs(
        work,
        runs=2,
        clients=4,
        kill_after=(0.5, 1.0),
        proxy_args=("--observer", "child-process", "--observer-spool"),
        recover=True,
    )
    after = found["after_recover"]
    assert after == dict(after, failed=0, unreadable=0, broken_exchanges=0, holes=0), after
    for run in found["per_run"]:
        recovered = run["recovered"]
        # The real command, as a user runs it: its status and its line are the run's.
        assert recovered["status"] == 0, recovered
        assert ": recovered, " in recovered["said"], recovered
        assert recovered["recorded_exchanges"] >= run["recorded_exchanges"]
        # At most the answer the kill caught between its write and its spooling, per client.
        assert run["client_round_trips"] - recovered["recorded_exchanges"] <= 4, run
    # Nothing of the killed runs' spools is left, the link nor its bytes.
    assert list(spools.iterdir()) == []
    assert not list(work.glob("*.spool"))
