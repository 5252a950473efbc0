"""Replay answers from the recording's document state: a request answered ahead of one
recorded before it that changes state, not sent yet, is said so (a warning, not a miss), by
`replay`'s summary and report and by the ``golem_replay`` fixture. Before, a test that listed
the objects before making them got the recorded listing, objects and all, silently."""

from __future__ import annotations

import itertools
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.replay.engine import ReplayEngine, Reply
from golem_proxy.replay.recorded_exchanges import load_exchanges
from golem_proxy.replay.setup import ReplayOptions, engine_for
from golem_proxy.replay.state_order import LISTED, StateOrder, ahead_lines, reads_only
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.pytester import plugin_args
from tests.support.traces import TraceBuilder

from .test_cli import replaying
from .traces import SPHERE, modelling_session

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
        "answered_count": 1,
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


def _engine(path: Path) -> ReplayEngine:
    return engine_for(load_exchanges(str(path)), ReplayOptions())


def _send(engine: ReplayEngine, method: str, params: dict[str, Any]) -> None:
    payload = GOLEM.encode_payload(GOLEM.request(next(_IDS), method, params))
    assert isinstance(engine.decide("main", payload), Reply)


_IDS = itertools.count(1)


def test_a_recorded_change_that_failed_is_not_waited_for(tmp_path: Path) -> None:
    # Before, #2's error and #3's "success": false counted as changes not sent yet: every
    # later answer was said to show state this run had not made, though none came of them.
    path = tmp_path / "failed.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        trace.call("scene.create_layer", {"name": "A"}, {"success": True, "layer_index": 1})
        trace.call("geometry.create_box", {"width": -1}, error=("INVALID_PARAMS", "width < 0"))
        trace.call("manipulation.move_objects", {"guids": []}, {"success": False})
        trace.call("scene.list_objects", {}, {"objects": []})
        trace.call("geometry.create_sphere", {"radius": 8.0}, {"guid": SPHERE})
        trace.call("scene.list_layers", {}, {"layers": ["A"]})
    engine = _engine(path)
    _send(engine, "scene.create_layer", {"name": "A"})
    _send(engine, "scene.list_objects", {})
    assert engine.order.notes() == []
    _send(engine, "scene.list_layers", {})  # ahead of #5, which made a sphere
    (note,) = engine.order.notes()
    assert note["pending"]["method"] == "geometry.create_sphere"
    assert [e["method"] for e in note["answered"]] == ["scene.list_layers"]


def test_answers_ahead_of_one_unsent_change_are_counted_not_listed(tmp_path: Path) -> None:
    # Before, each answer was appended to one list after scanning it: 20,000 answers ahead
    # of one unsent change took seconds on the request path, and the report listed them all.
    path = tmp_path / "long.jsonl"
    answers = 20_000
    with TraceBuilder.create(str(path)) as trace:
        trace.call("scene.create_layer", {"name": "A"}, {"success": True, "layer_index": 1})
        for i in range(answers):
            trace.call("scene.get_object_info", {"i": i}, {"name": "x"})
    exchanges = load_exchanges(str(path)).exchanges
    start = time.perf_counter()
    order = StateOrder(GOLEM, exchanges)
    used: set[int] = set()
    for exchange in exchanges[1:]:
        used.add(exchange.number)
        order.served(exchange, used)
        order.served(exchange, used)  # served again (--reuse): counted once
    took = time.perf_counter() - start
    assert took < 1.0, f"{took:.2f} s for {answers} answers"
    (note,) = order.notes()
    assert note["answered_count"] == answers
    assert [e["number"] for e in note["answered"]] == list(range(2, 2 + LISTED))
    (line,) = ahead_lines([note])
    assert line.startswith(f"answered #2 main scene.get_object_info (and {answers - 1} more ")
