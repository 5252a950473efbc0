"""The fast scanner refuses every line the reader refuses, with the reader's words: a line
its pattern does not take is read by the reader's own code, never dropped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from golem_proxy.recording.format import RecordingError, read_recording
from golem_proxy.recording.scan import scan_exchanges
from tests.replay.traces import modelling_session

Change = Callable[[bytes], bytes]


def _members(line: bytes) -> dict[str, object]:
    return dict(json.loads(line))


def _dumped(data: dict[str, object]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


# What happens to one line of a recording: each is refused by the reader.
DAMAGE: dict[str, Change] = {
    "zero-filled": lambda line: b"\x00" * (len(line) - 1) + b"\n",
    "torn": lambda line: line[: len(line) // 2] + b"\n",
    "not an object": lambda line: b"[1, 2]\n",
    "no kind": lambda line: _dumped({k: v for k, v in _members(line).items() if k != "kind"}),
    "kind not a string": lambda line: _dumped({**_members(line), "kind": 5}),
    "invalid UTF-8 in a name": lambda line: line.replace(b'"route":"main"', b'"route":"\xffm"'),
    "seq not a whole number": lambda line: line.replace(b'{"seq":', b'{"seq":"1', 1).replace(
        b',"t"', b'","t"', 1
    ),
}


def recording(tmp_path: Path) -> tuple[Path, list[bytes]]:
    path = modelling_session(tmp_path / "good.jsonl")
    return path, path.read_bytes().splitlines(keepends=True)


def damaged(tmp_path: Path, number: int, change: Change) -> Path:
    path, lines = recording(tmp_path)
    lines[number - 1] = change(lines[number - 1])
    path.write_bytes(b"".join(lines))
    return path


def refusal(read: Callable[[str], object], path: Path) -> str:
    with pytest.raises(RecordingError) as refused:
        read(str(path))
    return str(refused.value)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("number", [2, 3, 5], ids=["open", "request", "exchange"])
def test_a_damaged_line_is_refused_as_the_reader_refuses_it(
    tmp_path: Path, damage: str, number: int
) -> None:
    path = damaged(tmp_path, number, DAMAGE[damage])
    said = refusal(read_recording, path)
    assert said.startswith(f"{path}: line {number}: ")
    assert refusal(scan_exchanges, path) == said


FRAME_DAMAGE: dict[str, Change] = {
    "keys sorted": lambda line: (
        json.dumps(_members(line), sort_keys=True, separators=(",", ":")).encode() + b"\n"
    ),
    "msg twice": lambda line: line[:-2] + b',"msg":{"id":"x","method":"y"}}\n',
}


@pytest.mark.parametrize("damage", sorted(FRAME_DAMAGE))
def test_a_frame_whose_msg_is_not_last_or_twice_is_refused(tmp_path: Path, damage: str) -> None:
    for number in (3, 4):  # a request, an answer
        path = damaged(tmp_path, number, FRAME_DAMAGE[damage])
        assert refusal(read_recording, path) == f"{path}: line {number}: msg is not the last member"


def test_a_frame_in_another_member_order_is_refused_by_the_scanner(tmp_path: Path) -> None:
    # (A frame in the writer's layout with a second msg is the fast path's, refused when its
    # payload is decoded: tests/replay/test_index.py.)
    path = damaged(tmp_path, 3, FRAME_DAMAGE["keys sorted"])
    assert refusal(scan_exchanges, path) == f"{path}: line 3: msg is not the last member"


def test_lines_of_other_kinds_in_another_layout_are_read_not_skipped(tmp_path: Path) -> None:
    # Spaced JSON with its keys in another order: valid lines the pattern does not take.
    path, lines = recording(tmp_path)
    respaced = [lines[0]] + [
        json.dumps(_members(line), sort_keys=True).encode() + b"\n"
        if _members(line)["kind"] not in ("frame", "exchange")
        else line
        for line in lines[1:]
    ]
    path.write_bytes(b"".join(respaced))
    assert len(scan_exchanges(str(path)).rows) == len(read_recording(str(path)).exchanges())


def test_an_exchange_line_in_another_layout_is_paired(tmp_path: Path) -> None:
    path, lines = recording(tmp_path)
    lines[4] = json.dumps(_members(lines[4])).encode() + b"\n"  # spaced: not the fast path
    path.write_bytes(b"".join(lines))
    assert len(scan_exchanges(str(path)).rows) == 10


def test_blank_lines_are_skipped_as_the_reader_skips_them(tmp_path: Path) -> None:
    path, lines = recording(tmp_path)
    path.write_bytes(b"".join(line + b"\n  \n" for line in lines))
    assert len(scan_exchanges(str(path)).rows) == 10


def test_a_line_too_long_is_refused_as_the_reader_refuses_it(tmp_path: Path) -> None:
    path, lines = recording(tmp_path)
    long = lines[2].replace(b'"params": {}', b'"params": {"x": "' + b"a" * 3000 + b'"}')
    cases = {
        "in the writer's layout": [*lines[:2], long, *lines[3:]],
        "unfinished, last": [*lines, b'{"seq":99,' + b"x" * 3000],
    }
    for name, content in cases.items():
        path.write_bytes(b"".join(content))
        said = refusal(lambda p: read_recording(p, max_line=2000), path)
        assert "longer than 2000 bytes" in said, name
        assert refusal(lambda p: scan_exchanges(p, max_line=2000), path) == said, name


def _payload(line: bytes, payload: bytes) -> bytes:
    """``line`` (a frame in the writer's layout) with ``payload`` spliced in as its msg."""
    return line[: line.index(b',"msg":') + len(b',"msg":')] + payload + b"}\n"


def _nested(depth: int) -> bytes:
    return b'{"id": "x", "result": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


# What happens to a frame's payload in the writer's layout (the lines the scanner takes whole,
# payload unparsed): each is refused by the reader.
PAYLOAD_DAMAGE: dict[str, Change] = {
    "not JSON": lambda line: _payload(line, b'{"id": "x",}'),
    "msg twice": FRAME_DAMAGE["msg twice"],
    "invalid UTF-8": lambda line: _payload(line, b'{"id": "\xff"}'),
    "nested too deep": lambda line: _payload(line, _nested(256)),
}


@pytest.mark.parametrize("damage", sorted(PAYLOAD_DAMAGE))
@pytest.mark.parametrize(
    "number, alone",
    [(3, False), (4, False), (3, True)],
    ids=["request", "answer", "a frame taken alone"],
)
def test_a_damaged_payload_is_refused_at_load_as_the_reader_refuses_it(
    tmp_path: Path, damage: str, number: int, alone: bool
) -> None:
    path, lines = recording(tmp_path)
    lines[number - 1] = PAYLOAD_DAMAGE[damage](lines[number - 1])
    if alone:  # the exchange line spaced: its frames are taken one by one
        lines[4] = json.dumps(_members(lines[4])).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    said = refusal(read_recording, path)
    assert said.startswith(f"{path}: line {number}: ")
    assert refusal(scan_exchanges, path) == said


@pytest.mark.parametrize(
    "payload",
    [
        _nested(255),
        b'{"id": "x", "result": "\\ud800"}',  # a lone surrogate, as an escape
        b'{"id": "x", "result": 123456789012345678901234567890}',
        b'{"id": "x", "result": 1e999}',
        b'{"id": "x", "result": NaN}',  # a peer's JSON, as an older writer spliced it
    ],
    ids=["as deep as the reader takes", "lone surrogate", "long integer", "huge number", "NaN"],
)
def test_a_payload_the_reader_takes_is_taken(tmp_path: Path, payload: bytes) -> None:
    # JSON that orjson refuses and the reader reads: the reader's own reading decides.
    path, lines = recording(tmp_path)
    lines[3] = _payload(lines[3], payload)
    path.write_bytes(b"".join(lines))
    assert len(read_recording(str(path)).exchanges()) == 10
    assert len(scan_exchanges(str(path)).rows) == 10
