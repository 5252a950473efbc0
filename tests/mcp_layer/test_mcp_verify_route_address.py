"""``golem-proxy mcp-verify`` on a session whose tool results name the address the server
dialled: the real GOLEM-3DMCP server says ``Cannot connect to Rhino plugin at HOST:PORT``
while the plugin is down, and HOST:PORT is the wrapper's GOLEM route, on a port free when it
was recorded. The stand-in listens on another free port; the recorded route's address reads
as the stand-in's, so the same build matches, and a build naming another port differs."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess

from .mcp_helpers import SERVER_COMMAND
from .test_mcp_verify_outage import AFTER, DURING, _calls_around, _free_port, _wait_for_line
from .test_mcp_verify_outage import mcp_verify as run_mcp_verify

VARIANT = "names-address"


@pytest.fixture(scope="module")
def naming(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A session recorded through an outage by a build that names the address it dialled,
    and the main route's address as recorded."""
    record = tmp_path_factory.mktemp("naming") / "session.jsonl"
    main, gh = _free_port(), _free_port()
    command = [
        sys.executable, "-m", "golem_proxy", "mcp",
        "--upstream", f"127.0.0.1:{main}", "--gh-upstream", f"127.0.0.1:{gh}",
        "--env", f"GOLEM_TEST_SERVER_VARIANT={VARIANT}",
        "--record", str(record), "--", *SERVER_COMMAND,
    ]  # fmt: skip
    with contextlib.ExitStack() as plugin:

        def plugin_comes_up() -> None:
            plugin.enter_context(PluginProcess(seed=7, port=main, gh_port=gh))
            _wait_for_line(record, '"kind":"upstream"', '"route":"main"', '"state":"back"')

        outcomes = _calls_around(command, DURING, plugin_comes_up, AFTER)
    routes = {route.name: route.listen for route in read_recording(str(record)).header.routes}
    listen = routes["main"]
    assert [failed for failed, _ in outcomes] == [True, True, False, False, False]
    texts = [content[0]["text"] for _, content in outcomes[:2]]
    assert all(f"Cannot connect to Rhino plugin at {listen}: " in text for text in texts), texts
    return record, listen


def mcp_verify(*args: str, variant: str = VARIANT) -> subprocess.CompletedProcess[str]:
    return run_mcp_verify(*args, GOLEM_TEST_SERVER_VARIANT=variant)


def test_the_same_build_matches_though_the_stand_in_listens_elsewhere(
    naming: tuple[Path, str],
) -> None:
    record, listen = naming
    done = mcp_verify(str(record))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp-verify: all 5 tool calls match" in done.stdout
    assert f"main {listen} →" in done.stdout  # the report says whose address it read as whose


def test_json_says_where_the_route_addresses_were_mapped(naming: tuple[Path, str]) -> None:
    record, listen = naming
    done = mcp_verify("--json", str(record))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["differing"] == []
    mapped = {item["route"]: item for item in report["route_addresses"]}
    assert mapped["main"]["recorded"] == listen
    assert mapped["main"]["live"] != listen
    tool_checks = [check for check in report["checks"] if check["tool"] is not None]
    assert [check.get("route_addresses", []) for check in tool_checks] == [
        ["main"], ["main"], [], [], [],
    ]  # fmt: skip


def test_a_build_naming_another_port_differs(naming: tuple[Path, str]) -> None:
    record, listen = naming
    done = mcp_verify("--json", str(record), variant="names-default-port")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["differing"] == ["list_layers", "create_layer"]
    tool_checks = [check for check in report["checks"] if check["tool"] is not None]
    assert [check["ok"] for check in tool_checks] == [False, False, True, True, True]
    difference = tool_checks[1]["differences"][0]
    assert f"at {listen}:" in difference["recorded"]
    assert "at 127.0.0.1:9876:" in difference["live"]
    assert [check.get("route_addresses", []) for check in tool_checks] == [[]] * 5
