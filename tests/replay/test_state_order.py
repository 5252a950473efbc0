"""Replay answers from the recording's document state: a request answered ahead of one
recorded before it that changes state, not sent yet, is said so (a warning, not a miss), by
`replay`'s summary and report and by the ``golem_replay`` fixture. Before, a test that listed
the objects before making them got the recorded listing, objects and all, silently."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.replay.state_order import reads_only
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.pytester import plugin_args

from .test_cli import replaying
from .traces import modelling_session

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]
IGNORE = ("--ignore", "scene.create_layer:params.name")
AHEAD = (
    "answered #5 main scene.list_objects ahead of #2 main scene.create_layer, recorded before "
    "it and not sent yet: its answer may show state this run has not made"
)


def test_replay_says_an_answer_went_ahead_of_a_recorded_change(tmp_path: Path) -> None:
    trace = modelling_session(tmp_path / "session.jsonl")
    report = tmp_path / "report.json"
    with replaying(str(trace), *IGNORE, "--report", str(report)) as (process, ready):
        with GolemClient(ready[1], int(ready[2])) as client:  # pings first: no state shown
            listed = client.send_command("scene.list_objects", {})
            assert len(listed["objects"]) == 2  # the box and the sphere, never made here
            client.send_command("scene.create_layer", {"name": "w", "color": [200, 80, 40]})
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0, stderr
    assert f"  {AHEAD}" in stderr.splitlines()
    assert "0 missed" in stderr  # a warning, not a miss
    (note,) = json.loads(report.read_text())["ahead"]
    assert note == {
        "pending": {"number": 2, "route": "main", "method": "scene.create_layer"},
        "answered": [{"number": 5, "route": "main", "method": "scene.list_objects"}],
    }


def test_replay_in_recorded_order_says_nothing_of_it(tmp_path: Path) -> None:
    trace = modelling_session(tmp_path / "session.jsonl")
    report = tmp_path / "report.json"
    with replaying(str(trace), *IGNORE, "--report", str(report)) as (process, ready):
        with GolemClient(ready[1], int(ready[2])) as client:
            client.send_command("scene.create_layer", {"name": "w", "color": [200, 80, 40]})
            box = {"corner": [0, 0, 0], "width": 40, "depth": 10, "height": 30}
            client.send_command("geometry.create_box", box)
        with GolemClient(ready[3], int(ready[4])) as gh:  # another channel's state
            gh.send_command("grasshopper.list_components")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
    assert "ahead of" not in stderr
    assert json.loads(report.read_text())["ahead"] == []


def test_golem_methods_that_only_read_are_told_by_name() -> None:
    assert reads_only(GOLEM, "scene.list_objects")
    assert reads_only(GOLEM, "scene.get_object_info")
    assert reads_only(GOLEM, "gh.ping") and reads_only(GOLEM, "viewport.capture")
    assert not reads_only(GOLEM, "geometry.create_box")
    assert not reads_only(GOLEM, "manipulation.select_objects")


FIXTURE_TEST = """
import pytest
from golem_proxy.testing.client import GolemClient

@pytest.mark.golem_trace("session.jsonl", ignore=["scene.create_layer:params.name"])
def test_session(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        client.send_command("scene.create_layer", {"name": "fresh", "color": [200, 80, 40]})
        client.send_command("scene.list_objects", {})
"""


def test_the_fixture_warns_of_an_answer_ahead_of_recorded_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    modelling_session(pytester.path / "session.jsonl")
    pytester.makepyfile(test_golem=FIXTURE_TEST)
    result = pytester.runpytest_subprocess(*plugin_args(), "-W", "default")
    result.assert_outcomes(passed=1, warnings=2)  # and the unused exchanges' warning
    result.stdout.fnmatch_lines(
        [
            "*GolemAnsweredAheadWarning: golem replay of *session.jsonl:",
            "*  answered #5 main scene.list_objects ahead of #3 main geometry.create_box, "
            "recorded before it and not sent yet: its answer may show state this run has not made",
        ]
    )
