"""A GOLEM request and its tool call's result written in the same instant are decoded in the
order they were written: the request names its tool call, however the proxy's scheduler
happens to run the two hops (live/read_up.py).

The test server (golem_mcp_server_hasty.py) stops the proxy, writes the request and the result,
and lets it go on: both are readable at once, and without the hop waiting for the routes, the
result is decoded first about half the time (the scheduler's choice), the call is over, and
its request names no tool call."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import ROOT, call_tools, environment, wrapped

SERVER = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_hasty.py")]
CALLS = 8


ROUTES = {
    "plain": (),
    # A route the proxy acts on goes frame by frame, and its pump yields between reading a
    # frame and handing it on (a rule that never matches is enough).
    "faulted": ("--fault", "delay:ms=100,method=viewport.*"),
    # A rule that holds every frame, both ways: the request pump marks each request as it
    # reads it, and holds it.
    "delayed": ("--fault", "delay:ms=100"),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_request_written_with_its_result_names_its_tool_call(
    tmp_path: Path, observer: str, route: str
) -> None:
    record = tmp_path / "r.jsonl"
    calls = [("hasty_layer", {"name": f"L{index}"}) for index in range(CALLS)]
    options = ("--observer", observer, *ROUTES[route])
    with PluginProcess(seed=5) as plugin:
        outcomes = call_tools(
            wrapped(plugin, record, *options, server=SERVER), environment(), calls
        )
    assert [failed for failed, _ in outcomes] == [False] * CALLS

    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    tool_rows = {row["number"]: row for row in rows if row.get("tool") == "hasty_layer"}
    requests = [row for row in rows if row.get("method") == "scene.create_layer"]
    assert len(tool_rows) == len(requests) == CALLS
    # Each request names the call that wrote it: one each, in the calls' order.
    assert [row.get("tool_call") for row in requests] == sorted(tool_rows), [
        (row["number"], row.get("tool_call")) for row in requests
    ]
