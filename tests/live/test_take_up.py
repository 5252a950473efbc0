"""`take_up`: a tap that takes a connection over from an observing process that died goes on
pairing from what the recording shows in flight. An answer after the restart is decided as a
tap that saw the whole connection decides it (the same ``answers``, exchange, outcome and
violations), whatever the ids, both ways, with redaction; what the recording cannot say (a
request it does not hold) is never an orphan."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from golem_core.profiles import GOLEM, JSONRPC_NDJSON, MCP, Profile
from golem_proxy.events import (
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
    ObservationLost,
    ViolationSeen,
)
from golem_proxy.live.layer_taps import LayerTaps
from golem_proxy.live.proxy_options import ProxyOptions, new_tap
from golem_proxy.live.redact import Redactor
from golem_proxy.live.take_up import UNKNOWN, standing, take_up
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.recording import inflight_scan
from golem_proxy.recording.format import RouteInfo
from tests.support.restarts import TappedSession

C2S, S2C = Direction.C2S, Direction.S2C
Frames = Sequence[tuple[Direction, bytes]]


def _golem(ident: Any, method: str = "echo", **params: Any) -> bytes:
    return json.dumps({"id": ident, "method": method, "params": params}).encode()


def _answer(ident: Any, **result: Any) -> bytes:
    return json.dumps({"id": ident, "result": result, "error": None}).encode()


def _rpc(**members: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **members}).encode()


def _said(events: list[Event]) -> list[tuple[Any, ...]]:
    """What a tap published, as comparable across taps: each frame's pairing decision and
    payload, each exchange, violation and gap."""
    said: list[tuple[Any, ...]] = []
    for event in events:
        if isinstance(event, FrameSeen):
            pairing = (event.answers, event.orphan, event.expects_answer)
            said.append(("frame", event.direction, event.index, pairing, bytes(event.payload)))
        elif isinstance(event, ExchangeCompleted):
            pair = (event.request.direction, event.request.index, event.response.index)
            said.append(("exchange", pair, event.outcome, round(event.latency, 5)))
        elif isinstance(event, ViolationSeen):
            said.append(("violation", event.violation.rule, event.frame_index, event.orphan))
        elif isinstance(event, ObservationLost):
            said.append(("gap", event.reason, event.size))
    return said


def _taken_over(
    tmp_path: Path,
    profile: Profile,
    before: Frames,
    after: Frames,
    *,
    redact: Sequence[str] = (),
    unrecorded: Frames = (),
) -> tuple[list[Event], list[Event]]:
    """The events ``after`` makes on a tap that saw the whole connection, and on one that
    took it over from the recording of ``before`` (the process that died was also handed
    ``unrecorded``, and wrote none of it)."""
    path = tmp_path / "died.jsonl"
    session = TappedSession(path, profile, redact)
    session.open(1)
    for direction, payload in before:
        session.send(1, direction, payload)
    session.close()
    redactor = Redactor(list(redact)) if redact else None
    whole: list[Event] = []
    reference = ConnectionTap(1, "main", profile, whole.append, redactor=redactor)
    t = 0.0
    for direction, payload in [*before, *unrecorded]:
        t += 0.001
        reference.process(direction, profile.frame_payload(payload), t)
    whole.clear()
    resumed: list[Event] = []
    tap = ConnectionTap(1, "main", profile, resumed.append, redactor=redactor)
    fd = os.open(path, os.O_RDONLY)
    try:
        take_up(fd, {1: tap}, new_tap)
    finally:
        os.close(fd)
    for direction, payload in after:
        t += 0.001
        for each in (reference, tap):
            each.process(direction, profile.frame_payload(payload), t)
    return whole, resumed


IDS: list[Any] = ["s", 'é"\\/\n☃', "", 0, -1, 2**53 + 1, 1.5, True, None, [1], {"a": 1}]


def test_answers_after_the_restart_are_decided_as_if_no_process_had_died(
    tmp_path: Path,
) -> None:
    # Ids of every JSON type, well-formed or not, answered the last first; one request was
    # answered before the restart (its second answer, after a call made after the restart,
    # is an orphan), one is answered with an error.
    before = [(C2S, _golem(ident)) for ident in IDS] + [(C2S, _golem("done"))]
    before += [(S2C, _answer("done")), (C2S, _golem("failing", method="scene.nothing"))]
    after = [(S2C, _answer(ident, n=n)) for n, ident in reversed(list(enumerate(IDS)))]
    error = {"code": "NOT_FOUND", "message": "no"}
    after += [(S2C, json.dumps({"id": "failing", "result": None, "error": error}).encode())]
    after += [(C2S, _golem("new")), (S2C, _answer("new")), (S2C, _answer("done"))]
    whole, resumed = _taken_over(tmp_path, GOLEM, before, after)
    assert _said(resumed) == _said(whole)
    exchanges = [event for event in resumed if isinstance(event, ExchangeCompleted)]
    assert len(exchanges) == len(IDS) + 2  # malformed or not, "failing" and "new"
    orphans = [e for e in resumed if isinstance(e, ViolationSeen) and e.orphan]
    assert [event.frame_index for event in orphans] == [len(IDS) + 3]  # "done" again


def test_a_servers_requests_in_flight_are_answered_after_the_restart(tmp_path: Path) -> None:
    before = [(C2S, _rpc(id=1, method="a")), (S2C, _rpc(id=7, method="roots/list"))]
    before += [(S2C, _rpc(method="tick")), (S2C, _rpc(id=8, method="ping"))]
    after = [(C2S, _rpc(id=8, result={})), (S2C, _rpc(id=1, result={}))]
    after += [(C2S, _rpc(id=7, result={"roots": []}))]
    whole, resumed = _taken_over(tmp_path, JSONRPC_NDJSON, before, after)
    assert _said(resumed) == _said(whole)
    pairs = [e.request.direction for e in resumed if isinstance(e, ExchangeCompleted)]
    assert pairs == [S2C, C2S, S2C]


def test_an_answer_is_redacted_by_the_method_of_its_request_recorded_before(
    tmp_path: Path,
) -> None:
    # A method's rule applies to its answer: the request's method, which only the recording
    # tells the new process, decides that the token is not written.
    redact = ["params.secret", "echo:result.token"]
    before = [(C2S, _golem("a1", secret="s1")), (C2S, _golem("a2", method="other"))]
    after = [(S2C, _answer("a1", token="hunter2")), (S2C, _answer("a2", token="public"))]
    whole, resumed = _taken_over(tmp_path, GOLEM, before, after, redact=redact)
    assert _said(resumed) == _said(whole)
    answers = [e for e in resumed if isinstance(e, FrameSeen)]
    assert b"hunter2" not in answers[0].payload and answers[0].redacted == ("echo:result.token",)
    assert b"public" in answers[1].payload


def test_a_request_whose_id_is_redacted_is_answered_but_not_paired(tmp_path: Path) -> None:
    # The recording holds the id as redacted: its answer cannot be told by id after the
    # restart (the tap that saw it paired it only for being the one request waiting).
    before = [(C2S, _golem("a1"))]
    after = [(S2C, _answer("a1")), (C2S, _golem("a2")), (S2C, _answer("a2"))]
    whole, resumed = _taken_over(tmp_path, GOLEM, before, after, redact=["id"])
    frames = [e for e in resumed if isinstance(e, FrameSeen) and e.direction is S2C]
    assert [(frame.answers, frame.orphan) for frame in frames] == [(None, False), (1, False)]
    assert next(e for e in whole if isinstance(e, FrameSeen)).answers == 0


@pytest.mark.parametrize("why", ["unrecorded", "unread"])
def test_an_answer_to_a_request_the_recording_does_not_hold_is_no_orphan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    before: list[tuple[Direction, bytes]] = [(C2S, _golem("a0")), (C2S, _golem("a1"))]
    unrecorded: list[tuple[Direction, bytes]] = []
    if why == "unread":  # recorded, too long to decode: known by its id
        monkeypatch.setattr(inflight_scan, "READ_LIMIT", 300)
        before.append((C2S, _golem("a2", blob="x" * 300)))
    else:  # handed to the process that died, never written
        unrecorded.append((C2S, _golem("a2")))
    after = [(S2C, _answer("a2")), (S2C, _answer("a1")), (S2C, _answer("a0"))]
    after += [(C2S, _golem("a3")), (S2C, _answer("a3"))]
    _, resumed = _taken_over(tmp_path, GOLEM, before, after, unrecorded=unrecorded)
    frames = [e for e in resumed if isinstance(e, FrameSeen) and e.direction is S2C]
    decided = [(frame.answers, frame.orphan) for frame in frames]
    a3 = 2 if why == "unrecorded" else 3
    assert decided == [(None, False), (1, False), (0, False), (a3, False)]
    assert not [e for e in resumed if isinstance(e, ViolationSeen)]


def test_the_tool_calls_in_flight_are_in_flight_again(tmp_path: Path) -> None:
    """With an MCP layer, the calls recorded and not answered are the tracker's again, in
    their order, a cancelled one too (it is in flight until its answer, as without a
    restart); the GOLEM routes' taps resume as any other."""
    path = tmp_path / "mcp.jsonl"
    session = TappedSession(path, MCP)
    session.open(1)

    def call(ident: int, tool: str) -> bytes:
        return _rpc(id=ident, method="tools/call", params={"name": tool})

    cancel = _rpc(method="notifications/cancelled", params={"requestId": 2})
    session.send(1, C2S, call(1, "one"), call(2, "two"), call(3, "three"), call(4, "four"))
    session.send(1, S2C, _rpc(id=3, result={"content": []}))
    session.send(1, C2S, cancel)
    session.close()
    layers = LayerTaps((RouteInfo("main", "stdio", "server", "mcp"),))
    taps = {
        1: layers(1, "main", GOLEM, lambda event: None, ProxyOptions(), None),
        2: layers(2, "golem", GOLEM, lambda event: None, ProxyOptions(), None),
    }
    fd = os.open(path, os.O_RDONLY)
    try:
        points = take_up(fd, taps, layers)
    finally:
        os.close(fd)
    assert layers.tracker is not None
    in_flight = [(ref.id, ref.tool, ref.index) for ref in layers.tracker.in_flight]
    assert in_flight == [(1, "one", 0), (2, "two", 1), (4, "four", 3)]
    assert points[1].next_n == (5, 1) and not points[2].opened
    # The call still waits for its answer (cancelled: it may never come, as without a
    # restart).
    assert taps[1].outstanding() == 3


def test_a_recording_that_cannot_be_read_back_is_as_none() -> None:
    """A descriptor that fails (here, one that is not open) makes every connection unknown,
    as without a recording, rather than a new process that crashes at each take-over."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    os.close(write_fd)  # the number names nothing now
    assert standing(read_fd, [1, 2]) == {1: UNKNOWN, 2: UNKNOWN}
    assert standing(-1, [3]) == {3: UNKNOWN}
