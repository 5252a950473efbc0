"""``golem-proxy mcp-verify`` on a recording that ends otherwise than a whole session: cut
short (the proxy stopped without closing it), with lines repeated, or where the server died in
the middle of a call. It says of the recording what every reader says, and never calls the
recording's end, nor the same death at the same call, a difference of the build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from tests.support.cli_helpers import run_cli

from .mcp_helpers import ROOT, SERVER_COMMAND, environment, recorded_session

STDERR_SERVER = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_stderr.py")]
CUT_SHORT = "the proxy stopped without closing this recording"


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded_session(tmp_path_factory.mktemp("recorded-end") / "session.jsonl")


def mcp_verify(*args: str, server: list[str] = SERVER_COMMAND) -> subprocess.CompletedProcess[str]:
    return run_cli("mcp-verify", *args, "--", *server, env=environment(COLUMNS="200"), timeout=120)


def _row(done: subprocess.CompletedProcess[str], tool: str) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith(tool + " "))


def _cut_before_last_answer(recording: Path, out: Path) -> str:
    """``recording`` cut at a line boundary just before its last tool call's answer, as a
    proxy stopped without closing its recording leaves it; returns the tool's name."""
    lines = recording.read_bytes().splitlines(keepends=True)
    events = [json.loads(line) for line in lines]
    last = max(
        (e for e in events if e.get("kind") == "frame" and e.get("method") == "tools/call"),
        key=lambda e: e["n"],
    )
    answer = next(
        at
        for at, e in enumerate(events)
        if e.get("kind") == "frame" and e.get("conn") == last["conn"]
        and e.get("answers") == last["n"]
    )  # fmt: skip
    out.write_bytes(b"".join(lines[:answer]))
    return str(last["msg"]["params"]["name"])


def test_a_call_the_file_ends_before_the_answer_of_is_the_recordings_end(
    recording: Path, tmp_path: Path
) -> None:
    """mcp-verify said nothing of the file cut short, and failed its last call as ``answered
    now, unanswered in the recording``, a difference of the build it is not."""
    cut = tmp_path / "cut.jsonl"
    tool = _cut_before_last_answer(recording, cut)
    shown = run_cli("show", str(cut), env=environment())
    note = next(line for line in shown.stderr.splitlines() if CUT_SHORT in line)
    done = mcp_verify(str(cut))
    assert done.returncode == 0, done.stdout + done.stderr
    row = _row(done, tool)
    assert "not compared" in row and "the recording ends before its answer (cut short)" in row
    assert "differs" not in done.stdout
    assert note in done.stderr.splitlines(), done.stderr
    report = json.loads(mcp_verify("--json", str(cut)).stdout)
    assert report["ok"] is True and report["differing"] == []
    assert report["notes"] == [note]


def test_lines_repeated_in_the_recording_are_said_as_every_reader_says_them(
    recording: Path, tmp_path: Path
) -> None:
    lines = recording.read_bytes().splitlines(keepends=True)
    repeated = tmp_path / "repeated.jsonl"
    repeated.write_bytes(b"".join([*lines[:12], lines[11], *lines[12:]]))
    shown = run_cli("show", str(repeated), env=environment())
    notes = [line for line in shown.stderr.splitlines() if line.startswith("note: ")]
    assert notes and "comes twice" in notes[0], shown.stderr
    done = mcp_verify(str(repeated))
    assert [line for line in done.stderr.splitlines() if line.startswith("note: ")] == notes


def _died_mid_call(record: Path) -> None:
    """``chatty``, then ``die_mid_call`` (the server is killed by SIGKILL as it runs), through
    ``golem-proxy mcp --record`` with the `mcp` client; no plugin behind (neither tool calls
    it)."""
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", "--record", str(record),
        "--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9", "--", *STDERR_SERVER,
    ]  # fmt: skip

    async def session() -> None:
        params = StdioServerParameters(command=command[0], args=command[1:], env=environment())
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.call_tool("chatty", {"lines": 1})
            with anyio.fail_after(30), pytest.raises(McpError, match="Connection closed"):
                await client.call_tool("die_mid_call", {})

    anyio.run(session)


def test_the_same_build_dying_at_the_same_call_failed_as_recorded(tmp_path: Path) -> None:
    """The server was killed during ``die_mid_call`` when recorded, and is again: nothing
    differs from the recording (the row said ``differs``). The run still fails: a recording
    of a server's death is one no build passes, and the row says the outcome is the
    recording's."""
    record = tmp_path / "died.jsonl"
    _died_mid_call(record)
    done = mcp_verify(str(record), server=STDERR_SERVER)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "match" in _row(done, "chatty")
    row = _row(done, "die_mid_call")
    assert "failed as recorded" in row and "differs" not in row
    assert "no answer: the server exited (status 137)" in row
    assert "the recorded server's output ended during this call too" in done.stdout
    assert "mcp-verify: 1 of 2 tool calls failed as recorded: die_mid_call" in done.stdout
    report = json.loads(mcp_verify("--json", str(record), server=STDERR_SERVER).stdout)
    assert report["ok"] is False and report["differing"] == []
    assert report["failed_as_recorded"] == ["die_mid_call"]
    died = next(check for check in report["checks"] if check["tool"] == "die_mid_call")
    assert died["as_recorded"] == "the recorded server's output ended during this call too"
