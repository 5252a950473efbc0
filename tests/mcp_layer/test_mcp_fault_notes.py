"""A tool call under which the proxy itself acted on a GOLEM exchange (``golem-proxy mcp
--fault``) says so on its own row, naming that exchange's row: its ``isError`` is the proxy's
doing, not the server's or the plugin's. The real `mcp` stdio client, the FastMCP test server
and the headless plugin."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .late_session import SERVER, late_answer_session
from .mcp_helpers import ROOT, call_tools, environment, wrapped

FAULTS = (
    "--fault", "error:code=-32000,message=busy,method=scene.create_layer",
    "--fault", "delay:ms=200,method=scene.list_layers,dir=s2c",
    "--fault-seed", "1",
)  # fmt: skip


def _rows(record: Path) -> list[dict[str, Any]]:
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


def test_a_tool_call_says_what_the_proxy_did_to_its_golem_exchanges(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    with PluginProcess(seed=7) as plugin:
        outcomes = call_tools(
            wrapped(plugin, record, *FAULTS),
            environment(),
            [("list_layers", {}), ("create_layer", {"name": "A"}), ("gh_ping", {})],
        )
    assert [failed for failed, _ in outcomes] == [False, True, True]
    assert "busy" in outcomes[1][1][0]["text"]
    rows = _rows(record)
    number = {row["method"]: n for n, row in enumerate(rows, 1) if row["layer"] == "golem"}
    calls = {row["tool"]: row for row in rows if row.get("tool")}
    created = calls["create_layer"]
    made = number["scene.create_layer"]
    assert created["status"] == f"isError (GOLEM #{made}: --fault error)"
    assert created["proxy_under"] == [{"flow": made, "faults": ["--fault error"]}]
    listed = calls["list_layers"]
    held = number["scene.list_layers"]
    assert re.fullmatch(rf"ok \(GOLEM #{held}: \+2\d\d ms --fault delay\)", listed["status"])
    assert listed["proxy_under"] == [{"flow": held, "faults": ["--fault delay"]}]
    # A call that failed on its own (no GOLEM connection to Grasshopper): nothing of the proxy.
    assert calls["gh_ping"]["status"] == "isError" and "proxy_under" not in calls["gh_ping"]
    # The table says it on the call's row, above the GOLEM row it names.
    table = run_cli("show", str(record)).stdout
    [line] = [line for line in table.splitlines() if 'create_layer(name="A")' in line]
    assert f"isError (GOLEM #{made}: --fault error)" in line


def test_a_step_after_the_call_returned_is_said_on_its_row_and_the_live_log_says_the_rest(
    tmp_path: Path,
) -> None:
    """The server gives up on a slow script (0.5 s), whose answer the proxy then delays: the
    delay is said when the answer goes on, after the call returned. The call's row says it
    all the same, marked so (it was said on the GOLEM row only). The live log cannot change a
    line printed already, but says on a call's line what the proxy did under it before it
    returned: the error it made for ``create_layer`` (its line said nothing of it)."""
    record, stderr = tmp_path / "r.jsonl", tmp_path / "stderr"
    faults = (
        "--fault", "delay:ms=100,dir=s2c,method=scripting.execute_python",
        "--fault", "error:code=-32000,message=busy,method=scene.create_layer",
    )  # fmt: skip
    with PluginProcess(seed=3, extra_args=("--allow-scripts",)) as plugin:
        command = wrapped(plugin, record, *faults, server=SERVER)
        outcomes = late_answer_session(
            command, record, stderr, then=[("create_layer", {"name": "x"})]
        )
    assert outcomes[1][0] and "did not respond" in outcomes[1][1]  # the server gave up
    rows = _rows(record)
    number = {row["method"]: n for n, row in enumerate(rows, 1) if row["layer"] == "golem"}
    calls = {row["tool"]: row for row in rows if row.get("tool")}
    held = number["scripting.execute_python"]
    run_python = calls["run_python"]
    assert re.fullmatch(
        rf"isError \(GOLEM #{held}: \+1\d\d ms --fault delay, after the call returned\)",
        run_python["status"],
    ), run_python["status"]
    assert run_python["proxy_under"] == [
        {"flow": held, "faults": ["--fault delay"], "after_return": True}
    ]
    made = number["scene.create_layer"]
    assert calls["create_layer"]["proxy_under"] == [{"flow": made, "faults": ["--fault error"]}]
    table = run_cli("show", str(record)).stdout
    [line] = [line for line in table.splitlines() if "run_python(" in line]
    assert "--fault delay, after the call returned)" in line, table
    logged = stderr.read_text()
    [created] = [line for line in logged.splitlines() if "tools/call create_layer" in line]
    assert "· the proxy under it: scene.create_layer: --fault error" in created, logged
    [ran] = [line for line in logged.splitlines() if "tools/call run_python" in line]
    assert "the proxy under it" not in ran  # its step came after its line


def test_an_answer_the_proxy_held_when_its_connection_ended_says_the_hold(tmp_path: Path) -> None:
    """The plugin answers at once; ``--fault delay`` holds the answer 20 s; the server gives
    up after 0.3 s and closes its connection, and the session ends while the answer is held,
    so it is never sent. The hold is recorded all the same (after the answer, recorded
    undelivered): the GOLEM row and the call's say the proxy held it, and `check` counts the
    late answer as the proxy's doing, not the plugin's."""
    record = tmp_path / "r.jsonl"
    server = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_timeouts.py")]
    delay = ("--fault", "delay:ms=20000,method=scene.create_layer,dir=s2c")
    with PluginProcess(seed=7) as plugin:
        outcomes = call_tools(
            wrapped(plugin, record, *delay, server=server),
            environment(),
            [("list_layers", {}), ("create_layer_within", {"name": "T", "seconds": 0.3})],
        )
    assert outcomes[1][0] and "did not answer" in outcomes[1][1][0]["text"]
    [fault] = [json.loads(line) for line in record.read_text().splitlines() if '"fault"' in line]
    assert fault["fault"] == "delay" and 0 < fault["held"] < 20
    assert re.search(r"; the connection ended [\d,]+ ms into it: never sent$", fault["detail"])

    rows = _rows(record)
    [held] = [row for row in rows if row.get("method") == "scene.create_layer"]
    assert re.fullmatch(
        r"ok \(undelivered: (connection ended|client gone)\) \(\+[\d.]+ m?s --fault delay\)",
        held["status"],
    ), held["status"]
    [call] = [row for row in rows if row.get("tool") == "create_layer_within"]
    assert re.fullmatch(
        rf"isError \(GOLEM #{held['number']}: \+[\d.]+ m?s --fault delay, after the call "
        r"returned\)",
        call["status"],
    ), call["status"]
    assert call["proxy_under"] == [
        {"flow": held["number"], "faults": ["--fault delay"], "after_return": True}
    ]
    checked = run_cli("check", "--json", str(record))
    groups = {group["rule"]: group for group in json.loads(checked.stdout)["rules"]}
    late = groups["mcp.golem.late-answer"]
    assert late["by_proxy"] is True
    assert [finding["by_proxy"] for finding in late["findings"]] == ["--fault delay"]


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_request_the_proxy_held_past_the_call_is_said_on_its_row_by_every_reader(
    tmp_path: Path, observer: str
) -> None:
    """``--fault delay`` holds the GOLEM request 800 ms; the tool gives up after 0.3 s. The
    request is decoded when it goes on, after the call returned, so a reader handing rows on
    as they settle had printed the call's row before the delay was read: the call's answer
    carries the session's decision that a request of its was still held
    (``held_under``), and `show`, `show --json` and `query`, which stream, say the hold on
    the call's row as the TUI and `check`, which read to the end, do."""
    record = tmp_path / "r.jsonl"
    server = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_timeouts.py")]
    delay = ("--fault", "delay:ms=800,method=scene.create_layer,dir=c2s,times=1")
    with PluginProcess(seed=7) as plugin:
        outcomes = call_tools(
            wrapped(plugin, record, "--observer", observer, *delay, server=server),
            environment(),
            [
                ("create_layer_within", {"name": "T", "seconds": 0.3}),
                ("list_layers", {}),
                ("create_layer", {"name": "U"}),
            ],
        )
    assert outcomes[0][0] and not outcomes[2][0]
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    [marked] = [line for line in lines if line.get("held_under")]
    rows = _rows(record)
    [held] = [row for row in rows if row.get("method") == "scene.create_layer"][:1]
    [call] = [row for row in rows if row.get("tool") == "create_layer_within"]
    assert (marked["route"], marked["dir"], marked["id"]) == ("mcp", "s2c", call["id"])
    pattern = (
        rf"isError \(GOLEM #{held['number']}: \+\d+ ms --fault delay, after the call returned\)"
    )
    assert re.fullmatch(pattern, call["status"]), call["status"]
    assert call["proxy_under"] == [
        {"flow": held["number"], "faults": ["--fault delay"], "after_return": True}
    ]
    table = run_cli("show", str(record)).stdout
    [line] = [line for line in table.splitlines() if "create_layer_within(" in line]
    assert re.search(pattern, line), table
    queried = run_cli(
        "query", "--json", f"select status from flows where n = {call['number']}", str(record)
    )
    assert queried.returncode == 0, queried.stderr
    assert re.search(pattern, queried.stdout), queried.stdout
    checked = run_cli("check", str(record)).stdout
    assert re.search(rf"#{call['number']} {pattern}", checked), checked
