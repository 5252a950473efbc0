"""The fast trace loader reads exactly what the reference recording reader reads, whatever the
interleaving of connections and whatever the ids look like."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golem_core.outcome import OK
from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event, ExchangeCompleted, FrameSeen
from golem_proxy.recording import scan, scan_loader
from golem_proxy.recording.forked import can_fork
from golem_proxy.recording.format import (
    Header,
    RecordingError,
    RecordingWriter,
    RouteInfo,
    read_recording,
)
from golem_proxy.recording.reader import parse_header
from golem_proxy.replay.index import encode_recorded, load_exchanges
from tests.support.frames import frame_seen

from .traces import modelling_session

HEADER = Header.new("golem", [RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876")])

ids = st.one_of(
    st.uuids().map(str),
    st.integers(-5, 10**12),
    st.sampled_from(['a"b', "c\\d", "é", 'x,"method":"y']),
)
methods = st.sampled_from(["ping", "scene.list_layers", 'we"ird', "back\\slash", "métier"])


def golem_frame(
    conn: int,
    route: str,
    direction: Direction,
    index: int,
    t: float,
    body: dict[str, Any],
    answers: Optional[int] = None,
) -> FrameSeen:
    """A GOLEM frame as the tap publishes it: a request (c2s, written by ``json.dumps``) expects
    an answer; a response (s2c, the reference encoding) answers the request ``answers``."""
    asks = direction is Direction.C2S
    payload = json.dumps(body).encode() if asks else GOLEM.encode_payload(body)
    return frame_seen(
        GOLEM,
        direction,
        index,
        payload,
        conn=conn,
        route=route,
        t=t,
        size=4,
        expects_answer=asks,
        answers=answers,
    )


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
                response = golem_frame(conn, route, Direction.S2C, n[1], t, answer, request.index)
                n[1] += 1
                events += [
                    response,
                    ExchangeCompleted(
                        conn=conn, route=route, request=request, response=response, outcome=OK
                    ),
                ]
                continue
            body = {"id": draw(ids), "method": draw(methods), "params": {}}
            request = golem_frame(conn, route, Direction.C2S, n[0], t, body)
            n[0] += 1
            pending.append(request)
            events.append(request)
        streams.append(events)
    merged: list[Event] = []
    while any(streams):
        stream = draw(st.sampled_from([s for s in streams if s]))
        merged.append(stream.pop(0))
    return merged


def write(path: Path, events: list[Event]) -> None:
    with RecordingWriter.create(str(path), HEADER, overwrite=True) as writer:
        for event in events:
            writer.write(event)


def expected(path: Path) -> list[Any]:
    return [
        (
            e.route,
            e.method,
            "request",
            e.request.payload,
            e.response.payload,
            round(max(0.0, round(e.response.t, 6) - round(e.request.t, 6)), 6),
        )
        for e in read_recording(str(path)).exchanges()
    ]


def loaded(path: Path) -> list[Any]:
    trace = load_exchanges(str(path))
    try:
        assert [e.number for e in trace.exchanges] == list(range(1, len(trace.exchanges) + 1))
        return [
            (e.route, e.method, e.request_type, e.request, e.response, round(e.latency, 6))
            for e in trace.exchanges
        ]
    finally:
        trace.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sessions())
def test_the_fast_loader_agrees_with_the_reference_reader(
    tmp_path: Path, events: list[Event]
) -> None:
    path = tmp_path / "t.jsonl"
    write(path, events)
    assert loaded(path) == expected(path)


@pytest.mark.skipif(not can_fork(), reason="no fork here")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sessions())
@pytest.mark.usefixtures("single_threaded")
def test_two_processes_read_what_one_reads(tmp_path: Path, events: list[Event]) -> None:
    """Every trace is split in two here, wherever its middle falls: inside a pipelined
    exchange, between a request and its answer, or between two connections' lines."""
    path = tmp_path / "t.jsonl"
    write(path, events)
    forks: list[object] = []
    start = scan.ForkedCall.start

    def counting_start(function: Any) -> Any:
        call = start(function)
        forks.append(call)
        return call

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "PARALLEL_MIN_BYTES", 0)
        patch.setattr(scan.ForkedCall, "start", counting_start)
        assert loaded(path) == expected(path)
    assert all(call is not None for call in forks)  # forked whenever there were two halves


def test_the_parent_reads_the_half_of_a_child_that_died(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write(path, [event for n in range(200) for event in sequential_exchange(1, n, n)])
    parent = os.getpid()
    scan_part = scan._scan_part

    def dies_in_the_child(*args: Any) -> Any:
        if os.getpid() != parent:
            os._exit(3)
        return scan_part(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "PARALLEL_MIN_BYTES", 0)
        patch.setattr(scan, "_scan_part", dies_in_the_child)
        assert loaded(path) == expected(path)
    assert len(expected(path)) == 200


def test_lines_ending_in_crlf_read_like_the_reference(tmp_path: Path) -> None:
    """A trace checked out with Windows line endings (git's autocrlf)."""
    path = tmp_path / "t.jsonl"
    idents = ["back\\slash", "plain", 7]
    events = [event for n, ident in enumerate(idents) for event in sequential_exchange(1, n, ident)]
    write(path, events)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert loaded(path) == expected(path)
    assert len(expected(path)) == 3


def rows_split_at_every_line(path: Path) -> list[list[Any]]:
    """The rows two processes would read, for every place the split can fall."""
    data = path.read_bytes()
    header_end = data.index(b"\n") + 1
    header = parse_header(data[:header_end])[0]
    end = data.rindex(b"\n") + 1
    results = []
    for middle in range(header_end, end - 1):
        if data[middle] != ord("\n"):
            continue
        first = scan_loader.Loader(GOLEM, {}, data, 1 << 20, header=header)
        first.scan(header_end - 1, middle + 1)
        first.adopt(scan._scan_part(GOLEM, {}, data, 1 << 20, middle, end, header))
        results.append([row for row in first.rows if row is not None])
    return results


def rows_in_one_process(path: Path) -> list[Any]:
    data = path.read_bytes()
    header_end = data.index(b"\n") + 1
    header = parse_header(data[:header_end])[0]
    return scan._scan(GOLEM, {}, data, 1 << 20, header_end, data.rindex(b"\n") + 1, header)


def frame(conn: int, direction: Direction, n: int, ident: Any) -> FrameSeen:
    """A ping (c2s) or its answer (s2c) with id ``ident``, the ``n``-th of its direction."""
    if direction is Direction.C2S:
        ping = {"id": ident, "method": "ping", "params": {}}
        return golem_frame(conn, "main", direction, n, n, ping)
    answer = {"id": ident, "result": {}, "error": None}
    # A sequential client: the answer's index is its request's.
    return golem_frame(conn, "main", direction, n, n, answer, answers=n)


def sequential_exchange(conn: int, n: int, ident: Any) -> list[Event]:
    """A ping and its answer as a sequential client records them: three adjacent lines."""
    request, response = frame(conn, Direction.C2S, n, ident), frame(conn, Direction.S2C, n, ident)
    return [
        request,
        response,
        ExchangeCompleted(conn=conn, route="main", request=request, response=response, outcome=OK),
    ]


def test_a_reused_frame_key_pairs_as_one_process_pairs_it(tmp_path: Path) -> None:
    """Request key (1, c2s, 0) is written twice; the second exchange line names it after its
    newer frame was used: one process finds nothing, and neither may the split read."""
    old, new = frame(1, Direction.C2S, 0, "old"), frame(1, Direction.C2S, 0, "new")
    first, second = frame(1, Direction.S2C, 0, "new"), frame(1, Direction.S2C, 1, "x")
    padding = [frame(9, Direction.C2S, n, n) for n in range(8)]  # unpaired lines
    path = tmp_path / "t.jsonl"
    with RecordingWriter.create(str(path), HEADER, overwrite=True) as writer:
        for event in [old, *padding, new, frame(9, Direction.C2S, 99, 99), first]:
            writer.write(event)
        writer.write(
            ExchangeCompleted(conn=1, route="main", request=new, response=first, outcome=OK)
        )
        writer.write(second)
        writer.write(
            ExchangeCompleted(conn=1, route="main", request=new, response=second, outcome=OK)
        )
    single = rows_in_one_process(path)
    assert len(single) == 1
    assert all(rows == single for rows in rows_split_at_every_line(path))


def test_a_frame_after_its_exchange_line_is_never_paired(tmp_path: Path) -> None:
    request, response = frame(2, Direction.C2S, 0, "a"), frame(2, Direction.S2C, 0, "a")
    padding = [frame(9, Direction.C2S, n, n) for n in range(8)]
    path = tmp_path / "t.jsonl"
    write(
        path,
        [
            *padding,
            response,
            ExchangeCompleted(conn=2, route="main", request=request, response=response, outcome=OK),
            request,
        ],
    )
    assert rows_in_one_process(path) == []
    assert all(rows == [] for rows in rows_split_at_every_line(path))


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sessions())
def test_every_split_reads_what_one_process_reads(tmp_path: Path, events: list[Event]) -> None:
    path = tmp_path / "t.jsonl"
    write(path, events)
    single = rows_in_one_process(path)
    assert all(rows == single for rows in rows_split_at_every_line(path))


def test_a_recorded_lone_surrogate_is_sent_as_its_escape() -> None:
    """A trace may hold ``\\udc80`` (legal JSON, not UTF-8): replay and verify send the same
    JSON value instead of failing to encode it."""
    obj = {"id": "a\udc80", "result": {}, "error": None}
    framed = encode_recorded(GOLEM, obj)
    payload = framed[4:]
    assert json.loads(payload) == obj
    assert encode_recorded(GOLEM, {"id": "a"}) == GOLEM.encode({"id": "a"})


def _damaged_payload(tmp_path: Path, change: Any) -> tuple[Path, int]:
    """The modelling session with its first request's line changed by ``change`` (the line
    stays in the writer's layout, so the fast path takes it, payload unparsed)."""
    path = modelling_session(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = change(lines[2])
    path.write_bytes(b"".join(lines))
    return path, 3


@pytest.mark.parametrize(
    "change",
    [
        lambda line: line[:-2] + b',"msg":{"id":"x","method":"y"}}\n',  # msg twice
        lambda line: line.replace(b'"params": {}', b'"params": "\xc3\x28"'),  # not UTF-8
        lambda line: line.replace(b'"params": {}', b'"params": ' + b"[" * 300 + b"]" * 300),
        lambda line: line.replace(b'"params": {}}', b'"params": {}} junk'),
    ],
    ids=["msg twice", "not UTF-8", "too deep", "not JSON"],
)
def test_a_damaged_payload_is_refused_at_load_as_the_reader_refuses_it(
    tmp_path: Path, change: Any
) -> None:
    # Refused before anything is served: not only once (if ever) its exchange is.
    path, number = _damaged_payload(tmp_path, change)
    with pytest.raises(RecordingError) as read:
        read_recording(str(path))
    with pytest.raises(RecordingError) as loaded:
        load_exchanges(str(path))
    assert read.value.line == number
    assert str(loaded.value) == str(read.value)


@pytest.mark.usefixtures("single_threaded")
def test_a_damaged_payload_in_the_half_a_child_reads_is_refused_alike(tmp_path: Path) -> None:
    path = modelling_session(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    last_request = max(n for n, line in enumerate(lines) if b'"dir":"c2s"' in line)
    lines[last_request] = lines[last_request].replace(b'"params": ', b'"params": ,', 1)
    path.write_bytes(b"".join(lines))
    with pytest.raises(RecordingError) as read:
        read_recording(str(path))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "PARALLEL_MIN_BYTES", 0)
        with pytest.raises(RecordingError) as loaded:
            load_exchanges(str(path))
    assert read.value.line == last_request + 1
    assert str(loaded.value) == str(read.value)


def test_a_payload_recorded_in_base64_that_is_not_json_is_no_damage(tmp_path: Path) -> None:
    path = modelling_session(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    data = json.loads(lines[3])  # the first answer
    del data["msg"]
    data["raw"] = base64.b64encode(b"not json").decode()
    lines[3] = json.dumps(data, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    trace = load_exchanges(str(path))
    try:
        with pytest.raises(ValueError) as decoded:
            trace.exchanges[0].response_obj()
    finally:
        trace.close()
    assert not isinstance(decoded.value, RecordingError)
