"""``golem-proxy mcp --idle-timeout`` closes the GOLEM connection the MCP server keeps between
tool calls; the server's next call finds it closed and fails. The views say that the proxy
closed it and why, in a row of its own between the calls (``show``, ``show --json``, the
TUI), so that the failing call is not read as the plugin's doing; a close the proxy did not
make gets no such row; ``--idle-timeout``'s help warns of this."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import ConnectionClosed
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.tui.helpers import recording_app, run, select

from .mcp_helpers import SERVER_COMMAND
from .test_mcp_verify_outage import _calls_around, _wait_for_line

IDLE = "idle for 1 s (--idle-timeout)"


@pytest.fixture(scope="module")
def cut_while_idle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("idle") / "session.jsonl"
    with PluginProcess(seed=7) as plugin:
        command = [
            sys.executable, "-m", "golem_proxy", "mcp", "--upstream", str(plugin.main),
            "--gh-upstream", str(plugin.gh), "--record", str(record), "--idle-timeout", "1",
            "--", *SERVER_COMMAND,
        ]  # fmt: skip
        outcomes = _calls_around(
            command,
            [("list_layers", {})],
            # The server's connection sits idle until the proxy closed it.
            lambda: _wait_for_line(record, '"kind":"close"', IDLE),
            [("create_layer", {"name": "after"}), ("list_layers", {})],
        )
    assert [failed for failed, _ in outcomes] == [False, True, False], outcomes
    return record


def test_show_has_a_row_saying_the_proxy_closed_it(cut_while_idle: Path) -> None:
    shown = run_cli("show", str(cut_while_idle))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    cut = next(i for i, line in enumerate(lines) if "closed by the proxy" in line)
    assert f"✂ connection closed by the proxy: {IDLE}" in lines[cut]
    failed = next(i for i, line in enumerate(lines) if "create_layer(" in line)
    assert "isError" in lines[failed] and cut < failed  # said before the call that met it


def test_show_json_names_the_close(cut_while_idle: Path) -> None:
    rows = [
        json.loads(line)
        for line in run_cli("show", "--json", str(cut_while_idle)).stdout.splitlines()
    ]
    (cut,) = [row for row in rows if "closed_by_proxy" in row]
    assert cut["closed_by_proxy"] == {"reason": IDLE}
    assert cut["status"] == "closed by the proxy" and cut["error"] is False
    assert cut["route"] == "main"


def test_the_tui_shows_the_row_and_says_why(cut_while_idle: Path) -> None:
    async def body() -> None:
        async with recording_app(str(cut_while_idle)) as (app, pilot):
            (flow,) = [f for f in app.model.flows if f.closed_by_proxy is not None]
            assert app.model.label(flow) == f"✂ connection closed by the proxy: {IDLE}"
            await select(pilot, list(app.model.view).index(flow.number - 1))
            assert "the proxy closed this connection" in app.detail.text()

    run(body())


def test_only_the_proxys_own_close_makes_a_row(cut_while_idle: Path) -> None:
    events = read_recording(str(cut_while_idle)).events
    closes = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "main"]
    assert [close.reason for close in closes] == [IDLE, "client closed"]
    tracker = FlowTracker(read_recording(str(cut_while_idle)).profile)
    for event in events:
        tracker.apply(event)
    assert [f.closed_by_proxy.reason for f in tracker.flows if f.closed_by_proxy] == [IDLE]


def test_the_help_warns_of_a_kept_connection() -> None:
    shown = " ".join(run_cli("mcp", "--help").stdout.split())
    assert "set it above the slowest call)" not in shown
    assert "keeps its connection open between calls" in shown


def test_stats_counts_the_close_by_name(cut_while_idle: Path) -> None:
    stats = run_cli("stats", str(cut_while_idle)).stdout.splitlines()
    (row,) = [line for line in stats if "<closed by proxy>" in line]
    assert row.split()[:4] == ["main", "<closed", "by", "proxy>"] and row.split()[4:6] == ["1", "0"]
