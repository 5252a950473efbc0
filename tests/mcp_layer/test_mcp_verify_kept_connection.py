"""``golem-proxy mcp-verify`` on a session whose server opened its GOLEM connection ahead of
use while the plugin was down, writing nothing on it: the proxy accepted it and reset it
(the upstream refused it) during that call. The plugin came back; the next call found the
kept connection dead, as a connection pool checks one, and opened a new one. The stand-in
resets that connection by the time the next call is sent, so the same build matches (it
used to wait for the server's first bytes, which came in the next call and met its reset
there: that call failed).

The connection is the call's however late the proxy gets to accept it: recorded with the
proxy stopped from before the server's connect until after its answer was written (as a
loaded machine may leave it without CPU), the proxy finds the connection in its listener's
backlog and the answer on the server's stdout at once, and still opens the connection
before it hands the answer on, so its close names the call that opened it."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import ROOT, Call, environment
from .test_mcp_verify_outage import _calls_around, _free_port, _wait_for_line

SERVER_COMMAND = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_pooled.py")]
DURING: list[Call] = [("connect_rhino", {})]
AFTER: list[Call] = [("list_layers", {}), ("create_layer", {"name": "B"})]


RECORDED_WITH = {
    "proxy running": [],
    "proxy stalled": ["--env", "GOLEM_TEST_SERVER_VARIANT=stops-proxy"],
}


@pytest.fixture(scope="module", params=list(RECORDED_WITH))
def opened_ahead(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("kept") / "session.jsonl"
    main, gh = _free_port(), _free_port()
    command = [
        sys.executable, "-m", "golem_proxy", "mcp",
        "--upstream", f"127.0.0.1:{main}", "--gh-upstream", f"127.0.0.1:{gh}",
        "--record", str(record), *RECORDED_WITH[request.param], "--", *SERVER_COMMAND,
    ]  # fmt: skip
    with contextlib.ExitStack() as plugin:

        def plugin_comes_up() -> None:
            plugin.enter_context(PluginProcess(seed=7, port=main, gh_port=gh))
            _wait_for_line(record, '"kind":"upstream"', '"route":"main"', '"state":"back"')

        outcomes = _calls_around(command, DURING, plugin_comes_up, AFTER)
    assert [failed for failed, _ in outcomes] == [False, False, False], outcomes
    return record


def test_the_same_build_matches_after_a_connection_reset_unwritten(opened_ahead: Path) -> None:
    done = run_cli(
        "mcp-verify", "--json", str(opened_ahead), "--", *SERVER_COMMAND,
        env=environment(COLUMNS="200"), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["differing"] == [], report["checks"]
    assert [(o["tool"], o["resets"]) for o in report["standin_outage"]] == [("connect_rhino", 1)]


def test_the_reset_connection_names_the_call_that_opened_it(opened_ahead: Path) -> None:
    lines = [json.loads(line) for line in opened_ahead.read_text(encoding="utf-8").splitlines()]
    reset = [
        line
        for line in lines
        if line.get("kind") == "close" and line["route"] == "main" and line["abnormal"]
    ]
    assert len(reset) == 1, reset
    assert [call["tool"] for call in reset[0].get("tool_calls", [])] == ["connect_rhino"], reset
