"""`Coverage`: what a check could not inspect, from a recording's events as read back. A
`gap` line (events the recorder could not keep: the disk fell behind) cannot be made to
happen on demand against a real disk, so this recording is written by the recorder's
writer from the events a tap publishes, the line between them."""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.events import Direction, EventsMissed, FaultInjected
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


def test_frames_withheld_by_many_names_are_said_in_one_short_line(tmp_path: Path) -> None:
    # A hostile recording may name every fault differently: the line names the most frequent
    # few and counts the rest, and only so many names are kept at all.
    tap = TapSimulator()
    tap.open(1)
    names = ["drop"] * 3 + [f"drop-{i}" for i in range(2000)]
    actions = [
        FaultInjected(
            conn=1,
            route="main",
            direction=Direction.S2C,
            t=tap.t,
            detail="",
            fault=name,
            withheld=True,
        )
        for name in names
    ]
    tap.close(1)
    path = tmp_path / "many-names.jsonl"
    path.write_bytes(write_recording([*tap.events[:-1], *actions, tap.events[-1]]))
    checked = run_cli("check", str(path))
    assert checked.returncode == 3, checked.stdout + checked.stderr
    [line] = [line for line in checked.stdout.splitlines() if "withheld" in line]
    assert line.startswith("not inspected: 2003 frames the proxy withheld from the client")
    assert "(3 drop, 1 drop-0, 1 drop-1, 1 drop-2, 1 drop-3, 1996 by other names)" in line
    assert len(line) < 300
    report = json.loads(run_cli("check", "--json", str(path)).stdout)
    withheld = report["not_inspected"]["withheld"]
    assert withheld["frames"] == 2003
    assert len(withheld["by_action"]) <= 64  # the names kept, not every one
    assert sum(withheld["by_action"].values()) + withheld["other_actions"] == 2003
