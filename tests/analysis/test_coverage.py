"""`Coverage`: what a check could not inspect, from a recording's events as read back. A
`gap` line (events the recorder could not keep: the disk fell behind) cannot be made to
happen on demand against a real disk, so this recording is written by the recorder's
writer from the events a tap publishes, the line between them."""

from __future__ import annotations

from pathlib import Path

from golem_proxy.events import EventsMissed
from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import TapSimulator, write_recording


def test_events_the_recorder_could_not_keep_are_not_inspected(tmp_path: Path) -> None:
    tap = TapSimulator()
    tap.open(1)
    tap.request(1, {"id": "a", "method": "ping", "params": {}})
    tap.respond(1, {"id": "a", "result": {"alive": True}, "error": None})
    events = [*tap.events, EventsMissed(count=12, t=tap.t, consumer="recording")]
    path = tmp_path / "fell-behind.jsonl"
    path.write_bytes(write_recording(events))
    checked = run_cli("check", str(path))
    assert checked.returncode == 3, checked.stdout + checked.stderr
    said = "not inspected: 12 events the recorder could not keep (the disk fell behind)"
    assert said in checked.stdout.splitlines()
    assert run_cli("check", "--allow-incomplete", str(path)).returncode == 0
    data = run_cli("check", "--json", str(path)).stdout
    assert '"events_not_recorded": 12' in data and '"complete": false' in data
