"""`in_flight`: the requests a recording shows in flight on the connections a new observing
process takes up, read backwards from the file's end, a line's first members only, the lines
found decoded as the reader decodes them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem_core.profiles import GOLEM, JSONRPC_NDJSON
from golem_proxy.events import Direction, FrameSeen
from golem_proxy.recording import inflight_scan
from golem_proxy.recording.format import read_recording
from golem_proxy.recording.inflight_scan import InFlight, in_flight
from tests.support.restarts import TappedSession

C2S, S2C = Direction.C2S, Direction.S2C
CANCELLED = "notifications/cancelled"


def _golem(ident: Any, method: str = "echo", **params: Any) -> bytes:
    return json.dumps({"id": ident, "method": method, "params": params}).encode()


def _answer(ident: Any) -> bytes:
    return json.dumps({"id": ident, "result": {}, "error": None}).encode()


def _rpc(**members: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **members}).encode()


def _frames(path: Path) -> dict[tuple[int, str, int], FrameSeen]:
    """Every frame of the recording, as the reader reads it, by connection, direction, n."""
    return {
        (event.conn, event.direction.value, event.index): event
        for event in read_recording(str(path)).events
        if isinstance(event, FrameSeen)
    }


def _scan(path: Path, conns: dict[int, Any], **options: Any) -> dict[int, InFlight]:
    fd = os.open(path, os.O_RDWR)
    try:
        os.lseek(fd, 7, os.SEEK_SET)  # where a writer sharing it might have left it
        found = in_flight(fd, conns, **options)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 7  # read with pread only
    finally:
        os.close(fd)
    return found


CUT = (
    b'{"seq":99,"t":9.5,"kind":"frame","conn":1,"route":"main","dir":"c2s","n":4,"size":50,'
    b'"type":"request","id":"cut","method":"echo","expects_answer":true,"msg":{"id": "cu'
)
"""A request line of connection 1 cut short in its message: not in the file."""


@pytest.fixture(scope="module")
def golem_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """1: a1 and a3 answered, a2 and a4 not (a4 with a large params member); 2: every request
    answered; 3: opened, never framed; 4: a request in flight, then a 20 MiB answer of the
    request after it. A request of 1 cut short in its message ends the file."""
    path = tmp_path_factory.mktemp("inflight") / "golem.jsonl"
    session = TappedSession(path)
    for conn in (1, 2, 3, 4):
        session.open(conn)
    session.send(1, C2S, _golem("a1"), _golem("a2"))
    session.send(2, C2S, _golem(1))
    session.send(1, S2C, _answer("a1"))
    session.send(1, C2S, _golem("a3"), _golem("a4", blob="x" * 300_000))
    session.send(2, S2C, _answer(1))
    session.send(4, C2S, _golem("slow"), _golem("big"))
    session.send(1, S2C, _answer("a3"))
    big = json.dumps({"id": "big", "result": {"blob": "y" * (20 << 20)}, "error": None})
    session.send(4, S2C, big.encode())
    session.close()
    with path.open("ab") as stream:  # its start whole, its message cut by the death
        stream.write(CUT)
    yield path


def test_the_requests_in_flight_are_those_no_later_line_answers(golem_session: Path) -> None:
    frames = _frames(golem_session)
    found = _scan(golem_session, {1: GOLEM, 2: GOLEM, 3: GOLEM, 4: GOLEM})
    assert found == {
        1: InFlight((frames[1, "c2s", 1], frames[1, "c2s", 3]), (), whole=True),
        2: InFlight(whole=True),
        3: InFlight(whole=True),
        4: InFlight((frames[4, "c2s", 0],), (), whole=True),
    }
    assert [frame.message.id for frame in found[1].frames] == ["a2", "a4"]


@pytest.mark.parametrize("block", [1, 7, 4096, 1 << 20])
def test_the_answer_does_not_depend_on_the_block_size(tmp_path: Path, block: int) -> None:
    path = tmp_path / "blocks.jsonl"
    session = TappedSession(path)
    session.open(1)
    session.open(2)
    session.send(1, C2S, _golem("a1"), _golem("a2", blob="x" * 5000), _golem("a3"))
    session.send(2, C2S, _golem("b1"))
    session.send(1, S2C, _answer("a1"), _answer("a3"))
    session.send(2, S2C, _answer("b1"))
    session.close()
    whole = _scan(path, {1: GOLEM, 2: GOLEM})
    assert [frame.message.id for frame in whole[1].frames] == ["a2"]
    assert _scan(path, {1: GOLEM, 2: GOLEM}, block=block) == whole
    # Past the connections its expression names, the scan finds the same.
    many = _scan(path, dict.fromkeys(range(1, 101), GOLEM), block=block)
    assert {conn: many[conn] for conn in (1, 2)} == whole
    assert many[3] == InFlight() and len(many) == 100


def test_a_huge_line_is_searched_through_never_decoded(
    golem_session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[int] = []
    decode = inflight_scan.LineDecoder.decode

    def counting(self: Any, line: bytes) -> Any:
        decoded.append(len(line))
        return decode(self, line)

    monkeypatch.setattr(inflight_scan.LineDecoder, "decode", counting)
    found = _scan(golem_session, {4: GOLEM})
    assert [frame.message.id for frame in found[4].frames] == ["slow"]
    assert len(decoded) == 1 and decoded[0] < 1000


def test_a_request_line_too_long_to_decode_is_known_by_its_id(
    golem_session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inflight_scan, "READ_LIMIT", 200_000)
    found = _scan(golem_session, {1: GOLEM}, block=4096)[1]
    assert [frame.message.id for frame in found.frames] == ["a2"]
    assert found.unread == ((C2S, "a4"),)


def test_the_scan_goes_back_no_further_than_its_bounds(golem_session: Path) -> None:
    # The last 20 MiB answer's line alone is more than 1 MiB: the scan stops after it.
    assert _scan(golem_session, {1: GOLEM}, look_back=1 << 20) == {1: InFlight()}


@pytest.mark.parametrize("bound", ["look_back", "look_back_frames"])
def test_a_request_beyond_the_bounds_is_not_found(tmp_path: Path, bound: str) -> None:
    path = tmp_path / "bounds.jsonl"
    session = TappedSession(path)
    session.open(1)
    session.send(1, C2S, _golem("old"), *(_golem(n) for n in range(100)), _golem("new"))
    session.send(1, S2C, *(_answer(n) for n in range(100)))
    session.close()
    frames = _frames(path)
    every = _scan(path, {1: GOLEM}, block=256)[1]
    assert every == InFlight((frames[1, "c2s", 0], frames[1, "c2s", 101]), (), whole=True)
    # Back over the 100 answers, "new" and half the requests (in blocks of 256 bytes).
    data = path.read_bytes()
    bounds = {"look_back": len(data) - data.index(b'"id":50,'), "look_back_frames": 150}
    found = _scan(path, {1: GOLEM}, block=256, **{bound: bounds[bound]})[1]
    assert found == InFlight((frames[1, "c2s", 101],), (), whole=False)


def test_ids_of_every_json_type_are_read_back(tmp_path: Path) -> None:
    idents: list[Any] = ["s", 'é"\\/\n☃\u2028', "", 0, -1, 2**53 + 1, 1.5]
    idents += [True, None, [1], {"a": 1}]
    path = tmp_path / "ids.jsonl"
    session = TappedSession(path)
    session.open(1)
    session.send(1, C2S, *(_golem(ident) for ident in idents))
    session.send(1, C2S, b'{"method": "no id"}')
    session.close()
    frames = _frames(path)
    [found] = _scan(path, {1: GOLEM}).values()
    assert found.frames == tuple(frames[1, "c2s", n] for n in range(len(idents) + 1))
    assert [frame.message.id for frame in found.frames] == [
        frames[1, "c2s", n].message.id for n in range(len(idents) + 1)
    ]
    lines = [json.loads(line) for line in path.read_bytes().splitlines()[1:]]
    written = [line.get("id") for line in lines if line["kind"] == "frame"]
    assert written[:6] == idents[:6] and written[6:] == [None] * 6  # malformed: no id
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inflight_scan, "READ_LIMIT", 10)  # none decoded: each known by its id
        [unread] = _scan(path, {1: GOLEM}).values()
    assert unread.frames == ()
    assert unread.unread == tuple((C2S, ident) for ident in written)


def test_requests_both_ways_and_the_notifications_asked_about(tmp_path: Path) -> None:
    """A JSON-RPC server asks too: its requests are in flight until the client answers; a
    notification is never in flight, and one of a method asked about comes back when it
    follows a request in flight."""
    path = tmp_path / "rpc.jsonl"
    session = TappedSession(path, JSONRPC_NDJSON)
    session.open(1)
    cancel = _rpc(method=CANCELLED, params={"requestId": 1})
    session.send(1, C2S, cancel, _rpc(id=1, method="a"), _rpc(id=2, method="b"))
    session.send(1, S2C, _rpc(id=101, method="roots/list"), _rpc(id=102, method="ping"))
    session.send(1, S2C, _rpc(method="tick"), _rpc(id=2, result={}))
    session.send(1, C2S, _rpc(id=101, result={}), cancel, _rpc(method="tick"))
    session.close()
    frames = _frames(path)
    found = _scan(path, {1: JSONRPC_NDJSON}, methods=[CANCELLED])[1]
    assert found.frames == (
        frames[1, "c2s", 1],  # a (b is answered)
        frames[1, "s2c", 1],  # the server's ping (roots/list is answered)
        frames[1, "c2s", 4],  # the cancellation after them (not the one before)
    )
    assert [frame.expects_answer for frame in found.frames] == [True, True, False]
    assert _scan(path, {1: JSONRPC_NDJSON})[1].frames == found.frames[:2]


def test_a_redacted_request_comes_back_as_it_was_recorded(tmp_path: Path) -> None:
    path = tmp_path / "redacted.jsonl"
    session = TappedSession(path, redact=["params.secret", "id"])
    session.open(1)
    session.send(1, C2S, _golem("a1", secret="hunter2"), _golem("a2", secret="hunter3"))
    session.close()
    assert b"hunter" not in path.read_bytes()
    [found] = _scan(path, {1: GOLEM}).values()
    assert found.frames == tuple(_frames(path).values())
    assert [frame.redacted for frame in found.frames] == [("params.secret", "id")] * 2
    assert {frame.message.id for frame in found.frames} == {"«redacted»"}


def _hostile(tmp_path: Path, middle: bytes) -> Path:
    """Requests q1 and q3 of connection 1, the line ``middle`` (numbered after q1) between
    them."""
    path = tmp_path / "hostile.jsonl"
    session = TappedSession(path)
    session.open(1)
    session.send(1, C2S, _golem("q1"))
    session.writer.flush()
    session.writer.write_pieces([middle])
    session.writer.seq += 1
    session.send(1, C2S, _golem("q3"))
    session.close()
    return path


def test_a_line_whose_start_cannot_be_read_ends_the_scan_of_its_connection(
    tmp_path: Path,
) -> None:
    line = b'{"seq":3,"t":0.5,"kind":"frame","conn":1,"route":"main","dir":"up","n":1,"msg":{}}\n'
    path = _hostile(tmp_path, line)
    # q1 may be answered by the line that cannot be read: only q3 is taken.
    assert [f.message.id for f in _scan(path, {1: GOLEM})[1].frames] == ["q3"]
    assert not _scan(path, {1: GOLEM})[1].whole


def test_a_damaged_request_line_is_known_by_its_id(tmp_path: Path) -> None:
    line = (
        b'{"seq":3,"t":0.5,"kind":"frame","conn":1,"route":"main","dir":"c2s","n":1,'
        b'"size":9,"type":"request","id":"q2","method":"echo","expects_answer":true,"msg":{]}\n'
    )
    path = _hostile(tmp_path, line)
    found = _scan(path, {1: GOLEM})[1]
    assert [frame.message.id for frame in found.frames] == ["q1", "q3"]
    assert found.unread == ((C2S, "q2"),) and found.whole


def test_what_a_message_says_of_itself_is_never_taken_for_the_line(tmp_path: Path) -> None:
    # An answer whose message holds what a frame line's start holds (a recording sent as
    # data): only the members before ``msg`` say what the line is.
    inner = (
        '{"seq":9,"t":1,"kind":"frame","conn":1,"route":"main","dir":"s2c","n":0,"size":1,'
        '"type":"response","answers":0,"expects_answer":true,"msg":{}}'
    )
    path = tmp_path / "quoted.jsonl"
    session = TappedSession(path)
    session.open(1)
    session.send(1, C2S, _golem("q1", line="\n" + inner), _golem("q2"))
    session.send(1, S2C, b'{"id": "nobody", "result": %s, "error": null}' % inner.encode())
    session.close()
    found = _scan(path, {1: GOLEM})[1]
    assert [frame.message.id for frame in found.frames] == ["q1", "q2"]


def test_a_line_start_longer_than_is_kept_across_blocks_ends_the_scan(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    session = TappedSession(path)
    session.open(1)
    session.send(1, C2S, _golem("q1"), _golem("q2", method="m" * 100_000), _golem("q3"))
    session.close()
    # Whole in a block, the long start is read: every request is found.
    assert [f.message.id for f in _scan(path, {1: GOLEM})[1].frames] == ["q1", "q2", "q3"]
    # Across blocks, only the kept 64 KiB of it: the scan of connection 1 stops there.
    found = _scan(path, {1: GOLEM}, block=4096)[1]
    assert [frame.message.id for frame in found.frames] == ["q3"] and not found.whole
