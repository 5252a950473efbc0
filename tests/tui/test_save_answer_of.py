"""A view the TUI saves (`w`) without the GOLEM exchange a tool call's ``answer_of`` names, or
the tool call a GOLEM frame's ``tool_calls`` names, says so in its header (``left_out``), so
that the copy is read, not refused as a file that lies (recording/answer_of_check.py,
recording/tool_call_check.py)."""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.events import FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.tui.export import save_events
from tests.recording.test_two_layer_members import ANSWER_OF, _session, _write
from tests.support.cli_helpers import run_cli


def test_a_view_without_the_exchange_an_answer_of_names_says_so_and_is_read(
    tmp_path: Path,
) -> None:
    session = _write(tmp_path, _session({"late": True}, {"answer_of": ANSWER_OF}))
    recording = read_recording(str(session))
    # The view of the tool call only (a filter on the MCP route): the GOLEM rows left out.
    events = [e for e in recording.events if getattr(e, "route", "mcp") == "mcp"]
    assert any(isinstance(e, FrameSeen) and e.answer_of is not None for e in events)
    copy = tmp_path / "view.jsonl"
    save_events(str(copy), recording.header, events, "")
    header = json.loads(copy.read_text(encoding="utf-8").splitlines()[0])
    assert header["left_out"] == "1 tool call returned the answer of a GOLEM exchange not in it"
    done = run_cli("show", "--json", str(copy))
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert row["answer_of"]["conn"] == 2 and row["answer_of"]["flow"] is None


def test_a_view_with_that_exchange_says_nothing_of_it(tmp_path: Path) -> None:
    session = _write(tmp_path, _session({"late": True}, {"answer_of": ANSWER_OF}))
    recording = read_recording(str(session))
    copy = tmp_path / "view.jsonl"
    save_events(str(copy), recording.header, recording.events, "")
    header = json.loads(copy.read_text(encoding="utf-8").splitlines()[0])
    assert "left_out" not in header
    assert run_cli("show", str(copy)).returncode == 0


def test_a_view_without_the_tool_call_golem_frames_name_says_so_and_is_read(
    tmp_path: Path,
) -> None:
    """The GOLEM rows alone (a view that left the MCP hop's out): their ``tool_calls`` name a
    call the copy lacks, which its header says, so it is read, not refused."""
    session = _write(tmp_path, _session({"late": True}, {}))
    recording = read_recording(str(session))
    events = [e for e in recording.events if getattr(e, "route", "main") == "main"]
    copy = tmp_path / "view.jsonl"
    save_events(str(copy), recording.header, events, "")
    header = json.loads(copy.read_text(encoding="utf-8").splitlines()[0])
    assert header["left_out"] == "2 GOLEM frames name tool calls not in it"
    done = run_cli("show", str(copy))
    assert done.returncode == 0, done.stderr
