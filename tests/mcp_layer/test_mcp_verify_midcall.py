"""``golem-proxy mcp-verify`` on a session where the plugin was killed in the middle of a call:
its GOLEM request was never answered, and the recording's ``end`` line names it. The server
read the end of the stream; the next call met the plugin's absence, on a new connection the
proxy reset (a server that drops a connection that ended) or on the dead one, whose bytes the
proxy refused with a reset (a server that keeps it, as GOLEM-3DMCP does). The stand-in ends
its side when that request comes, and resets what the server writes there after, so the same
build matches every call, run after run (the stand-in used to answer the request with a
replay miss, a result of its own)."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Optional

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from golem_core.messages import Request
from golem_proxy.events import Direction, FrameSeen, StreamEnded
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import ROOT, Outcome, environment
from .test_mcp_verify_outage import _free_port, _wait_for_line

SERVER_COMMAND = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_midcall.py")]
RUNS = 3
"""mcp-verify runs per recording: the stand-in's end and reset race the server's reads."""


def _killed_mid_call(command: list[str], plugin: PluginProcess, variant: str) -> list[Outcome]:
    """list_layers, then wait_in_rhino with the plugin killed (SIGKILL) once its request is
    recorded, then list_layers again."""
    record = Path(command[command.index("--record") + 1])

    async def session() -> list[Outcome]:
        env = environment(GOLEM_TEST_SERVER_VARIANT=variant)
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        outcomes: list[Outcome] = []

        async def call(client: ClientSession, name: str, arguments: dict[str, float]) -> None:
            result = await client.call_tool(name, arguments)
            outcomes.append((bool(result.isError), [c.model_dump() for c in result.content]))

        def kill_once_asked() -> None:
            _wait_for_line(record, '"method":"debug.sleep"')
            # Read by the plugin first: killed with bytes unread, it would reset, not end.
            deadline = time.monotonic() + 20
            while (unread := _unread_on(plugin.main.port)) != 0:
                if unread is None:  # the system does not say: leave it time to read
                    time.sleep(0.3)
                    break
                assert time.monotonic() < deadline, f"{unread} bytes left unread by the plugin"
                time.sleep(0.02)
            assert plugin.process is not None
            plugin.process.kill()
            plugin.process.wait()

        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await call(client, "list_layers", {})
            async with anyio.create_task_group() as group:
                group.start_soon(call, client, "wait_in_rhino", {"seconds": 20.0})
                await anyio.to_thread.run_sync(kill_once_asked)
            await call(client, "list_layers", {})
        return outcomes

    return anyio.run(session)


def _unread_on(port: int) -> Optional[int]:
    """Bytes the kernel holds unread on the loopback connections accepted on ``port`` (Linux's
    /proc/net/tcp: each established socket's receive queue); None where it does not say."""
    try:
        rows = Path("/proc/net/tcp").read_text(encoding="ascii").splitlines()[1:]
    except OSError:
        return None
    unread = 0
    for row in rows:
        local, state, queues = row.split()[1], row.split()[3], row.split()[4]
        if int(local.rsplit(":", 1)[1], 16) == port and state == "01":  # ESTABLISHED
            unread += int(queues.split(":")[1], 16)
    return unread


@pytest.fixture(scope="module", params=["drops", "keeps-ended"])
def killed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    """The recording, and the server's variant (it is verified as it was recorded)."""
    variant = str(request.param)
    record = tmp_path_factory.mktemp("midcall") / "session.jsonl"
    main, gh = _free_port(), _free_port()
    command = [
        sys.executable, "-m", "golem_proxy", "mcp",
        "--upstream", f"127.0.0.1:{main}", "--gh-upstream", f"127.0.0.1:{gh}",
        "--record", str(record), "--", *SERVER_COMMAND,
    ]  # fmt: skip
    with contextlib.ExitStack() as stack:
        plugin = stack.enter_context(
            PluginProcess(seed=7, port=main, gh_port=gh, extra_args=("--debug-methods",))
        )
        outcomes = _killed_mid_call(command, plugin, variant)
    assert [failed for failed, _ in outcomes] == [False, True, True], outcomes
    assert "closed" in outcomes[1][1][0]["text"], outcomes
    return record, variant


def test_the_end_line_names_the_request_the_plugin_never_answered(
    killed: tuple[Path, str],
) -> None:
    events = read_recording(str(killed[0])).events
    ends = [e for e in events if isinstance(e, StreamEnded) and e.route == "main"]
    assert [(end.direction, len(end.unanswered)) for end in ends] == [(Direction.S2C, 1)]
    (end,) = ends
    owed = [
        e.message.method
        for e in events
        if isinstance(e, FrameSeen) and e.conn == end.conn and e.direction is Direction.C2S
        if e.index in end.unanswered and isinstance(e.message, Request)
    ]
    assert owed == ["debug.sleep"]


def test_the_same_build_matches_every_call_every_run(killed: tuple[Path, str]) -> None:
    record, variant = killed
    for _ in range(RUNS):
        done = run_cli(
            "mcp-verify", "--json", str(record), "--", *SERVER_COMMAND,
            env=environment(COLUMNS="200", GOLEM_TEST_SERVER_VARIANT=variant), timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert report["ok"] is True and report["differing"] == [], report["checks"]
        assert report["standin_misses"] == []
        ended = [(o["tool"], o["route"], o["ended"]) for o in report["standin_outage"]]
        assert ("wait_in_rhino", "main", True) in ended
