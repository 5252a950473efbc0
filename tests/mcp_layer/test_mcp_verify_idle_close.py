"""``golem-proxy mcp-verify`` on a session where the plugin went away and came back while the
MCP server's GOLEM connection sat idle: the proxy held the plugin's close until the server
wrote again and answered those bytes with a reset, so the next call failed on a dead
connection although the plugin was back (the server then connected again). The recording's
close says so (``gone_before_write``), the request it wrote there is recorded undelivered,
the stand-in resets the server's open connection as that call begins, and the same build
matches call for call, with observation in the wrapper's process and in a process of its
own."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.events import ConnectionClosed, Direction, FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess

from .mcp_helpers import SERVER_COMMAND
from .test_mcp_verify_outage import _calls_around, _free_port, mcp_verify


@pytest.fixture(scope="module", params=["in-process", "child-process"])
def left_idle(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("idle") / "session.jsonl"
    main, gh = _free_port(), _free_port()
    command = [
        sys.executable, "-m", "golem_proxy", "mcp",
        "--upstream", f"127.0.0.1:{main}", "--gh-upstream", f"127.0.0.1:{gh}",
        "--record", str(record), "--observer", request.param, "--", *SERVER_COMMAND,
    ]  # fmt: skip
    with contextlib.ExitStack() as plugins:
        first = plugins.enter_context(contextlib.ExitStack())
        first.enter_context(PluginProcess(seed=7, port=main, gh_port=gh))

        def plugin_restarts() -> None:
            first.close()  # gone, and its connection with it, while the server is idle
            plugins.enter_context(PluginProcess(seed=7, port=main, gh_port=gh))

        outcomes = _calls_around(
            command,
            [("list_layers", {})],
            plugin_restarts,
            [("create_layer", {"name": "A"}), ("list_layers", {})],
        )
    assert [failed for failed, _ in outcomes] == [False, True, False]
    assert "reset" in outcomes[1][1][0]["text"], outcomes[1]
    return record


def test_the_close_says_the_server_wrote_to_a_dead_connection(left_idle: Path) -> None:
    closes = [
        e
        for e in read_recording(str(left_idle)).events
        if isinstance(e, ConnectionClosed) and e.route == "main"
    ]
    assert [close.gone_before_write for close in closes] == [True, False]
    assert closes[0].abnormal


def test_the_same_build_matches_with_the_dead_connection_reset(left_idle: Path) -> None:
    done = mcp_verify(str(left_idle))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp-verify: all 3 tool calls match" in done.stdout
    assert "the plugin was down during 1 recorded tool call(s)" in done.stdout
    assert "create_layer" in done.stdout.splitlines()[-2]
    assert "no recorded answer" not in done.stdout
    report = json.loads(mcp_verify("--json", str(left_idle)).stdout)
    assert report["ok"] is True and report["differing"] == []
    assert report["standin_misses"] == []
    outages = [
        (o["tool"], o["route"], o["resets"], o["refused"], o["reset_open"])
        for o in report["standin_outage"]
    ]
    assert outages == [("create_layer", "main", 0, False, True)]


def test_the_refused_request_reads_undelivered(left_idle: Path) -> None:
    """The GOLEM request the server wrote to the dead connection never reached the plugin:
    its frame says so, and `show` says ``undelivered (upstream gone)``, not ``unanswered``
    (which would say the plugin may have acted on it)."""
    frames = [
        (e.conn, e.method, e.undelivered)
        for e in read_recording(str(left_idle)).events
        if isinstance(e, FrameSeen) and e.route == "main" and e.direction is Direction.C2S
    ]
    assert frames == [
        (2, "ping", ""),
        (2, "scene.list_layers", ""),
        (2, "scene.create_layer", "upstream gone"),
        (3, "ping", ""),
        (3, "scene.list_layers", ""),
    ]
    shown = subprocess.run(
        [sys.executable, "-m", "golem_proxy", "show", str(left_idle), "--json"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    [refused] = [row for row in rows if row["method"] == "scene.create_layer"]
    assert refused["status"] == "undelivered (upstream gone)"
    assert refused["undelivered"] == "upstream gone"
