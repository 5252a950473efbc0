"""The fast trace loader reads exactly what the reference recording reader reads, whatever the
interleaving of connections and whatever the ids look like."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event, ExchangeCompleted, FrameSeen
from golem_proxy.recording import Header, RecordingWriter, RouteInfo, read_recording
from golem_proxy.replay.index import load_trace

HEADER = Header.new("golem", [RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876")])

ids = st.one_of(
    st.uuids().map(str),
    st.integers(-5, 10**12),
    st.sampled_from(['a"b', "c\\d", "é", 'x,"method":"y']),
)
methods = st.sampled_from(["ping", "scene.list_layers", 'we"ird', "back\\slash", "métier"])


@st.composite
def sessions(draw: st.DrawFn) -> list[Event]:
    """Events of up to three connections, interleaved, some of them pipelining requests."""
    streams: list[list[Event]] = []
    t = 0.0
    for conn in range(1, draw(st.integers(1, 3)) + 1):
        route = draw(st.sampled_from(["main", "gh", 'r"oute']))
        events: list[Event] = []
        pending: list[FrameSeen] = []
        n = [0, 0]
        for _ in range(draw(st.integers(0, 6))):
            t += draw(st.floats(0, 0.01))
            if pending and draw(st.booleans()):  # answer the oldest outstanding request
                request = pending.pop(0)
                answer = {"id": request.message.id, "result": {"ok": True}, "error": None}
                payload = GOLEM.encode_payload(answer)
                message = GOLEM.parse(payload, Role.RESPONSE)
                response = FrameSeen(conn, route, Direction.S2C, n[1], t, 4, payload, message)
                n[1] += 1
                events += [response, ExchangeCompleted(conn, route, request, response)]
                continue
            body = {"id": draw(ids), "method": draw(methods), "params": {}}
            payload = json.dumps(body).encode()
            message = GOLEM.parse(payload, Role.REQUEST)
            request = FrameSeen(conn, route, Direction.C2S, n[0], t, 4, payload, message)
            n[0] += 1
            pending.append(request)
            events.append(request)
        streams.append(events)
    merged: list[Event] = []
    while any(streams):
        stream = draw(st.sampled_from([s for s in streams if s]))
        merged.append(stream.pop(0))
    return merged


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sessions())
def test_the_fast_loader_agrees_with_the_reference_reader(
    tmp_path: Path, events: list[Event]
) -> None:
    path = tmp_path / "t.jsonl"
    with RecordingWriter.create(str(path), HEADER, overwrite=True) as writer:
        for event in events:
            writer.write(event)
    fast = load_trace(str(path))
    reference = read_recording(str(path)).exchanges()
    got: list[Any] = [
        (e.route, e.method, e.request_type, e.request, e.response, round(e.latency, 6))
        for e in fast.exchanges
    ]
    want: list[Any] = [
        (
            e.route,
            e.method,
            "request",
            e.request.payload,
            e.response.payload,
            round(max(0.0, round(e.response.t, 6) - round(e.request.t, 6)), 6),
        )
        for e in reference
    ]
    assert got == want
    assert [e.number for e in fast.exchanges] == list(range(1, len(want) + 1))
    fast.close()
