"""Reading a trace in pieces (golem_proxy/analysis/trace.py `FlowReader.batches`): a piece is
handed on at a count of flows or once its frames reach a cost (what holding them costs), so a
trace of large answers is never held whole, and every flow comes once, in order, with its own
events."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem_proxy.analysis import trace as trace_module
from golem_proxy.analysis.trace import open_flows
from golem_proxy.events import ExchangeCompleted, FrameSeen
from golem_proxy.recording.format import RecordingWriter
from golem_proxy.recording.held_frames import held_cost
from tests.support.sessions import SessionBuilder, golem_header, write_recording

KIB = 1024
SIZES = (100 * KIB, 300, 100 * KIB, 100 * KIB, 200, 250 * KIB, 300, 300, 100 * KIB)


def write_trace(path: Path) -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for number, size in enumerate(SIZES):
        request = s.request(1, "viewport.capture", {"n": number}, number + 0.1)
        s.respond(request, number + 0.2, result={"image": "A" * size})
    writer = RecordingWriter.create(str(path), golem_header())
    for event in s.events:
        writer.write(event)
    writer.close()


def test_a_piece_is_handed_on_once_its_frames_reach_the_size(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    write_trace(path)
    most = 400 * KIB  # each answer's string charged twice: its bytes and its characters
    with open_flows(str(path)) as trace:
        pieces = list(trace.batches(1000, most_bytes=most))
    numbers = [[flow.number for flow in flows] for _, flows in pieces]
    assert [n for piece in numbers for n in piece] == list(range(1, len(SIZES) + 1))
    assert numbers == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    for _, flows in pieces[:-1]:
        held = [sum(held_cost(f) for f in (flow.request, flow.response) if f) for flow in flows]
        assert sum(held) >= most > sum(held[:-1])  # at most one flow past the size
    for events, flows in pieces:  # each flow's frames and exchange come in its own piece
        frames = {(e.direction, e.index) for e in events if isinstance(e, FrameSeen)}
        assert frames == {
            (frame.direction, frame.index)
            for flow in flows
            for frame in (flow.request, flow.response)
            if frame is not None
        }
        assert sum(isinstance(e, ExchangeCompleted) for e in events) == len(flows)


def test_a_count_of_flows_still_hands_a_piece_on(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    write_trace(path)
    with open_flows(str(path)) as trace:
        counts = [len(flows) for _, flows in trace.batches(4)]
    assert counts == [4, 4, 1]


def test_events_of_no_flow_are_handed_on_in_pieces_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connections opened and closed with nothing said settle no flow: a piece held them all
    (`check` of 300,000 peaked at 227 MiB)."""
    monkeypatch.setattr(trace_module, "EVENTS_PER_PIECE", 8)
    s = SessionBuilder(check=False)
    for conn in range(1, 21):
        s.open(conn, conn * 0.1)
        s.close(conn, conn * 0.1 + 0.05)
    s.open(21, 3.0)
    request = s.request(21, "ping", {}, 3.0)
    s.respond(request, 3.1, result={})
    path = tmp_path / "trace.jsonl"
    write_recording(str(path), s.events)
    with open_flows(str(path)) as trace:
        pieces = list(trace.batches(1000))
    assert [len(events) for events, _ in pieces[:-1]] == [8] * 5
    assert sum(len(flows) for _, flows in pieces) == 1
