"""The ``session-end`` line: written last by a session that ended in order, read back as the
event it was, and what its presence or absence tells the views (a whole file, or one cut
short when the header promises it)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from golem_proxy.analysis.reading_notes import reading_notes
from golem_proxy.analysis.trace import open_flows
from golem_proxy.events import GapCount, SessionEnded
from golem_proxy.recording.format import (
    SESSION_END_PROMISE,
    Header,
    RecordingError,
    RecordingReader,
    RecordingWriter,
    read_recording,
)
from golem_proxy.recording.shared_file import RecordingFile, end_session, ends_with_session_end
from golem_proxy.replay.merge import append_recording
from tests.support.sessions import SessionBuilder, golem_header

ENDED = SessionEnded(
    t=2.5,
    reason="stopped by SIGINT",
    exchanges=1,
    errors=0,
    violations=0,
    unanswered=0,
    not_recorded=0,
)


def promising(header: Header) -> Header:
    return dataclasses.replace(header, extra={SESSION_END_PROMISE: True})


def _write(path: Path, header: Header, *, ended: bool, close: bool = True) -> None:
    s = SessionBuilder()
    s.open(1, 0.0)
    s.respond(s.request(1, "ping", {}, 0.1), 0.2, result={})
    if close:
        s.close(1, 0.3)
    with RecordingWriter.create(str(path), header) as writer:
        for event in s.events:
            writer.write(event)
        if ended:
            writer.write(ENDED)


def _notes(path: Path) -> list[str]:
    with open_flows(str(path)) as reader:
        for _ in reader.flows():
            pass
        return reading_notes(reader)


def test_the_line_is_written_last_and_read_back_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "ended.jsonl"
    _write(path, promising(golem_header()), ended=True)
    last = json.loads(path.read_bytes().splitlines()[-1])
    assert last == {
        "seq": 6,
        "t": 2.5,
        "kind": "session-end",
        "reason": "stopped by SIGINT",
        "exchanges": 1,
        "errors": 0,
        "violations": 0,
        "unanswered": 0,
        "not_recorded": 0,
    }
    recording = read_recording(str(path))
    assert recording.header.promises_session_end
    assert recording.events[-1] == ENDED
    with open(path, "rb") as stream:
        reader = RecordingReader(stream)
        list(reader)
        assert reader.ended == ENDED


def test_a_reader_that_does_not_know_the_kind_skips_it(tmp_path: Path) -> None:
    # What a reader written before the line does with it: a kind it does not know is skipped
    # (docs/recording-format.md), so the line reads as one of a newer writer's.
    path = tmp_path / "ended.jsonl"
    _write(path, promising(golem_header()), ended=True)
    lines = path.read_bytes().splitlines(keepends=True)
    renamed = lines[-1].replace(b'"session-end"', b'"a-later-kind"')
    path.write_bytes(b"".join(lines[:-1]) + renamed)
    recording = read_recording(str(path))
    assert not any(isinstance(e, SessionEnded) for e in recording.events)
    assert len(recording.events) == 5


def test_a_file_that_ends_with_it_is_whole_even_with_a_connection_open(tmp_path: Path) -> None:
    path = tmp_path / "ended.jsonl"
    _write(path, promising(golem_header()), ended=True, close=False)
    assert _notes(path) == []


def test_a_file_promising_it_and_without_it_was_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    _write(path, promising(golem_header()), ended=False)  # every connection closed
    assert _notes(path) == [
        f"note: {path}: the proxy stopped without closing this recording; the last 100 ms "
        "may be missing (no session-end line)"
    ]


def test_a_file_that_promises_nothing_is_judged_by_its_connections_as_before(
    tmp_path: Path,
) -> None:
    closed, left_open = tmp_path / "closed.jsonl", tmp_path / "open.jsonl"
    _write(closed, golem_header(), ended=False)
    _write(left_open, golem_header(), ended=False, close=False)
    assert _notes(closed) == []
    assert _notes(left_open) == [
        f"note: {left_open}: the proxy stopped without closing this recording; the last "
        "100 ms may be missing (1 connection never closed)"
    ]


def test_lines_after_the_end_need_an_end_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "more.jsonl"
    _write(path, promising(golem_header()), ended=True)
    with open(path, "ab") as stream:
        stream.write(b'{"seq":7,"t":3.0,"kind":"open","conn":2,"route":"main",')
        stream.write(b'"client":"127.0.0.1:1","upstream":"127.0.0.1:2"}\n')
    notes = _notes(path)
    assert len(notes) == 1
    assert notes[0].endswith("(no session-end line; 1 connection never closed)")


def test_the_forwarding_process_appends_it_after_an_unfinished_line(tmp_path: Path) -> None:
    path = tmp_path / "stopped.jsonl"
    record = RecordingFile.create(str(path))
    try:
        with RecordingWriter(open(record.write_fd, "wb", closefd=False), golem_header()) as w:
            s = SessionBuilder()
            s.open(1, 0.0)
            w.write(s.events[0])
        with open(path, "ab") as stream:
            stream.write(b'{"seq":2,"t":0.1,"kind":"fr')  # the observing process died here
        end_session(record, SessionEnded(t=4.0, reason="stopped by SIGTERM"))
    finally:
        record.close()
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[-1]) == {
        "seq": 2,
        "t": 4.0,
        "kind": "session-end",
        "reason": "stopped by SIGTERM",
    }
    assert read_recording(str(path)).events[-1] == SessionEnded(t=4.0, reason="stopped by SIGTERM")


def test_appended_episodes_end_with_the_end_of_theirs(tmp_path: Path) -> None:
    base, extra = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    _write(base, promising(golem_header()), ended=True)
    _write(extra, promising(golem_header()), ended=True)
    append_recording(str(base), str(extra))
    events = read_recording(str(base)).events
    ends = [e for e in events if isinstance(e, SessionEnded)]
    assert len(ends) == 2 and events[-1] is ends[-1]
    assert ends[-1].t > ends[0].t  # shifted as the episodes' other events are
    seqs = [json.loads(line)["seq"] for line in base.read_bytes().splitlines()[1:]]
    assert seqs == list(range(1, len(seqs) + 1))
    assert _notes(base) == []


def test_the_forwarding_process_tells_a_recording_ended_in_order(tmp_path: Path) -> None:
    """`ends_with_session_end`: the last complete line is the ``session-end`` line (an
    observing process that then exits with an error leaves a whole recording)."""
    path = tmp_path / "r.jsonl"
    record = RecordingFile.create(str(path))
    try:
        header = b'{"format":"golem-proxy-recording","version":2,"profile":"golem","routes":[]}\n'
        path.write_bytes(header)
        assert not ends_with_session_end(record)
        end_session(record, SessionEnded(t=1.0, reason="stopped by SIGINT"))
        assert ends_with_session_end(record)
        with open(path, "ab") as stream:
            stream.write(b'{"seq":2,"t":1.5,"kind":"open"')  # a line being written after it
        assert not ends_with_session_end(record)
    finally:
        record.close()


def test_the_gaps_in_what_was_observed_are_counted_as_check_counts_them(tmp_path: Path) -> None:
    path = tmp_path / "ended.jsonl"
    gaps = (
        GapCount(reason="behind", gaps=3, bytes=184552888),
        GapCount(reason="restarted", gaps=1, bytes=2560, bytes_at_least=True),
    )
    ended = dataclasses.replace(ENDED, unobserved=gaps)
    with RecordingWriter.create(str(path), promising(golem_header())) as writer:
        writer.write(ended)
    last = json.loads(path.read_bytes().splitlines()[-1])
    assert last["unobserved"] == {
        "gaps": 4,
        "bytes": 184555448,
        "bytes_at_least": True,
        "by_reason": {
            "behind": {"gaps": 3, "bytes": 184552888, "bytes_at_least": False},
            "restarted": {"gaps": 1, "bytes": 2560, "bytes_at_least": True},
        },
    }
    assert list(last)[-1] == "unobserved"  # after the counts, as the schema orders them
    assert read_recording(str(path)).events[-1] == ended


def test_a_line_without_gaps_or_from_before_them_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "ended.jsonl"
    _write(path, promising(golem_header()), ended=True)
    assert b"unobserved" not in path.read_bytes().splitlines()[-1]
    assert read_recording(str(path)).events[-1].unobserved == ()  # type: ignore[union-attr]


def test_a_bad_count_of_gaps_is_named(tmp_path: Path) -> None:
    path = tmp_path / "ended.jsonl"
    _write(path, promising(golem_header()), ended=True)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"not_recorded":0', b'"not_recorded":0,"unobserved":[3]')
    path.write_bytes(b"".join(lines))
    with pytest.raises(RecordingError, match="unobserved must be an object with by_reason"):
        read_recording(str(path))
