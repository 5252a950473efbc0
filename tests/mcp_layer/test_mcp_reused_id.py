"""A client that sends a ``tools/call`` id again while the first call with it is in flight (a
protocol violation): which call each answer belongs to cannot be known, and nothing says
otherwise. The tap decides it once as it pairs (each answer with the id ambiguous among the
calls that shared it; the second request a violation of ``mcp.request.id-unique``), and every
view reads that decision: ``show`` marks both calls ``ambiguous`` with no latency, the GOLEM
frames made while either call could be running are ambiguous between the two (not outside
every call), and the live closing line counts the violation ``check`` reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from golem_proxy.events import FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import reap, run_cli

from .mcp_helpers import INITIALIZE, ROOT, environment, rpc_line, wrapped

SERVER = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "reused_id_server.py")]


def tool_call(ident: int, name: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": name, "arguments": arguments}
    return rpc_line({"id": ident, "method": "tools/call", "params": params})


def record_reused_id(record: Path) -> str:
    """The tester's session: id 5 for a call that reaches GOLEM after 0.5 s, then id 5 again
    for one that only sleeps 0.1 s (its answer comes first). Returns the wrapper's stderr."""
    with PluginProcess(seed=1) as plugin:
        process = subprocess.Popen(
            wrapped(plugin, record, server=SERVER),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=environment(),
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 0
            process.stdin.write(
                rpc_line({"method": "notifications/initialized"})
                + tool_call(5, "golem_after", {"delay": 0.5})
                + tool_call(5, "sleep_only", {"seconds": 0.1})
            )
            process.stdin.flush()
            texts = [json.loads(process.stdout.readline())["result"] for _ in range(2)]
            assert texts[0]["content"][0]["text"] == "slept"  # the second call's, first
            process.stdin.close()
            process.stdin = None  # closed: communicate has nothing to send
            _, stderr = process.communicate(timeout=60)
            assert process.returncode == 0, stderr
        finally:
            reap(process)
            process.stdout.close()
    return stderr.decode()


def test_answers_to_a_reused_id_are_ambiguous_in_every_view(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    stderr = record_reused_id(record)

    # The decision, as recorded: both answers name both requests; the second request is the
    # violation; the GOLEM frames made meanwhile name both calls.
    events = read_recording(str(record)).events
    frames = [e for e in events if isinstance(e, FrameSeen)]
    calls = [f for f in frames if f.route == "mcp" and f.method == "tools/call"]
    assert len(calls) == 2
    indexes = tuple(f.index for f in calls)
    answers = [f for f in frames if f.route == "mcp" and f.answers in indexes]
    assert [f.answers_ambiguous for f in answers] == [indexes, indexes]
    golem = [f for f in frames if f.route == "main"]
    assert golem
    for frame in golem:
        assert [c.tool for c in frame.tool_calls or ()] == ["golem_after", "sleep_only"]

    # show: neither call is presented with an answer of its own.
    done = run_cli("show", "--json", str(record), env=environment())
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    tool_rows = [r for r in rows if r.get("tool") in ("golem_after", "sleep_only")]
    assert [(r["status"], r["latency_ms"]) for r in tool_rows] == [("ambiguous", None)] * 2
    numbers = sorted(r["number"] for r in tool_rows)
    golem_rows = [r for r in rows if r.get("layer") == "golem"]
    assert golem_rows
    for row in golem_rows:
        assert row["attribution"] == "ambiguous", row
        assert sorted(row["tool_call_candidates"]) == numbers
    table = run_cli("show", str(record), env=environment()).stdout
    assert table.count("ambiguous") >= 2, table

    # check and the live closing line count the same violation.
    done = run_cli("check", "--json", str(record), env=environment())
    found = {group["rule"]: len(group["findings"]) for group in json.loads(done.stdout)["rules"]}
    assert found.get("mcp.request.id-unique") == 1, found
    closing = [line for line in stderr.splitlines() if line.startswith("golem-proxy mcp:")]
    assert len(closing) == 1, stderr
    assert "1 violation)" in closing[0] or "1 violation;" in closing[0], closing
    assert "2 answers ambiguous" in closing[0], closing
