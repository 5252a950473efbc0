"""``golem-proxy mcp-verify`` of a call the client cancelled in the recording: one the server
answered in full anyway (a tool that holds the server's loop reads the cancellation only
once it has answered) is compared like any other; one answered by the cancellation itself
(the SDK's "Request cancelled") or not at all is not (`test_mcp_verify.py`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli

from .mcp_helpers import SERVER_COMMAND, environment, recorded_session


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    calls = [("list_layers", {}), ("create_layer", {"name": "A"}), ("big_text", {"size": 10})]
    return recorded_session(tmp_path_factory.mktemp("cancelled") / "session.jsonl", calls)


def cancelled_but_answered(recording: Path, out: Path, *, text: str = "") -> str:
    """``recording`` with the client's ``notifications/cancelled`` for its last tool call
    written while it waited, its answer (a whole result) left after it; with ``text``, that
    answer's text replaced (a build that answers otherwise now). Returns the tool's name."""
    lines = recording.read_bytes().splitlines(keepends=True)
    events = [json.loads(line) for line in lines]
    asked = max(
        (e for e in events if e.get("kind") == "frame" and e.get("method") == "tools/call"),
        key=lambda e: e["n"],
    )
    conn = asked["conn"]
    notice = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": asked["msg"]["id"], "reason": "user"}}  # fmt: skip
    payload = json.dumps(notice, separators=(",", ":"))
    n = 1 + max(e["n"] for e in events if e.get("conn") == conn and e.get("dir") == "c2s")
    cancel = (
        f'{{"seq":{len(lines)},"t":{asked["t"] + 0.001},"kind":"frame","conn":{conn},'
        f'"route":"{asked["route"]}","dir":"c2s","n":{n},"size":{len(payload) + 1},'
        f'"type":"notification","method":"notifications/cancelled","msg":{payload}}}\n'
    )
    if text:
        for at, event in enumerate(events):
            if event.get("kind") == "frame" and event.get("answers") == asked["n"]:
                event["msg"]["result"]["content"][0]["text"] = text
                event["msg"]["result"].pop("structuredContent", None)
                lines[at] = json.dumps(event, separators=(",", ":")).encode() + b"\n"
    lines.insert(events.index(asked) + 1, cancel.encode())
    out.write_bytes(b"".join(lines))
    return str(asked["msg"]["params"]["name"])


def mcp_verify(record: Path) -> subprocess.CompletedProcess[str]:
    env = environment(COLUMNS="200")
    return run_cli("mcp-verify", str(record), "--", *SERVER_COMMAND, env=env, timeout=120)


def row_of(output: str, tool: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(tool))


def test_a_cancelled_call_answered_in_full_is_compared_and_matches(
    recording: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "cancelled-answered.jsonl"
    tool = cancelled_but_answered(recording, cut)
    shown = run_cli("show", str(cut), "--layer", "mcp", env=environment(COLUMNS="200"))
    assert "notifications/cancelled" in shown.stdout, shown.stdout + shown.stderr
    done = mcp_verify(cut)
    assert done.returncode == 0, done.stdout + done.stderr
    row = row_of(done.stdout, tool)
    assert "match" in row and "not compared" not in row
    assert "mcp-verify: all 3 tool calls match" in done.stdout


def test_a_cancelled_call_answered_otherwise_now_differs(recording: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cancelled-answered-otherwise.jsonl"
    tool = cancelled_but_answered(recording, cut, text="what the build answered then")
    done = mcp_verify(cut)
    assert done.returncode == 1, done.stdout + done.stderr
    row = row_of(done.stdout, tool)
    assert "differs" in row and "result.content[0].text ('what the build answered" in row
    assert f"1 of 3 tool calls differ: {tool}" in done.stdout
