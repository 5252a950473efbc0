"""Requests let go before their answer: by the proxy past its pending limits (its ``evicted``
gap names them), or by a reader past what it holds at once (it says so the same way). Each
is a row of status ``evicted``: not pending, not unanswered, not an error; an answer that comes
after is a row of its own, never dropped; and what a reader holds stays within its bound,
whatever the file asks."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterable
from pathlib import Path
from typing import Optional

from golem_core.profiles import get_profile
from golem_proxy.analysis.flows import Flow, FlowTracker
from golem_proxy.analysis.reading_notes import reading_notes
from golem_proxy.analysis.trace import open_flows
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    GapReason,
    ObservationLost,
)
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.live.tap_limits import ObserveLimits
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo, open_private
from golem_proxy.recording.schema import encode_header
from tests.support.cli_helpers import run_cli
from tests.support.frames import frame_seen

PROFILE = get_profile("jsonrpc-ndjson")
ROUTE = RouteInfo("scrybe", "127.0.0.1:19000", "127.0.0.1:9000")
CALL = b'{"jsonrpc":"2.0","id":%d,"method":"set_vim","params":{"enabled":true}}\n'
ANSWER = b'{"jsonrpc":"2.0","id":%d,"result":{"enabled":true}}\n'
NO_LIMITS = ObserveLimits(pending=10**9, pending_bytes=10**12)


def _recorded(
    path: Path, chunks: list[tuple[Direction, bytes]], limits: ObserveLimits, close: bool = True
) -> Path:
    """One connection's ``chunks`` through the real tap (with ``limits``) into a recording."""
    header = Header.new(PROFILE.name, [ROUTE])
    with RecordingWriter(open_private(str(path), overwrite=True), header) as writer:
        writer.write(ConnectionOpened(conn=1, route=ROUTE.name, client="c", upstream="u", t=0.0))
        tap = ConnectionTap(1, ROUTE.name, PROFILE, writer.write, limits=limits)
        t = 0.0
        for direction, data in chunks:
            t += 0.001
            tap.process(direction, data, t)
        if close:
            writer.write(ConnectionClosed(conn=1, route=ROUTE.name, reason="closed", t=t + 1))
    return path


def _ids(flow: Flow) -> Optional[int]:
    frame = flow.request or flow.response
    ident = frame.message.id if frame is not None else None
    return ident if isinstance(ident, int) else None


def test_requests_the_proxy_let_go_are_evicted_rows_and_their_answers_rows_of_their_own(
    tmp_path: Path,
) -> None:
    """Five calls pipelined past a limit of three waiting: the tap lets the oldest two go. Read
    back, they were rows marked unanswered (an error) at the close, though their answers came."""
    calls = b"".join(CALL % n for n in range(1, 6))
    answers = b"".join(ANSWER % n for n in range(1, 6))
    path = _recorded(
        tmp_path / "evicted.jsonl",
        [(Direction.C2S, calls), (Direction.S2C, answers)],
        ObserveLimits(pending=3),
    )
    with open_flows(str(path)) as reader:
        flows = list(reader.flows())
    statuses = [(flow.status(PROFILE), flow.request is not None, _ids(flow)) for flow in flows]
    assert statuses == [
        ("evicted", True, 1),
        ("evicted", True, 2),
        ("ok", True, 3),
        ("ok", True, 4),
        ("ok", True, 5),
        ("unobserved:evicted", False, None),  # said once the chunk's frames are decoded
        ("ok", False, 1),  # an answer the tap could not pair: a row of its own, no orphan
        ("ok", False, 2),
    ]
    evicted = flows[:2]
    assert not any(flow.is_error or flow.pending or flow.closed_unanswered for flow in evicted)
    assert "2 requests unanswered (evicted)" in flows[5].gap.detail  # type: ignore[union-attr]
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]  # past the header
    numbers = {line["msg"]["id"]: line["n"] for line in lines if line["kind"] == "frame"}
    (gap,) = [line for line in lines if line["kind"] == "unobserved"]
    assert gap["frames"] == [[numbers[1], numbers[2]]], "the gap names the requests let go"

    stats = run_cli("stats", "--json", str(path))
    assert stats.returncode == 0, stats.stderr
    overall = json.loads(stats.stdout)["overall"]
    assert (overall["evicted"], overall["pending"], overall["errors"]) == (2, 0, 0)
    table = run_cli("stats", str(path))
    assert "evict" in table.stdout.splitlines()[1]
    shown = run_cli("show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("evicted") >= 2 and "unanswered" not in shown.stdout


def test_the_proxy_s_gap_names_the_request_it_let_go_after_one_it_set_aside(
    tmp_path: Path,
) -> None:
    """Through the real tap: call 1's answer went by unobserved, the client sent id 1 again
    (the proxy sets the first aside: it stays unanswered), then call 2 past a limit of one
    waiting: the proxy lets the second call go, not the first, the oldest it holds. Read back,
    each row is what the proxy decided; by count alone, the reader let the first go and showed
    the second unanswered."""
    path = tmp_path / "withdrawn.jsonl"
    header = Header.new(PROFILE.name, [ROUTE])
    with RecordingWriter(open_private(str(path), overwrite=True), header) as writer:
        writer.write(ConnectionOpened(conn=1, route=ROUTE.name, client="c", upstream="u", t=0.0))
        tap = ConnectionTap(1, ROUTE.name, PROFILE, writer.write, limits=ObserveLimits(pending=1))
        tap.process(Direction.C2S, CALL % 1, 0.1)
        tap.lose(Direction.S2C, 20, 0.2)  # the start of its answer: forwarded, not observed
        tap.process(Direction.C2S, CALL % 1, 0.3)  # the same id again
        tap.process(Direction.C2S, CALL % 2, 0.4)
        tap.process(Direction.S2C, (ANSWER % 1)[20:] + ANSWER % 2, 0.5)
        tap.closing(0.6)
        writer.write(ConnectionClosed(conn=1, route=ROUTE.name, reason="closed", t=0.7))
    with open_flows(str(path)) as reader:
        rows = [
            (flow.request.index, flow.status(PROFILE))
            for flow in reader.flows()
            if flow.request is not None
        ]
    assert rows == [(0, "unanswered"), (1, "evicted"), (2, "ok")]
    shown = run_cli("show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("unanswered") == 1 and "evicted" in shown.stdout


def test_the_live_view_lets_go_what_the_file_read_back_does(tmp_path: Path) -> None:
    """The live TUI's tracker takes the tap's events as they come, with no reader between:
    after a request set aside and three calls past a limit of two, its rows are the file's."""
    path = tmp_path / "live.jsonl"
    live = FlowTracker(PROFILE, keep=True)
    header = Header.new(PROFILE.name, [ROUTE])
    with RecordingWriter(open_private(str(path), overwrite=True), header) as writer:

        def publish(event: Event) -> None:
            writer.write(event)
            live.apply(event)

        publish(ConnectionOpened(conn=1, route=ROUTE.name, client="c", upstream="u", t=0.0))
        tap = ConnectionTap(1, ROUTE.name, PROFILE, publish, limits=ObserveLimits(pending=2))
        tap.process(Direction.C2S, CALL % 1, 0.1)
        tap.lose(Direction.S2C, 20, 0.2)
        tap.process(Direction.C2S, CALL % 1, 0.3)
        tap.process(Direction.C2S, CALL % 2 + CALL % 3 + CALL % 4, 0.4)
        late = (ANSWER % 1)[20:] + ANSWER % 3 + ANSWER % 2 + ANSWER % 4
        tap.process(Direction.S2C, late, 0.5)
        tap.closing(0.6)
        publish(ConnectionClosed(conn=1, route=ROUTE.name, reason="closed", t=0.7))

    def rows(flows: Iterable[Flow]) -> list[tuple[Optional[int], str]]:
        return sorted((_ids(flow) or 0, flow.status(PROFILE)) for flow in flows if flow.request)

    with open_flows(str(path)) as reader:
        read_back = rows(reader.flows())
    assert rows(live.flows) == read_back
    assert read_back == [
        (1, "evicted"),
        (1, "unanswered"),
        (2, "evicted"),
        (3, "ok"),
        (4, "ok"),
    ], "id 2's late answer is its own row, not id 4's"


def test_a_gap_that_names_frames_wrongly_is_a_one_line_error(tmp_path: Path) -> None:
    calls = b"".join(CALL % n for n in range(1, 4))
    path = _recorded(tmp_path / "bad.jsonl", [(Direction.C2S, calls)], ObserveLimits(pending=2))
    text = path.read_text()
    assert '"frames":[[0,0]]' in text
    path.write_text(text.replace('"frames":[[0,0]]', '"frames":[[3,1]]'))
    shown = run_cli("show", str(path))
    assert shown.returncode != 0
    (message,) = shown.stderr.strip().splitlines()
    assert "frames must be a list of [first, last] frame numbers, not [[3, 1]]" in message


def test_readers_let_go_the_requests_the_gap_names_not_the_oldest(tmp_path: Path) -> None:
    """A file whose gap names the second of three calls: the second is the evicted row, and
    the first and third are unanswered at the close; by count alone, the reader let go the
    first."""
    path = tmp_path / "named.jsonl"
    header = Header.new(PROFILE.name, [ROUTE])
    with RecordingWriter(open_private(str(path), overwrite=True), header) as writer:
        writer.write(ConnectionOpened(conn=1, route=ROUTE.name, client="c", upstream="u", t=0.0))
        for index in (1, 2, 3):
            payload = CALL[:-1] % index
            frame = frame_seen(PROFILE, Direction.C2S, index, payload, expects_answer=True)
            writer.write(frame)
        writer.write(
            ObservationLost(
                conn=1,
                route=ROUTE.name,
                direction=Direction.C2S,
                t=0.5,
                reason=GapReason.EVICTED,
                size=1,
                detail="1 request unanswered (evicted)",
                frames=((2, 2),),
            )
        )
        writer.write(ConnectionClosed(conn=1, route=ROUTE.name, reason="closed", t=1.0))
    with open_flows(str(path)) as reader:
        rows = [(_ids(flow), flow.status(PROFILE)) for flow in reader.flows() if flow.request]
    assert rows == [(1, "unanswered"), (2, "evicted"), (3, "unanswered")]


def test_a_version_1_file_keeps_the_count_rule_whatever_its_gap_names(tmp_path: Path) -> None:
    """Version 1 pairs by id as it reads (`V1Pairing`), letting the oldest go: a ``frames``
    member in such a file (hand-made: no version-1 writer wrote one) is not followed, or the
    pairing and the rows would disagree."""

    def frame(seq: int, sent: str, number: int, ident: int, kind: str) -> str:
        body = '"method":"m"' if kind == "request" else '"result":{}'
        return (
            f'{{"seq":{seq},"t":0.{seq},"kind":"frame","conn":1,"route":"scrybe","dir":"{sent}",'
            f'"n":{number},"size":10,"type":"{kind}","id":{ident},'
            f'"msg":{{"jsonrpc":"2.0","id":{ident},{body}}}}}\n'
        )

    header = encode_header(Header.new(PROFILE.name, [ROUTE])).decode().strip()
    header = header.replace('"version":2', '"version":1')
    rows = {}
    for named in ("", ',"frames":[[2,2]]'):
        path = tmp_path / f"v1{len(named)}.jsonl"
        path.write_text(
            header
            + "\n"
            + '{"seq":1,"t":0.0,"kind":"open","conn":1,"route":"scrybe",'
            + '"client":"c","upstream":"u"}\n'
            + "".join(frame(seq, "c2s", seq - 2, seq - 1, "request") for seq in (2, 3, 4))
            + '{"seq":5,"t":0.5,"kind":"unobserved","conn":1,"route":"scrybe","dir":"c2s",'
            + f'"reason":"evicted","size":1,"detail":"1 request"{named}}}\n'
            + frame(6, "s2c", 0, 1, "response")
            + '{"seq":7,"t":0.9,"kind":"close","conn":1,"route":"scrybe","reason":"closed",'
            + '"bytes":{"c2s":0,"s2c":0},"abnormal":false}\n'
        )
        with open_flows(str(path)) as reader:
            rows[named] = [(_ids(flow), flow.status(PROFILE)) for flow in reader.flows()]
    assert rows[""][0] == (1, "evicted")
    assert rows[',"frames":[[2,2]]'] == rows[""]


def test_a_request_whose_number_is_read_again_is_a_row_let_go_not_dropped(
    tmp_path: Path,
) -> None:
    """A damaged file names frame #0 twice: the newer is the one its answer pairs with, and the
    older, which no line can answer any more, is still a row (it was in none)."""
    path = _recorded(tmp_path / "ok.jsonl", [(Direction.C2S, CALL % 1)], NO_LIMITS, close=False)
    lines = path.read_text().splitlines(keepends=True)
    again = lines[-1].replace('"id":1', '"id":2').replace('"seq":3', '"seq":4')
    reply = (ANSWER % 2).decode().strip()
    answer = (
        '{"seq":5,"t":0.5,"kind":"frame","conn":1,"route":"scrybe","dir":"s2c","n":0,'
        f'"size":51,"type":"response","id":2,"answers":0,"msg":{reply}}}\n'
        '{"seq":6,"t":0.5,"kind":"exchange","conn":1,"route":"scrybe","req":0,"resp":0,'
        '"method":"set_vim","status":"ok","latency":0.1,"outcome":"ok"}\n'
        '{"seq":7,"t":0.7,"kind":"close","conn":1,"route":"scrybe","reason":"closed",'
        '"bytes":{"c2s":0,"s2c":0},"abnormal":false}\n'
    )
    path.write_text("".join(lines) + again + answer)
    with open_flows(str(path)) as reader:
        rows = [(_ids(flow), flow.status(PROFILE)) for flow in reader.flows() if flow.request]
    assert rows == [(1, "evicted"), (2, "ok")]


def test_an_answered_request_whose_number_is_read_again_keeps_its_answer(
    tmp_path: Path,
) -> None:
    """The same damage once the first request's answer came, before their exchange line: the
    pair is told as its line would have told it, first, and the later request waits on."""
    path = _recorded(tmp_path / "ok.jsonl", [(Direction.C2S, CALL % 1)], NO_LIMITS, close=False)
    lines = path.read_text().splitlines(keepends=True)
    reply = (ANSWER % 1).decode().strip()
    answer = (
        '{"seq":4,"t":0.2,"kind":"frame","conn":1,"route":"scrybe","dir":"s2c","n":0,'
        f'"size":51,"type":"response","id":1,"answers":0,"msg":{reply}}}\n'
    )
    again = lines[-1].replace('"id":1', '"id":2').replace('"seq":3', '"seq":5')
    rest = (
        '{"seq":6,"t":0.5,"kind":"exchange","conn":1,"route":"scrybe","req":0,"resp":0,'
        '"method":"set_vim","status":"ok","latency":0.1,"outcome":"ok"}\n'
        '{"seq":7,"t":0.7,"kind":"close","conn":1,"route":"scrybe","reason":"closed",'
        '"bytes":{"c2s":0,"s2c":0},"abnormal":false}\n'
    )
    path.write_text("".join(lines) + answer + again + rest)
    with open_flows(str(path)) as reader:
        rows = [
            (_ids(flow), flow.response is not None, flow.status(PROFILE))
            for flow in reader.flows()
            if flow.request
        ]
    assert rows == [(1, True, "ok"), (2, False, "unanswered")]


def test_a_reader_lets_go_of_requests_past_its_bound_and_says_so(tmp_path: Path) -> None:
    """A file that asks 2,000 questions at once (a proxy with no limits wrote it): a reader
    allowed 64 KiB lets the oldest go, in a gap it makes itself; the first call's answer, read
    at the end, is still a row; the last calls still pair."""
    count = 2_000
    calls = b"".join(CALL % n for n in range(1, count + 1))
    late = ANSWER % 1 + b"".join(ANSWER % n for n in range(count - 2, count + 1))
    path = _recorded(
        tmp_path / "asks.jsonl", [(Direction.C2S, calls), (Direction.S2C, late)], NO_LIMITS
    )
    limit = 64 * 1024
    with open_flows(str(path), in_flight=limit) as reader:
        flows = []
        for flow in reader.flows():
            assert reader.held.held_bytes <= limit
            flows.append(flow)
        let_go = reader.held.let_go
        notes = reading_notes(reader)
    evicted = [flow for flow in flows if flow.status(PROFILE) == "evicted"]
    gaps = [flow.gap for flow in flows if flow.gap is not None]
    assert len(evicted) == let_go > count // 2
    assert sum(gap.size for gap in gaps) == let_go
    assert all("let go by this reader" in gap.detail for gap in gaps)
    # Every call is a row once; the answer to the first is a row of its own, not dropped.
    asked = sorted(_ids(flow) or 0 for flow in flows if flow.request is not None)
    assert asked == list(range(1, count + 1))
    alone = [flow for flow in flows if flow.request is None and flow.response is not None]
    assert [_ids(flow) for flow in alone] == [1]
    paired = [_ids(flow) for flow in flows if flow.latency is not None]
    assert paired == [count - 2, count - 1, count]
    assert any(
        f"{let_go} requests waiting for an answer let go by this reader" in note for note in notes
    )


def test_what_a_reader_holds_does_not_grow_with_the_questions_a_file_asks(
    tmp_path: Path,
) -> None:
    """Ten times the requests never answered, the same peak: the bound, not the file."""
    limit = 256 * 1024

    def peak(count: int) -> int:
        calls = b"".join(CALL % n for n in range(1, count + 1))
        path = _recorded(
            tmp_path / f"asks{count}.jsonl", [(Direction.C2S, calls)], NO_LIMITS, close=False
        )
        tracemalloc.start()
        try:
            with open_flows(str(path), in_flight=limit) as reader:
                for _ in reader.flows():
                    pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(2_000), peak(20_000)
    # Before, 18,000 more requests held cost ~25 MiB more (~1.4 KB each).
    assert large - small < 2 * 1024 * 1024, (small, large)
