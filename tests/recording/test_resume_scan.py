"""`resume_points`: what a new observing process reads of the recording, backwards from its
end, before it records on the connections that were open when the old one died."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event
from golem_proxy.recording import resume_scan
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from golem_proxy.recording.resume_scan import ResumePoint, resume_points
from tests.support.frames import frame_seen
from tests.support.restarts import UNFINISHED, call, closed, opened

BIG = 20 << 20


def _request(conn: int, n: int, t: float, payload: bytes = b"") -> Event:
    """A notification (no answer wanted): a c2s frame line and nothing else."""
    body = payload or b'{"id": null, "method": "ping", "params": {}}'
    return frame_seen(GOLEM, Direction.C2S, n, body, conn=conn, t=t)


def _session() -> list[Event]:
    """1: long-lived, frames only c2s (one of them 20 MiB, mid-file); 2: never framed;
    3: closed, frames both ways; 4: frames both ways, still open."""
    big = b'{"id": null, "method": "ping", "params": {"blob": "' + b"x" * BIG + b'"}}'
    events: list[Event] = [opened(1, 0.1), opened(2, 0.2), _request(1, 0, 0.3)]
    events += [opened(3, 0.4), *call(3, 0, 0.5), *call(3, 1, 0.6), closed(3, 0.7)]
    events += [_request(1, 1, 0.8, big), opened(4, 0.9), *call(4, 0, 1.0)]
    events += [_request(1, n, 1.0 + n / 10) for n in range(2, 5)]
    events += [*call(4, 1, 1.6), *call(4, 2, 1.7)]
    return events


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    path = tmp_path_factory.mktemp("resume") / "recording.jsonl"
    with RecordingWriter.create(str(path), _header()) as writer:
        for event in _session():
            writer.write(event)
    with path.open("ab") as stream:
        stream.write(UNFINISHED)  # conn 1, s2c, n 7: cut short, so not in the file
    fd = os.open(path, os.O_RDWR)
    os.lseek(fd, 123, os.SEEK_SET)  # where a writer sharing it might have left it
    yield fd
    os.close(fd)


def _header(route: str = "main") -> Header:
    return Header(
        "golem", (RouteInfo(route, "127.0.0.1:1", "127.0.0.1:2"),), "2024-01-01T00:00:00Z"
    )


EXPECTED = {
    1: ResumePoint(True, (5, 0)),
    2: ResumePoint(True, (0, 0)),
    3: ResumePoint(True, (2, 2)),
    4: ResumePoint(True, (3, 3)),
    5: ResumePoint(False, (0, 0)),  # its open line is not in the file
}


def test_each_connection_is_where_the_file_leaves_it(recording: int) -> None:
    assert resume_points(recording, [1, 2, 3, 4, 5]) == EXPECTED
    assert os.lseek(recording, 0, os.SEEK_CUR) == 123  # read with pread only


@pytest.mark.parametrize("block", [1, 7, 4096, 1 << 20])
def test_the_answer_does_not_depend_on_the_block_size(recording: int, block: int) -> None:
    conns = [4, 2, 1] if block > 1 else [4]  # byte by byte: only what is near the end
    wanted = {conn: EXPECTED[conn] for conn in conns}
    assert resume_points(recording, conns, block=block) == wanted


def _reading(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes each `os.pread` of the scan asks for, as it reads."""
    asked: list[int] = []
    pread = os.pread

    def counted(fd: int, size: int, offset: int) -> bytes:
        asked.append(size)
        return pread(fd, size, offset)

    monkeypatch.setattr(resume_scan.os, "pread", counted)
    return asked


def test_it_stops_once_every_connection_asked_about_is_resolved(
    recording: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _reading(monkeypatch)
    # Connection 4's last frames both ways are in the last few KiB.
    assert resume_points(recording, [4], block=4096) == {4: EXPECTED[4]}
    assert sum(asked) <= 2 * 4096
    asked.clear()
    # Connection 1 sent nothing s2c: resolved at its open line, past the 20 MiB line.
    assert resume_points(recording, [1], block=1 << 20) == {1: EXPECTED[1]}
    size = os.fstat(recording).st_size
    # Once, and a line's first bytes again where a block's start cuts them.
    assert BIG < sum(asked) <= size + len(asked) * resume_scan.HEAD
    asked.clear()
    assert resume_points(recording, []) == {}
    assert asked == []


def test_a_route_name_longer_than_the_head_read_first(tmp_path: Path) -> None:
    route = 'r"\\' + "é" * resume_scan.HEAD  # escapes, and more bytes than the first look
    path = tmp_path / "long-route.jsonl"
    with RecordingWriter.create(str(path), _header(route)) as writer:
        writer.write(opened(1, 0.1))
        writer.write(frame_seen(GOLEM, Direction.S2C, 0, b'{"id": 1, "result": {}}', route=route))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert resume_points(fd, [1], block=64) == {1: ResumePoint(True, (0, 1))}
    finally:
        os.close(fd)


def test_a_file_of_its_header_only_or_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    RecordingWriter.create(str(path), _header()).close()
    for data in (path.read_bytes(), path.read_bytes()[:10], b""):
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert resume_points(fd, [1]) == {1: ResumePoint(False, (0, 0))}
        finally:
            os.close(fd)
