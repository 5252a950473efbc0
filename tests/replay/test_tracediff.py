"""The diff of two traces says which of them a damaged payload is in: A or B, with its file,
in the reader's words (a payload is decoded when compared; it can only be damaged then if the
file changed after it was loaded and checked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from golem_proxy.commands import diff as diff_command
from golem_proxy.recording.format import RecordingError, read_recording
from golem_proxy.replay.diffing import Comparator
from golem_proxy.replay.index import ExchangeTrace, load_exchanges
from golem_proxy.replay.tracediff import DamagedTrace, diff_traces
from tests.support.cli_helpers import run_main

from .traces import modelling_session

REQUEST_LINE = 3


def damage_in_place(path: Path) -> str:
    """Make the first request's payload invalid JSON without changing the file's size (a
    loaded trace maps the file, so it sees the change); returns what the reader says of it."""
    lines = path.read_bytes().splitlines(keepends=True)
    line = lines[REQUEST_LINE - 1]
    at = sum(map(len, lines[: REQUEST_LINE - 1])) + line.index(b',"msg":{') + len(b',"msg":')
    with open(path, "r+b") as stream:
        stream.seek(at)
        stream.write(b"[")  # the payload's opening brace: ``[…}`` is no JSON
    with pytest.raises(RecordingError) as read:
        read_recording(str(path))
    return str(read.value)


@pytest.mark.parametrize("side", [0, 1], ids=["A", "B"])
def test_a_payload_damaged_after_loading_names_its_trace(tmp_path: Path, side: int) -> None:
    paths = [modelling_session(tmp_path / name) for name in ("a.jsonl", "b.jsonl")]
    traces = [load_exchanges(str(path)) for path in paths]
    try:
        said = damage_in_place(paths[side])
        with pytest.raises(DamagedTrace) as damaged:
            diff_traces(traces[0], traces[1], Comparator())
    finally:
        for trace in traces:
            trace.close()
    assert damaged.value.side == side
    assert str(damaged.value.error) == said
    assert said.startswith(f"{paths[side]}: line {REQUEST_LINE}: not JSON")


@pytest.mark.parametrize("side", [0, 1], ids=["A", "B"])
def test_the_diff_command_says_which_trace_and_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], side: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [modelling_session(tmp_path / name) for name in ("a.jsonl", "b.jsonl")]
    loaded: list[ExchangeTrace] = []
    said: list[str] = []

    def load_then_damage(name: str, **options: Any) -> ExchangeTrace:
        trace = load_exchanges(name, **options)
        loaded.append(trace)
        if len(loaded) == 2:  # both loaded (and checked): one changes on disk
            said.append(damage_in_place(paths[side]))
        return trace

    monkeypatch.setattr(diff_command, "load_exchanges", load_then_damage)
    code, _, err = run_main(capsys, "diff", *map(str, paths))
    assert code == 2
    assert err == f"golem-proxy: trace {'AB'[side]}, {said[0]}\n"
