"""A frame too large for a reader to parse (recording/frame_skeleton.py): written verbatim with
its skeleton before it, so that every reader opens its recording and types the frame from the
skeleton, its bytes kept whole. Written to fail on the code before it, where every reader
refused the whole recording at that frame's line."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from golem_core.messages import Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.bulk import BULK_NUMBERS
from golem_proxy.events import Direction, ExchangeCompleted, FrameSeen
from golem_proxy.json_cost import parse_cost
from golem_proxy.live.tap_limits import ObserveLimits
from golem_proxy.recording import frame_lines, frame_skeleton
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.format import RecordingReader, RecordingWriter
from golem_proxy.recording.frame_reading import event_object
from golem_proxy.recording.frame_skeleton import over_parse_budget, skeleton_members
from golem_proxy.recording.inflight_scan import in_flight
from golem_proxy.recording.line_guard import check_line, decode_json
from golem_proxy.recording.schema import DEFAULT_LINE_BUDGET, MSG_KEY, RecordingError
from golem_proxy.replay.merge import append_recording
from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import TapSimulator, write_recording

ONES = 15_000_000
# 30 MB of small numbers: about 514 MiB once parsed by the reader's estimate, over its budget.
ANSWER = b'{"id": "a1", "success": true, "result": [' + b"1," * (ONES - 1) + b"1]}"
SKELETON = {"id": "a1", "success": True, "result": [f"<{ONES} numbers elided>"]}


@pytest.fixture(scope="module")
def large_answer_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TapSimulator]:
    """A session through the real tap: a call answered with `ANSWER`, then a ping."""
    tap = TapSimulator(GOLEM, cap=64 * 1024 * 1024)
    tap.open(1)
    tap.request(1, {"id": "a1", "method": "mesh.get_mask", "params": {}})
    tap.tick(0.2)
    tap.send(1, Direction.S2C, GOLEM.frame_payload(ANSWER))
    tap.tick(0.01)
    tap.request(1, {"id": "a2", "method": "ping", "params": {}})
    tap.tick(0.002)
    tap.respond(1, {"id": "a2", "success": True, "result": {"pong": True}})
    tap.close(1)
    path = tmp_path_factory.mktemp("large") / "large.jsonl"
    path.write_bytes(write_recording(tap.events))
    return path, tap


def _answered(method: str, answer: bytes) -> TapSimulator:
    """A call of ``method`` answered with ``answer``, through the real tap, with no parse
    limit (`ObserveLimits.parse`): as a proxy with a higher one, or before it, recorded it."""
    tap = TapSimulator(GOLEM, cap=64 * 1024 * 1024, limits=ObserveLimits(parse=1 << 40))
    tap.open(1)
    tap.request(1, {"id": "a1", "method": method, "params": {}})
    tap.send(1, Direction.S2C, GOLEM.frame_payload(answer))
    return tap


def test_the_line_holds_the_payload_verbatim_after_its_skeleton(
    large_answer_trace: tuple[Path, TapSimulator],
) -> None:
    path, _ = large_answer_trace
    (line,) = [line for line in path.read_bytes().splitlines() if len(line) > ONES]
    with pytest.raises(RecordingError, match="too large to parse"):
        check_line(line)  # what every reader refused the recording for
    start = line.index(MSG_KEY)
    assert line[start + len(MSG_KEY) : -1] == ANSWER
    members = decode_json(line[:start] + b"}")
    assert members["skeleton"] == SKELETON
    assert members["elided"] == len(b"[" + b"1," * (ONES - 1) + b"1]")


def test_every_reader_reads_the_frame_from_its_skeleton_and_keeps_its_bytes(
    large_answer_trace: tuple[Path, TapSimulator],
) -> None:
    path, _ = large_answer_trace
    with path.open("rb") as stream:
        exact = list(RecordingReader(stream))
    with path.open("rb") as stream:
        fast = list(FastRecordingReader(stream))
    assert fast == exact
    frames = [event for event in exact if isinstance(event, FrameSeen)]
    answer = frames[1]
    assert answer.payload == ANSWER
    assert isinstance(answer.message, Response) and answer.message.obj == SKELETON
    assert answer.elided > 0 and answer.answers == 0
    exchanges = [event for event in exact if isinstance(event, ExchangeCompleted)]
    assert [(e.method, e.outcome.kind.value) for e in exchanges] == [
        ("mesh.get_mask", "ok"),
        ("ping", "ok"),
    ]


def test_the_commands_open_it_and_say_what_was_left_out(
    large_answer_trace: tuple[Path, TapSimulator], tmp_path: Path
) -> None:
    path, tap = large_answer_trace
    shown = run_cli("show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "mesh.get_mask" in shown.stdout and "ping" in shown.stdout
    stats = run_cli("stats", str(path))
    assert stats.returncode == 0, stats.stderr
    checked = run_cli("check", str(path))
    assert checked.returncode in (0, 1), checked.stderr  # 1: the envelope's violations
    assert "note: 1 flow with a payload too large to parse" in checked.stderr
    exported = tmp_path / "flows.jsonl"
    done = run_cli("export", "--format", "jsonl", "--out", str(exported), str(path))
    assert done.returncode == 0, done.stderr
    first = json.loads(exported.read_text().splitlines()[0])
    assert first["response"] == SKELETON
    assert first["response_elided"] == len(b"[" + b"1," * (ONES - 1) + b"1]")
    assert "request_elided" not in first
    streams = tmp_path / "streams"
    done = run_cli("export", "--out", str(streams), str(path))
    assert done.returncode == 0, done.stderr
    assert (streams / "conn-0001-s2c.bin").read_bytes() == tap.fed(1, Direction.S2C)
    queried = run_cli("query", "SELECT method, elided FROM flows ORDER BY n", str(path), "--json")
    assert queried.returncode == 0, queried.stderr
    rows = [json.loads(line) for line in queried.stdout.splitlines()]
    assert rows == [
        {"method": "mesh.get_mask", "elided": first["response_elided"]},
        {"method": "ping", "elided": 0},
    ]


def test_under_the_budget_the_payload_is_read_and_a_skeleton_is_not() -> None:
    payload = b'{"id": "a1", "success": true, "result": [1, 2, 3]}'
    line = (
        b'{"seq":3,"t":0.1,"kind":"frame","conn":1,"route":"main","dir":"s2c","n":0,'
        b'"size":60,"type":"response","id":"a1","elided":9,"skeleton":{"id":"a1","success":'
        b'true,"result":["<3 numbers elided>"]},"msg":' + payload + b"}"
    )
    data, verbatim = event_object(line)
    assert verbatim == payload and data["msg"]["result"] == [1, 2, 3]
    (frame,) = list(RecordingReader(io.BytesIO(write_recording([]) + line + b"\n")))
    assert isinstance(frame, FrameSeen)
    assert frame.message.obj == {"id": "a1", "success": True, "result": [1, 2, 3]}
    assert frame.elided == 0


def test_a_skeleton_holds_no_splice_key_and_reads_back_whole() -> None:
    """A member named ``msg`` inside the message: in the skeleton's text, ``,"msg":`` would be
    taken for the payload's start; it is spelled with an escape, the same key to JSON."""
    obj = {"id": "a1", "success": True, "result": {"n": 1, "msg": "hi", "v": [0.5] * BULK_NUMBERS}}
    elided, text = skeleton_members(obj, 0)
    assert MSG_KEY not in text
    assert json.loads(text) == {
        "id": "a1",
        "success": True,
        "result": {"n": 1, "msg": "hi", "v": [f"<{BULK_NUMBERS} numbers elided>"]},
    }
    assert elided == len(json.dumps([0.5] * BULK_NUMBERS, separators=(",", ":")))


@pytest.mark.parametrize(
    ("bulk", "placeholder"),
    [
        ([[1.25, 2.5, 3.0]] * BULK_NUMBERS, [f"<{3 * BULK_NUMBERS} numbers elided>"]),
        ([[]] * BULK_NUMBERS, [f"<{BULK_NUMBERS} items elided>"]),
        ([{"a": 1}] * BULK_NUMBERS, [f"<{BULK_NUMBERS} items elided>"]),
    ],
    ids=["points", "empty arrays", "small objects"],
)
def test_the_skeleton_elides_what_makes_a_payload_costly(
    bulk: list[object], placeholder: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long arrays of numbers first; long arrays of anything when that is not enough."""
    monkeypatch.setattr(frame_skeleton, "SKELETON_BUDGET", 4096)
    obj = {"id": "a1", "success": True, "result": {"shape": bulk}}
    _, text = skeleton_members(obj, 0)
    assert json.loads(text) == {"id": "a1", "success": True, "result": {"shape": placeholder}}


def test_a_skeleton_still_too_large_keeps_the_envelope(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many short arrays side by side are no long array: the skeleton falls back to the
    envelope's plain members, each container a placeholder with its size."""
    monkeypatch.setattr(frame_skeleton, "SKELETON_BUDGET", 4096)
    result = {f"k{n}": [n] for n in range(1000)}
    obj = {"id": "a1", "success": False, "result": result}
    elided, text = skeleton_members(obj, 7)
    size = len(json.dumps(result, separators=(",", ":")))
    assert json.loads(text) == {"id": "a1", "success": False, "result": f"<{size} bytes not kept>"}
    assert elided == 7 + size


def test_the_writer_bound_skips_the_count_for_blobs_and_small_payloads() -> None:
    blob = b'{"id": "a1", "result": {"png": "' + b"A" * (20 << 20) + b'"}}'
    assert not over_parse_budget(blob, 20 << 20)  # strings the tap elided cost their size
    assert not over_parse_budget(b"[" * 4096, 0)  # too short to be over, whatever it holds
    assert over_parse_budget(b"[" + b"1," * (ONES - 1) + b"1]", 0)


def test_a_frame_read_from_its_skeleton_is_written_again_with_it(
    large_answer_trace: tuple[Path, TapSimulator], tmp_path: Path
) -> None:
    """Events read back and written again (the TUI's `w`, a merged recording): the frame's
    ``elided`` counts numbers, not opaque strings, and the writer measures it instead of
    trusting it as the tap's; the copy opens as the original does."""
    path, _ = large_answer_trace
    with path.open("rb") as stream:
        reader = RecordingReader(stream)
        events = list(reader)
        header = reader.header
    copy = tmp_path / "copy.jsonl"
    writer = RecordingWriter.create(str(copy), header)
    for event in events:
        writer.write(event)
    writer.close()
    with copy.open("rb") as stream:
        again = list(RecordingReader(stream))
    assert again == events
    merged = tmp_path / "merged.jsonl"
    merged.write_bytes(path.read_bytes())
    assert append_recording(str(merged), str(path)).count == len(events)
    with merged.open("rb") as stream:
        assert len(list(RecordingReader(stream))) == 2 * len(events)


def test_a_skeleton_keeps_what_the_outcome_is_read_from() -> None:
    """Bulk that no long array holds (1,300 rows of 8,000 empty arrays, 31 MB): the skeleton
    keeps the message's first levels, so the failure inside the success envelope reads as
    the proxy read it, not as an ok."""
    grid = b"[" + b",".join([b"[" + b"[]," * 7999 + b"[]]"] * 1300) + b"]"
    failed = b'"success": false, "code": "MESH_TOO_BIG"'
    answer = b'{"id": "a1", "success": true, "result": {%s, "grid": %s}}' % (failed, grid)
    tap = _answered("mesh.get_grid", answer)
    tap.close(1)
    live = [e for e in tap.events if isinstance(e, ExchangeCompleted)]
    (back,) = [
        e
        for e in RecordingReader(io.BytesIO(write_recording(tap.events)))
        if isinstance(e, ExchangeCompleted)
    ]
    assert back.response.elided and back.response.payload == answer
    assert back.outcome == live[0].outcome
    assert back.outcome.text == "MESH_TOO_BIG (success: false)"


def test_a_payload_kept_unparsed_must_be_one_json_value() -> None:
    """Its payload is not parsed, but its brackets are checked: a line whose ``msg`` is not
    its last member (a member after the payload) is refused as a parse would refuse it."""
    line = write_recording([]).splitlines()[0]  # the header, to read a line after it
    frame = (
        b'{"seq":1,"t":0.1,"kind":"frame","conn":1,"route":"main","dir":"s2c","n":0,'
        b'"size":9,"type":"response","id":"a1","elided":9,"skeleton":{"id":"a1"},"msg":'
        + ANSWER
        + b',"extra":{}}'
    )
    with pytest.raises(RecordingError, match="not one JSON value"):
        list(RecordingReader(io.BytesIO(line + b"\n" + frame + b"\n")))


def test_brackets_inside_strings_cost_what_any_character_does() -> None:
    """A string id of 20 million ``[`` is no structure: the refined estimate (outside
    strings) takes it, where counting every bracket put it at 1.2 GiB."""
    text = b'{"id":"' + b"[" * 20_000_000 + b'","x":[1]}'
    check_line(text)
    assert parse_cost(text)[0] > 1 << 30
    assert parse_cost(text, 1 << 29)[0] < 64 << 20  # 3 bytes a byte of a string


def test_a_request_too_large_to_parse_is_seen_in_flight(tmp_path: Path) -> None:
    """What a process taking over reads back: the request's members before its skeleton are
    those of any frame line, so it is found waiting for its answer, and the scan goes on
    past it."""
    tap = TapSimulator(GOLEM, cap=64 * 1024 * 1024)
    tap.open(1)
    tap.request(1, {"id": "a0", "method": "ping", "params": {}})
    params = b'{"id": "a1", "method": "mesh.set_mask", "params": {"mask": [' + b"1," * ONES
    tap.send(1, Direction.C2S, GOLEM.frame_payload(params + b"1]}}"))
    path = tmp_path / "in_flight.jsonl"
    path.write_bytes(write_recording(tap.events))
    fd = os.open(path, os.O_RDONLY)
    try:
        found = in_flight(fd, {1: GOLEM})[1]
    finally:
        os.close(fd)
    assert found.whole
    assert [f.message.id for f in found.frames] + [ident for _, ident in found.unread] == [
        "a0",
        "a1",
    ]


@pytest.mark.parametrize("spare", [0, 1, 2, 3, 60, 100])
def test_a_payload_at_the_budget_s_edge_is_written_so_that_it_reads(spare: int) -> None:
    """The writer's bound against the reader's: a payload padded to leave ``spare`` bytes of
    parse cost under the budget beside its members is read back, whole or from its skeleton,
    never refused (the line's closing ``}`` counted too)."""
    core = b'{"id":"a1","success":true,"result":[' + b"1," * 14_800_000 + b"1]"
    message = GOLEM.parse(b'{"id":"a1","success":true,"result":[1]}', Role.RESPONSE)

    def frame(payload: bytes) -> FrameSeen:
        return FrameSeen(
            conn=1, route="main", direction=Direction.S2C, index=0, t=1.0,
            size=len(payload), payload=payload, message=message, answers=0,
        )  # fmt: skip

    prefix = frame_lines._frame_prefix(frame(core + b"}"), message, 1)
    room = DEFAULT_LINE_BUDGET - parse_cost(prefix)[0] - parse_cost(core + b"}")[0]
    payload = core + b" " * max(0, (room - spare) // 2) + b"}"
    line = b"".join(frame_lines.encode_frame(frame(payload), GOLEM, 1, from_tap=True))
    (back,) = list(RecordingReader(io.BytesIO(write_recording([]) + line)))
    assert isinstance(back, FrameSeen) and back.payload == payload


def test_a_frame_whose_bulk_a_view_elided_is_stored_raw_when_it_may_hold_nan() -> None:
    """A tap frame over 1 MiB has its blob elided from its message; NaN beside it is found in
    the message the tap decoded. The same frame from elsewhere (a view's copy, `w`) cannot be
    judged by its message: its bytes are, and it is stored raw, every line strict JSON."""
    answer = b'{"id": "a1", "result": {"png": "' + b"A" * (2 << 20) + b'", "scale": NaN}}'
    tap = _answered("view.capture", answer)
    (frame,) = [e for e in tap.events if isinstance(e, FrameSeen) and e.direction is Direction.S2C]
    assert frame.elided == 2 << 20
    for from_tap in (True, False):
        line = b"".join(frame_lines.encode_frame(frame, GOLEM, 3, from_tap=from_tap))
        data = decode_json(line)  # strict: NaN refused
        assert "raw" in data and "msg" not in data and "not finite" in data["note"]


def test_the_recorder_does_not_count_a_capture_s_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16 MiB viewport capture, its blob elided by the tap, is within a reader's budget by
    its lengths alone: the live recorder (``from_tap``) never counts its brackets, which
    would cost it ~5 ms an answer; a frame from elsewhere is measured."""
    answer = b'{"id": "a1", "result": {"image": "' + b"A" * (16 << 20) + b'"}}'
    tap = _answered("view.capture", answer)
    (frame,) = [e for e in tap.events if isinstance(e, FrameSeen) and e.direction is Direction.S2C]
    counted: list[int] = []
    real = frame_skeleton.parse_cost
    monkeypatch.setattr(
        frame_skeleton,
        "parse_cost",
        lambda text, over=None: counted.append(len(text)) or real(text, over),
    )
    frame_lines.encode_frame(frame, GOLEM, 3, from_tap=True)
    assert counted == []
    frame_lines.encode_frame(frame, GOLEM, 3, from_tap=False)
    assert counted == [len(answer)]


def test_a_long_text_beside_the_bulk_is_elided_so_that_the_skeleton_reads_alike() -> None:
    """A 9 MB log text in the envelope beside 18 MB of empty arrays: every skeleton that kept
    the text was too large, and the last resort, a bare string, typed the answer malformed.
    A long string is elided like a blob in the last steps, and the answer reads as the proxy
    read it."""
    grid = b"[" + b"[]," * 6_000_000 + b"[]]"
    answer = b'{"id": "a1", "success": true, "log": "%s", "result": {"grid": %s}}' % (
        b"word " * 1_800_000,
        grid,
    )
    tap = _answered("mesh.get_grid", answer)
    live = [e for e in tap.events if isinstance(e, ExchangeCompleted)]
    (back,) = [
        e
        for e in RecordingReader(io.BytesIO(write_recording(tap.events)))
        if isinstance(e, ExchangeCompleted)
    ]
    assert back.response.elided and isinstance(back.response.message, Response)
    assert back.outcome == live[0].outcome
