"""``golem-proxy mcp-verify`` on a session recorded through a plugin outage: Rhino is not
running when the session starts and comes up part way. The recording shows the server's first
GOLEM connection accepted and reset (the upstream refused it), the route down (the next
call's connection refused by the system) and back; the stand-in plays that outage, so the
same build matches call for call, and a build that says something else while the plugin is
down differs on those calls only."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import SERVER_COMMAND, Call, Outcome, environment

DURING: list[Call] = [("list_layers", {}), ("create_layer", {"name": "A"})]
AFTER: list[Call] = [
    ("list_layers", {}),
    ("create_layer", {"name": "B"}),
    ("layer_report", {"name": "C"}),
]


def _free_port() -> int:
    """A loopback port that was free a moment ago (bound, then closed: nothing listens)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_line(record: Path, *parts: str, timeout: float = 20) -> None:
    """Poll the recording until a line holds every one of ``parts``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if record.exists():
            for line in record.read_text(encoding="utf-8").splitlines():
                if all(part in line for part in parts):
                    return
        time.sleep(0.02)
    raise AssertionError(f"no line with {parts!r} in {record}")


def _calls_around(
    command: Sequence[str],
    before: Sequence[Call],
    between: Callable[[], None],
    after: Sequence[Call],
) -> list[Outcome]:
    """One MCP session: ``before``, then ``between()`` (in a thread), then ``after``."""

    async def session() -> list[Outcome]:
        params = StdioServerParameters(
            command=command[0], args=list(command[1:]), env=environment()
        )
        outcomes: list[Outcome] = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for index, (name, arguments) in enumerate([*before, *after]):
                if index == len(before):
                    await anyio.to_thread.run_sync(between)
                result = await client.call_tool(name, arguments)
                outcomes.append((bool(result.isError), [c.model_dump() for c in result.content]))
        return outcomes

    return anyio.run(session)


@pytest.fixture(scope="module")
def outage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("outage") / "session.jsonl"
    main, gh = _free_port(), _free_port()
    command = [
        sys.executable, "-m", "golem_proxy", "mcp",
        "--upstream", f"127.0.0.1:{main}", "--gh-upstream", f"127.0.0.1:{gh}",
        "--record", str(record), "--", *SERVER_COMMAND,
    ]  # fmt: skip
    with contextlib.ExitStack() as plugin:

        def plugin_comes_up() -> None:
            plugin.enter_context(PluginProcess(seed=7, port=main, gh_port=gh))
            _wait_for_line(record, '"kind":"upstream"', '"route":"main"', '"state":"back"')

        outcomes = _calls_around(command, DURING, plugin_comes_up, AFTER)
    assert [failed for failed, _ in outcomes] == [True, True, False, False, False]
    texts = [content[0]["text"] for _, content in outcomes[:2]]
    assert "reset" in texts[0] and "refused" in texts[1], texts
    return record


def mcp_verify(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "mcp-verify", *args, "--", *SERVER_COMMAND, env=environment(COLUMNS="200", **env),
        timeout=120,
    )  # fmt: skip


def test_the_same_build_matches_through_the_outage(outage: Path) -> None:
    done = mcp_verify(str(outage))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp-verify: all 5 tool calls match" in done.stdout
    assert "the plugin was down during 2 recorded tool call(s)" in done.stdout
    assert "no recorded answer" not in done.stdout


def test_json_names_the_calls_made_while_the_plugin_was_down(outage: Path) -> None:
    done = mcp_verify("--json", str(outage))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["differing"] == []
    assert report["standin_misses"] == []
    outages = [(o["tool"], o["route"], o["resets"], o["refused"]) for o in report["standin_outage"]]
    assert outages == [("list_layers", "main", 1, True), ("create_layer", "main", 0, True)]
    tools = [check["tool"] for check in report["checks"] if check["tool"] is not None]
    assert tools == [name for name, _ in [*DURING, *AFTER]]


def test_a_build_that_says_otherwise_while_the_plugin_is_down_differs_there(outage: Path) -> None:
    done = mcp_verify("--json", str(outage), GOLEM_TEST_SERVER_VARIANT="offline-message")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["differing"] == ["list_layers", "create_layer"]
    tool_checks = [check for check in report["checks"] if check["tool"] is not None]
    assert [check["ok"] for check in tool_checks] == [False, False, True, True, True]
    assert "Rhino is not reachable" in json.dumps(tool_checks[0]["differences"])
    table = mcp_verify(str(outage), GOLEM_TEST_SERVER_VARIANT="offline-message")
    assert table.returncode == 1
    assert "2 of 5 tool calls differ: list_layers, create_layer" in table.stdout
