"""The TUI's fast load path (`golem_proxy.recording.fast_reader`) reads exactly what the exact
reader reads: the same events, the same error naming the same line, the same incomplete tail,
for well-formed traces of every shape and for traces damaged or unusual in every way the fast
pattern must refuse to decide."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from golem_proxy.events import Event
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.format import RecordingError, RecordingReader
from golem_proxy.recording.samples import samples
from tests.recording.tapped_traces import exchanges, notifications
from tests.recording.test_v1_pairing import as_version_1, mixed
from tests.support.sessions import bulk_session, demo_session, write_recording

Read = tuple[list[Event], Optional[str], bool]


def read(path: Path, reader: type[RecordingReader], **options: Any) -> Read:
    """The events read up to the end or to an error, the error, and whether the last line
    was incomplete."""
    with open(path, "rb") as stream:
        opened = reader(stream, **options)
        events: list[Event] = []
        try:
            events.extend(opened)
        except RecordingError as exc:
            return events, str(exc), opened.truncated_tail
        return events, None, opened.truncated_tail


def assert_same(path: Path, **options: Any) -> Read:
    """Both readers read ``path`` alike: equal events, and equal to the letter (-0.0 equals
    0.0, but does not print as it)."""
    exact = read(path, RecordingReader, **options)
    fast = read(path, FastRecordingReader, **options)
    assert fast == exact, path.name
    assert repr(fast) == repr(exact), path.name
    return exact


def _bulk(tmp_path: Path, exchanges_count: int = 60) -> Path:
    path = tmp_path / "bulk.jsonl"
    write_recording(str(path), bulk_session(exchanges_count))
    return path


def test_well_formed_traces_read_the_same(tmp_path: Path) -> None:
    demo = tmp_path / "demo.jsonl"
    write_recording(str(demo), demo_session())
    bulk = _bulk(tmp_path, 2000)
    traces = [
        demo,
        bulk,
        as_version_1(bulk, tmp_path / "v1.jsonl"),
        mixed(tmp_path / "mixed.jsonl"),
        notifications(tmp_path / "notes.jsonl", 300),
        exchanges(tmp_path / "exchanges.jsonl", 300),
        *samples().values(),
    ]
    for trace in traces:
        events, error, truncated = assert_same(Path(trace))
        assert events and error is None and not truncated, trace


def test_a_trace_larger_than_a_block_reads_the_same(tmp_path: Path) -> None:
    """Lines cut by the end of a block are read whole with the next one."""
    bulk = _bulk(tmp_path, 6000)
    assert bulk.stat().st_size > 2 * (1 << 20)
    events, _, _ = assert_same(bulk)
    assert len(events) == 4 + 3 * 6000


# Each edit changes one line of a bulk trace (the 40th exchange's request frame, its answer,
# or its exchange line), or adds lines before it.
def _request(lines: list[bytes]) -> int:
    found = [i for i, line in enumerate(lines) if b'"dir":"c2s"' in line]
    return found[40]


def _sub(pattern: bytes, new: bytes, offset: int = 0) -> Callable[[list[bytes]], None]:
    def edit(lines: list[bytes]) -> None:
        at = _request(lines) + offset
        changed = re.sub(pattern, new, lines[at], count=1)
        assert changed != lines[at], pattern
        lines[at] = changed

    return edit


def _insert(*new: bytes, offset: int = 0) -> Callable[[list[bytes]], None]:
    def edit(lines: list[bytes]) -> None:
        at = _request(lines) + offset
        lines[at:at] = list(new)

    return edit


def _repeat_request(lines: list[bytes]) -> None:
    at = _request(lines)
    lines.insert(at, lines[at])


OTHER_LINES = (
    b'{"seq":90,"t":0.04,"kind":"intercept","conn":1,"route":"main","dir":"c2s","step":"held",'
    b'"detail":"","method":"ping","withheld":false}',
    b'{"seq":91,"t":0.04,"kind":"fault","conn":1,"route":"main","dir":"s2c","fault":"delay",'
    b'"detail":"50 ms","method":"ping","withheld":false}',
    b'{"seq":92,"t":0.04,"kind":"gap","missed":3,"consumer":"recorder"}',
    b'{"seq":93,"t":0.04,"kind":"a-kind-from-a-newer-writer","conn":1}',
    b"",
)
_PARAMS = rb'"params": \{'
_EXPECTS = b',"expects_answer":true'


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


EDITS: dict[str, Callable[[list[bytes]], None]] = {
    "other kinds of line and a blank one": _insert(*OTHER_LINES),
    "a violation between the frames": _insert(
        b'{"seq":94,"t":0.04,"kind":"violation","conn":1,"route":"main","dir":"c2s","frame":40,'
        b'"rule":"R","message":"m","path":"$","severity":"warning"}',
        offset=1,
    ),
    "a broken line": _insert(b'{"seq":95,"t":0.04,"kind":"frame",'),
    "a number with a leading zero": _sub(rb'"n":(\d+)', rb'"n":0\1'),
    "a time of minus zero": _sub(rb'"t":[^,]*', b'"t":-0'),
    "a time of minus zero as a float": _sub(rb'"t":[^,]*', b'"t":-0.0'),
    "a number too large": _sub(rb'"size":(\d+)', rb'"size":99999999999999999'),
    "NaN in a payload": _sub(_PARAMS, b'"params": {"x": NaN, '),
    "a control character in a route": _sub(b'"route":"main"', b'"route":"ma\x01in"'),
    "invalid UTF-8 in a payload": _sub(b'"Default"', b'"Def\xffault"'),
    "a payload nested too deep": _sub(_PARAMS, b'"params": ' + _nested(300) + b', "p": {'),
    "a payload nested deep but allowed": _sub(_PARAMS, b'"params": ' + _nested(200) + b', "p": {'),
    "two values where the payload is": _sub(rb"\}\}$", b'}},"msg":{"id":1}}'),
    "whitespace around a payload": _sub(rb'"msg":\{', b'"msg": {'),
    "tool calls on a frame": _sub(_EXPECTS, b',"tool_calls":[]' + _EXPECTS),
    "a redacted frame": _sub(_EXPECTS, _EXPECTS + b',"redacted":[]'),
    "a non-ASCII method": _sub(b'"method":"', "\"method\":\"é".encode()),
    "garbage after an exchange line": _sub(rb"\}$", b"}x", offset=2),
    "an exchange line in another layout": _sub(b'"status":', b'"note":1,"status":', offset=2),
    "an answer to another request": _sub(rb'"answers":\d+', b'"answers":7', offset=1),
    "a request that expects no answer": _sub(_EXPECTS, b""),
    "a request number seen before": _repeat_request,
    "a line longer than allowed": _sub(_PARAMS, b'"params": {"pad": "' + b"x" * 5000 + b'", '),
}  # fmt: skip


@pytest.mark.parametrize("name", list(EDITS))
def test_an_unusual_or_damaged_trace_reads_the_same(tmp_path: Path, name: str) -> None:
    lines = _bulk(tmp_path).read_bytes().split(b"\n")
    EDITS[name](lines)
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(b"\n".join(lines))
    assert_same(edited, max_line=4000)


def test_line_endings_and_an_incomplete_tail_read_the_same(tmp_path: Path) -> None:
    data = _bulk(tmp_path).read_bytes()
    header, _, body = data.partition(b"\n")
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(header + b"\n" + body.replace(b"\n", b"\r\n"))
    assert assert_same(crlf)[1] is None
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: data.rfind(b"\n", 0, -1) + 40])
    assert assert_same(cut)[2]
    long_tail = tmp_path / "long-tail.jsonl"
    long_tail.write_bytes(data + b'{"seq":1,' + b"x" * 5000)
    assert "longer than" in (assert_same(long_tail, max_line=4000)[1] or "")


def test_only_other_lines_are_left_to_the_exact_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk trace's exchanges are all taken the fast way: the exact reader gets its
    connections' open lines and the lines among them of other kinds, no more."""
    lines = _bulk(tmp_path, 500).read_bytes().split(b"\n")
    lines[5 + 3 * 100 : 5 + 3 * 100] = list(OTHER_LINES)  # between two exchanges
    mingled = tmp_path / "mingled.jsonl"
    mingled.write_bytes(b"\n".join(lines))
    handed: list[bytes] = []
    exact = FastRecordingReader._exact

    def counted(
        reader: FastRecordingReader, data: bytes, start: int, end: Optional[int] = None
    ) -> Any:
        handed.append(data[start:end])
        return exact(reader, data, start, end)

    monkeypatch.setattr(FastRecordingReader, "_exact", counted)
    events, error, _ = assert_same(mingled)
    assert error is None and len(events) == 4 + 3 * 500 + 3  # the blank and newer kind: none
    assert sum(data.count(b"\n") for data in handed) == 4 + len(OTHER_LINES)
