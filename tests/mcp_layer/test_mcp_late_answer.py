"""A GOLEM answer that comes after its tool call returned, and the calls that read it.

The real GOLEM-3DMCP server waits 30 s for Rhino, then its tool call returns an error to the
model; it keeps the connection and reads answers in order without matching ids, so its next
call reads the late answer, and each call after it the answer of the call before. The test
server (golem_mcp_server_in_order.py) does the same with a short timeout; the headless plugin
is made slow by a script that sleeps. Through the real `golem-proxy mcp` with the `mcp` stdio
client, every view says so: the late GOLEM exchange is marked late (show, show --json), each
later call whose result is another exchange's answer says whose (``answer_of``), and `check`
warns of both."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM, MCP
from golem_proxy.recording.reader import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.widgets.flow_summary import flow_summary
from tests.support.cli_helpers import run_cli

from .late_session import SERVER, SLOW, late_answer_session
from .mcp_helpers import ROOT, call_tools, environment, wrapped


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_late_answer_and_the_calls_that_read_it_are_named(tmp_path: Path, observer: str) -> None:
    record, stderr = tmp_path / "r.jsonl", tmp_path / "stderr"
    with PluginProcess(seed=3, extra_args=("--allow-scripts",)) as plugin:
        command = wrapped(plugin, record, "--observer", observer, server=SERVER)
        outcomes = late_answer_session(command, record, stderr)
    # The scenario happened: the server gave up, then each call read the answer before it.
    assert outcomes[1][0] and "did not respond" in outcomes[1][1]
    assert not outcomes[2][0] and '"stdout": "late\\n"' in outcomes[2][1]
    assert '"layer_index"' in outcomes[3][1] or '"full_path": "next"' in outcomes[3][1]

    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    by_method = {row["method"]: row for row in rows if row["layer"] == "golem"}
    calls = {
        row.get("tool"): row for row in rows if row.get("tool") and row["tool"] != "list_layers"
    }
    slow, created = by_method["scripting.execute_python"], by_method["scene.create_layer"]
    run_python = calls["run_python"]
    assert slow["late"] is True and slow["tool_call"] == run_python["number"]
    assert slow["late_text"] == f"late: after its tool call #{run_python['number']} returned"
    # The answers before it came in time; a later call's own answer may come after its call
    # returned (with the answer before it): late too, said the same way.
    late = [row["number"] for row in rows if row.get("late")]
    assert late[0] == slow["number"] and all(
        row["layer"] == "golem" and row["number"] > slow["number"]
        for row in rows
        if row.get("late") and row is not slow
    )
    first = next(row for row in rows if row["method"] == "scene.list_layers")
    first_call = next(row for row in rows if row.get("tool") == "list_layers")
    assert "late" not in first and "answer_of" not in first_call
    assert "answer_of" not in run_python

    # create_layer got the slow script's answer; get_document_info create_layer's.
    misread = calls["create_layer"]["answer_of"]
    assert misread["flow"] == slow["number"] and misread["tool"] == "run_python"
    assert misread["method"] == "scripting.execute_python"
    assert misread["text"].startswith(f"its result is #{slow['number']}'s answer (run_python)")
    assert calls["get_document_info"]["answer_of"]["flow"] == created["number"]
    assert calls["get_document_info"]["answer_of"]["tool"] == "create_layer"

    table = run_cli("show", str(record))
    assert table.returncode == 0, table.stderr
    flat = " ".join(table.stdout.split())
    assert f"late: after its tool call #{run_python['number']} returned" in flat
    assert f"its result is #{slow['number']}'s answer (run_python), not its own" in flat

    # The live log (the wrapper's stderr, at the default verbosity) says both on the lines
    # of those exchanges, in the same words; no rows to name them by, so by tool and MCP id,
    # and by route and connection.
    log = stderr.read_text().splitlines()
    [slow_line] = [line for line in log if "scripting.execute_python " in line]
    said = f"late: after its tool call run_python (MCP id {run_python['id']}) returned"
    assert f"· {said}" in slow_line, slow_line
    [misread_line] = [line for line in log if "tools/call create_layer" in line]
    assert (
        f"· its result is {slow['route']} conn {slow['conn']}'s answer (run_python), not its "
        "own: the server reads answers out of order"
    ) in misread_line, misread_line
    first_line = next(line for line in log if "scene.list_layers" in line)
    assert "late" not in first_line and "its result is" not in first_line
    misread_lines = [line for line in log if "· its result is" in line]
    assert len(misread_lines) == len([row for row in rows if row.get("answer_of")]), log

    checked = run_cli("check", "--json", str(record))
    report = json.loads(checked.stdout)
    rules = {group["rule"]: group["findings"] for group in report["rules"]}
    assert [f["flow"] for f in rules["mcp.golem.late-answer"]] == late
    assert "run_python (MCP id" in rules["mcp.golem.late-answer"][0]["message"]
    misread_rows = [f["flow"] for f in rules["mcp.golem.answer-of-another-call"]]
    # Each call after the late answer read the answer before its own (the last one too).
    assert misread_rows == [row["number"] for row in rows if row.get("answer_of")]
    assert misread_rows == [
        row["number"] for row in rows if row["number"] > slow["number"] and row.get("tool")
    ]

    # The TUI's detail says the same, the call's own exchange named by number.
    model = SessionModel(GOLEM)
    model.apply(read_recording(str(record)).events)
    late_flow = model.flow_numbered(slow["number"])
    late_detail = flow_summary(late_flow, GOLEM, calls=model.call_rows(late_flow)).plain
    assert f"late: after its tool call #{run_python['number']} returned" in late_detail
    call = model.flow_numbered(calls["create_layer"]["number"])
    under = model.caused_by(call)
    detail = flow_summary(call, MCP, under, answer_row=model.answer_row(call)).plain
    own = ", ".join(f"#{flow.number}'s" for flow in under if flow.response is not None)
    assert own, detail
    assert f"its result is #{slow['number']}'s answer (run_python), not its own {own}" in detail


def test_a_late_answer_its_server_never_reads_says_nothing_more(tmp_path: Path) -> None:
    """A server that drops the connection when it gives up (golem_mcp_server_timeouts.py)
    never reads the late answer: it is marked late, and no later call is said to have read
    it (each call's result is its own answer)."""
    record = tmp_path / "r.jsonl"
    server = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_timeouts.py")]
    delay = ("--fault", "delay:ms=1500,method=scene.create_layer,dir=c2s,times=1")
    with PluginProcess(seed=8) as plugin:
        [gave_up, created, listed] = call_tools(
            wrapped(plugin, record, *delay, "--fault-seed", "1", server=server),
            environment(),
            [
                ("create_layer_within", {"name": "Late", "seconds": 0.3}),
                ("create_layer", {"name": "Next"}),
                ("list_layers", {}),
            ],
        )
    assert gave_up[0] and not created[0] and not listed[0]

    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    [late] = [row for row in rows if row.get("late")]
    assert (
        late["method"] == "scene.create_layer"
        and late["tool_call"]
        == rows[[row.get("tool") for row in rows].index("create_layer_within")]["number"]
    )
    assert not [row for row in rows if "answer_of" in row]
    checked = run_cli("check", "--json", str(record))
    rules = {group["rule"] for group in json.loads(checked.stdout)["rules"]}
    assert "mcp.golem.late-answer" in rules
    assert "mcp.golem.answer-of-another-call" not in rules


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_late_answer_to_a_server_that_closed_is_not_said_to_stay_on_its_connection(
    tmp_path: Path, observer: str
) -> None:
    """The plugin is slow; the server gives up and closes its connection
    (golem_mcp_server_timeouts.py), so the late answer is refused unread, never delivered:
    `check` still warns that the plugin's answer came after the call returned, and says the
    answer never reached the server, not that it stays on its connection for the next call
    (which cannot happen on a closed one)."""
    record, stderr = tmp_path / "r.jsonl", tmp_path / "stderr"
    server = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_timeouts.py")]
    slow = ("run_python_within", {"code": SLOW, "seconds": 0.3})
    with PluginProcess(seed=3, extra_args=("--allow-scripts",)) as plugin:
        command = wrapped(plugin, record, "--observer", observer, server=server)
        outcomes = late_answer_session(
            command, record, stderr, then=[("list_layers", {})], slow=slow
        )
    assert outcomes[1][0] and "did not answer" in outcomes[1][1]  # the server gave up
    assert not outcomes[2][0]

    shown = run_cli("show", "--json", str(record))
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    [late] = [row for row in rows if row.get("late")]
    assert late["method"] == "scripting.execute_python"
    assert late["status"] == "ok (undelivered: client gone)", late["status"]
    checked = run_cli("check", "--json", str(record))
    rules = {group["rule"]: group["findings"] for group in json.loads(checked.stdout)["rules"]}
    [found] = rules["mcp.golem.late-answer"]
    assert found["flow"] == late["number"]
    assert found["message"] == (
        "the plugin's answer came after its tool call run_python_within (MCP id 3) had "
        "returned; the answer never reached the server (undelivered: client gone): its "
        "connection holds no answer a later call could read"
    ), found["message"]
    assert "mcp.golem.answer-of-another-call" not in rules
