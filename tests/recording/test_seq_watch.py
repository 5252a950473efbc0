"""Line numbers (``seq``) watched as a recording is read: a jump or a step back is found once,
at its first place, and what good writers do is never taken for one."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

from golem_proxy.recording.format import RecordingError, RecordingReader, read_recording
from golem_proxy.recording.seq_watch import SeqJump, SeqWatch
from tests.replay.traces import modelling_session


def watched(*lines: tuple[Optional[int], str]) -> SeqWatch:
    watch = SeqWatch()
    for number, (seq, kind) in enumerate(lines, 2):
        watch.see(seq, kind, number)
    return watch


def test_numbers_in_order_are_no_jump() -> None:
    watch = watched((1, "open"), (2, "frame"), (3, "frame"), (4, "exchange"))
    assert (watch.first, watch.count) == (None, 0)


def test_a_gap_line_numbered_after_the_event_it_precedes_is_no_jump() -> None:
    # The recorder numbers an event before it finds it must first say how many it missed.
    middle = watched((35, "open"), (502, "gap"), (501, "open"), (503, "open"))
    at_the_end = watched((35, "open"), (501, "gap"))
    in_order = watched((35, "open"), (501, "gap"), (502, "open"))
    assert [w.first for w in (middle, at_the_end, in_order)] == [None, None, None]


def test_lines_without_a_number_are_not_counted() -> None:
    assert watched((1, "open"), (None, "frame"), (2, "frame")).first is None


def test_the_first_break_is_kept_and_every_one_counted() -> None:
    watch = watched((1, "open"), (2, "frame"), (9, "frame"), (10, "frame"), (4, "exchange"))
    assert watch.first == SeqJump(4, 2, 9)
    assert watch.count == 2
    assert watch.first.describe() == "seq jumps from 2 to 9 (6 lines lost or out of order)"
    assert SeqJump(5, 10, 4).describe() == "seq goes back from 10 to 4 (lines out of order)"
    assert (
        SeqJump(5, 3, 3).describe() == "seq 3 comes twice (a line repeated, or lines out of order)"
    )


def test_the_reader_says_where_lines_were_lost(tmp_path: Path) -> None:
    path = modelling_session(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:6] + lines[9:]))  # seq 6, 7 and 8 lost
    with open(path, "rb") as stream:
        reader = RecordingReader(stream)
        list(reader)
    assert reader.seq.first == SeqJump(7, 5, 9)


@pytest.mark.parametrize("seq", [b'"four"', b"-4", b"1.5", b"true"])
def test_a_seq_of_the_wrong_type_is_refused(tmp_path: Path, seq: bytes) -> None:
    path = modelling_session(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'{"seq":1,', b'{"seq":' + seq + b",")
    path.write_bytes(b"".join(lines))
    with pytest.raises(RecordingError, match=r"line 2: seq must be a whole number"):
        read_recording(str(path))
