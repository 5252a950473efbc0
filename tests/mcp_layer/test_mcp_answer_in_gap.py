"""A tool result over ``--observe-frame-limit`` is an answer all the same: the tap reads its id
from its ends, so the call reads answered (its outcome unknown), never unanswered, and the GOLEM
frames of the calls after it are theirs alone, in either observer mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem_proxy.events import FrameSeen, GapReason, ObservationLost
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import cli_env, run_cli

from .mcp_helpers import call_tools, environment, wrapped

ANSWERED = "answered (unobserved:frame-too-large)"
CALLS = [
    ("create_layer", {"name": "A"}),
    ("big_text", {"size": 200_000}),
    ("create_layer", {"name": "B"}),
    ("list_layers", {}),
]


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_result_too_large_to_observe_answers_its_call(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "r.jsonl"
    options = ("--observe-frame-limit", "0.05", "--observer", observer)
    with PluginProcess(seed=5) as plugin:
        outcomes = call_tools(wrapped(plugin, record, *options), environment(), CALLS)
    assert [failed for failed, _ in outcomes] == [False] * 4
    assert len(outcomes[1][1][0]["text"]) == 200_000  # the client got it whole

    events = read_recording(str(record)).events
    calls = {
        e.message.params["name"] + str(e.message.params["arguments"]): e.index
        for e in events
        if isinstance(e, FrameSeen) and e.route == "mcp" and e.method == "tools/call"
    }
    gaps = [e for e in events if isinstance(e, ObservationLost)]
    assert [(g.reason, g.answers) for g in gaps] == [
        (GapReason.FRAME_TOO_LARGE, calls["big_text{'size': 200000}"])
    ]
    # Every GOLEM frame names exactly its own call: the big one ended with its answer.
    golem = [e for e in events if isinstance(e, FrameSeen) and e.route != "mcp"]
    assert golem and all(len(e.tool_calls or ()) == 1 for e in golem), [e.tool_calls for e in golem]
    assert {e.tool_calls[0].tool for e in golem if e.tool_calls} == {
        "create_layer",
        "list_layers",
    }

    show = run_cli("show", str(record), env=dict(cli_env(), COLUMNS="200"))
    assert show.returncode == 0, show.stderr
    big = [line for line in show.stdout.splitlines() if "big_text(" in line]
    assert len(big) == 1 and ANSWERED in big[0], show.stdout
    assert "unanswered" not in show.stdout and "ambiguous" not in show.stdout, show.stdout

    shown = run_cli("show", str(record), "--json")
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines() if line.startswith("{")]
    big_rows = [row for row in rows if row.get("status") == ANSWERED]
    assert len(big_rows) == 1 and big_rows[0]["error"] is False, big_rows

    check = run_cli("check", str(record))
    assert check.returncode == 3, check.stdout + check.stderr  # incomplete, nothing failed
    assert "failed" not in check.stdout, check.stdout
    assert "not inspected: the answers to 1 request" in check.stdout, check.stdout

    stats = run_cli("stats", str(record), "--json")
    assert stats.returncode == 0, stats.stderr
    tools = {row["tool"]: row for row in json.loads(stats.stdout)["tools"]}
    assert tools["big_text"]["errors"] == 0 and tools["big_text"]["unknown"] == 1
    assert tools["big_text"]["shared_golem_flows"] == 0
    assert all(row["shared_golem_flows"] == 0 for row in tools.values())
