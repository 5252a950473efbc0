"""A GOLEM request the wrapper holds on its way (``--fault delay``, ``--intercept``) belongs to
the tool call in flight when the MCP server sent it, not to those in flight when it went on.

The scenario a user runs to test timeouts, with the real `mcp` stdio client: the server's
tool gives up waiting for Rhino and fails, the model's next call starts (its connection waits,
since the headless plugin, like the real one, serves one client at a time), and only then is
the delayed request forwarded. Its recorded ``tool_calls`` name the call that sent it, and so
do its answer's, with either observer. A request held by ``--intercept`` while the client
makes another call is the call's that sent it alone, not ambiguous."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from golem_core.profiles import GOLEM
from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.events import Direction, FrameSeen
from golem_proxy.recording.reader import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.tui.model import SessionModel
from tests.support.cli_helpers import run_cli

from .console_client import DEADLINE, FILTER, ConsoleClient, private_dir
from .mcp_helpers import ROOT, call_tools, environment, wrapped

SERVER = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_timeouts.py")]
DELAY = "delay:ms=1500,method=scene.create_layer,dir=c2s,times=1"
GIVE_UP = 0.3
"""Seconds the tool waits for Rhino: far less than the delay."""


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_delayed_request_belongs_to_the_call_that_sent_it(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "r.jsonl"
    options = ("--fault", DELAY, "--fault-seed", "1", "--observer", observer)
    with PluginProcess(seed=8) as plugin:
        [gave_up, listed] = call_tools(
            wrapped(plugin, record, *options, server=SERVER),
            environment(),
            [("create_layer_within", {"name": "Late", "seconds": GIVE_UP}), ("list_layers", {})],
        )
    assert gave_up[0] and "did not answer" in gave_up[1][0]["text"]
    # The next call's connection was served once the delayed request had gone on.
    assert not listed[0] and '"Late"' in listed[1][0]["text"]

    events = read_recording(str(record)).events
    frames = [e for e in events if isinstance(e, FrameSeen)]
    timed_out = next(f for f in frames if f.route == "mcp" and f.method == "tools/call")
    answer = next(f for f in frames if f.route == "mcp" and f.answers == timed_out.index)
    [delayed] = [f for f in frames if f.method == "scene.create_layer"]
    # The scenario happened: the request went on (and was decoded) after its call was over.
    assert frames.index(delayed) > frames.index(answer)
    assert delayed.tool_calls is not None
    assert [(c.conn, c.index, c.tool) for c in delayed.tool_calls] == [
        (timed_out.conn, timed_out.index, "create_layer_within")
    ]
    [delayed_answer] = [
        f
        for f in frames
        if f.direction is Direction.S2C and f.conn == delayed.conn and f.answers == delayed.index
    ]
    assert delayed_answer.tool_calls == delayed.tool_calls

    calls = read_tool_calls(str(record))
    assert [(call.tool, call.is_error) for call in calls] == [
        ("create_layer_within", True),
        ("list_layers", False),
    ]
    assert [[flow.method for flow in call.golem] for call in calls] == [
        ["ping", "scene.create_layer"],
        ["ping", "scene.list_layers"],
    ]
    [flow] = [flow for flow in calls[0].golem if flow.method == "scene.create_layer"]
    assert flow.response == delayed_answer  # answered, though nobody read the answer
    assert flow.latency is not None and calls[0].latency is not None
    assert flow.latency > calls[0].latency  # the exchange outlived its call

    # The call's time was the proxy's delay: stats counts the call the proxy's and splits
    # none of it into Rhino's and the server's (docs/faults.md, "Every view says what the
    # proxy did").
    stats = run_cli("stats", "--json", str(record))
    assert stats.returncode == 0, stats.stderr
    tools = {row["tool"]: row for row in json.loads(stats.stdout)["tools"]}
    gave_up_row = tools["create_layer_within"]
    assert gave_up_row["by_proxy"] == 1
    assert gave_up_row["rhino_mean_ms"] is None and gave_up_row["server_mean_ms"] is None
    assert_a_row_away_from_its_call_names_it(record, calls[0].number)


def assert_a_row_away_from_its_call_names_it(record: Path, call: int) -> None:
    """The delayed request's row, numbered when it went on, stands under the next call's row:
    in show and in the TUI it names its own call; the rows under their own call do not."""
    shown = run_cli("show", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if "↳" in line]
    named = [row for row in rows if "(of #" in row]
    assert len(named) == 1 and "scene.create_layer" in named[0], rows
    assert f"↳ scene.create_layer (of #{call} create_layer_within)" in named[0]
    # The table as a user reads it: the row stands under list_layers(), not its call.
    lines = shown.stdout.splitlines()
    above = lines[: lines.index(named[0])]
    assert "list_layers()" in next(line for line in reversed(above) if "↳" not in line)

    model = SessionModel(GOLEM)
    model.apply(read_recording(str(record)).events)
    labels = {model.label(flow).strip() for flow in model.flows if flow.method}
    assert f"↳ scene.create_layer (of #{call} create_layer_within)" in labels
    assert "↳ scene.list_layers" in labels
    # Filtered to the GOLEM rows, no row stands under its call's row: each names it.
    model.set_filter("~m ^scene")
    shown_labels = [model.label(model.flows[index]).strip() for index in model.view]
    assert shown_labels[0] == f"↳ scene.create_layer (of #{call} create_layer_within)"
    assert shown_labels[1].startswith("↳ scene.list_layers (of #")


def test_a_request_held_while_the_client_calls_again_is_the_first_calls_alone(
    tmp_path: Path,
) -> None:
    path = private_dir(tmp_path) / "c.sock"
    record = tmp_path / "r.jsonl"

    def calls_on_the_mcp_hop() -> None:
        """Wait until the recording has both calls' requests (the second crossed the hop)."""
        deadline = time.monotonic() + DEADLINE
        while True:
            lines = record.read_bytes().splitlines() if record.exists() else []
            if sum(b'"tools/call"' in line for line in lines) >= 2:
                return
            assert time.monotonic() < deadline, "the second call was not recorded"
            time.sleep(0.02)

    async def session(command: list[str]) -> tuple[list[bool], str]:
        params = StdioServerParameters(command=command[0], args=command[1:], env=environment())
        failed: list[bool] = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()

            async def call(name: str, arguments: dict[str, str]) -> None:
                failed.append(bool((await client.call_tool(name, arguments)).isError))

            console = await anyio.to_thread.run_sync(ConsoleClient, path)
            try:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(call, "create_layer", {"name": "H"})
                    await anyio.to_thread.run_sync(console.held, 1)  # as it arrived
                    tasks.start_soon(call, "list_layers", {})
                    await anyio.to_thread.run_sync(calls_on_the_mcp_hop)
                    decided = await anyio.to_thread.run_sync(console.ask, "accept 1")
            finally:
                console.close()
        return failed, decided

    with PluginProcess(seed=9) as plugin:
        command = wrapped(plugin, record, "--intercept", FILTER, "--console", f"unix:{path}")
        failed, decided = anyio.run(session, command)
    assert decided == "#1: accept"
    assert failed == [False, False]
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    first_call = next(f for f in frames if f.route == "mcp" and f.method == "tools/call")
    [held] = [f for f in frames if f.method == "scene.create_layer"]
    # Decoded when accepted, with both calls in flight; sent while only the first was.
    assert [(c.index, c.tool) for c in held.tool_calls or ()] == [
        (first_call.index, "create_layer")
    ]
    first = read_tool_calls(str(record))[0]
    assert [flow.method for flow in first.golem] == ["ping", "scene.create_layer"]
