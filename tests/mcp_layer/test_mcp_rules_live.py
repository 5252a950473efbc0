"""The MCP layer's rules are decided while `golem-proxy mcp` runs (live/mcp_rules_live.py): a
tool call naming an argument its tool does not declare is a violation in the recording, on the
call's request frame, so `show`, ``show --json`` and ``~violation`` say it as `check` does, and
`check` counts it once. A client that lists the tools first (as desktop clients do) gets it
live; one that calls first (the Python SDK lists after its first call) gets it from `check`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from golem_proxy.events import ViolationSeen
from golem_proxy.recording.reader import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import call_tools, environment, wrapped

UNDECLARED = "mcp.tools-call.undeclared-argument"
CALLS = [("create_layer", {"name": "A", "colour": "red"}), ("list_layers", {})]


def listing_first(command: list[str]) -> None:
    """Initialize, list the tools, then make `CALLS`, as desktop MCP clients do."""

    async def session() -> None:
        params = StdioServerParameters(command=command[0], args=command[1:], env=environment())
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.list_tools()
            for name, arguments in CALLS:
                await client.call_tool(name, arguments)

    anyio.run(session)


@pytest.fixture(scope="module", params=["child-process", "in-process"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp(request.param) / "session.jsonl"
    with PluginProcess(seed=7) as plugin:
        listing_first(wrapped(plugin, record, "--observer", request.param))
    return record


def recorded_violations(record: Path) -> list[ViolationSeen]:
    events = read_recording(str(record)).events
    return [event for event in events if isinstance(event, ViolationSeen)]


def test_the_recording_carries_the_warning_on_the_call_s_request(session: Path) -> None:
    (found,) = [v for v in recorded_violations(session) if v.violation.rule == UNDECLARED]
    assert found.route == "mcp"
    assert found.direction is not None and found.direction.value == "c2s"
    assert found.violation.path == "$.params.arguments.colour"
    assert "'colour' is not among the properties" in found.violation.message


def flows(record: Path, *options: str) -> list[dict[str, Any]]:
    done = run_cli("show", "--json", *options, str(record), env=environment())
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_show_and_its_filter_say_it_on_the_tool_call(session: Path) -> None:
    calls = [flow for flow in flows(session) if flow.get("method") == "tools/call"]
    rules = [[v["rule"] for v in flow["violations"]] for flow in calls]
    assert rules == [[UNDECLARED], []]
    filtered = flows(session, "--filter", "~violation")
    assert [flow["number"] for flow in filtered] == [calls[0]["number"]]


def check_findings(record: Path) -> dict[str, list[dict[str, Any]]]:
    done = run_cli("check", "--json", str(record), env=environment())
    assert done.returncode == 0, done.stderr  # a warning
    report = json.loads(done.stdout)
    return {group["rule"]: group["findings"] for group in report["rules"]}


def test_check_counts_it_once(session: Path) -> None:
    groups = check_findings(session)
    assert list(groups) == [UNDECLARED]
    assert len(groups[UNDECLARED]) == 1


def test_a_call_made_before_the_tools_are_listed_is_check_s_to_say(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    with PluginProcess(seed=7) as plugin:
        call_tools(wrapped(plugin, record), environment(), CALLS)  # lists after its first call
    assert not [v for v in recorded_violations(record) if v.violation.rule == UNDECLARED]
    assert len(check_findings(record)[UNDECLARED]) == 1
