"""After the observing process of ``golem-proxy mcp`` is replaced, the MCP layer's rules go on
where the one that died left them (live/mcp_rules_live.py, recording/mcp_session_scan.py): a
``tools/call`` made after the restart is not taken for one sent before ``initialize``, and its
arguments are held to the tools listed before the restart, live, as without a restart."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from bench.processes import observing_process
from golem_proxy.events import ViolationSeen
from golem_proxy.recording.reader import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.live.observer_child_helpers import wait_for
from tests.support.cli_helpers import reap, run_cli

from .mcp_helpers import INITIALIZE, environment, rpc_line, start_piped, wrapped

UNDECLARED = "mcp.tools-call.undeclared-argument"
INITIALIZE_FIRST = "mcp.lifecycle.initialize-first"


def _call(ident: int, tool: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": tool, "arguments": arguments}
    return rpc_line({"id": ident, "method": "tools/call", "params": params})


def _recorded(record: Path, ident: int) -> bool:
    """The recording (being written) holds the MCP answer ``ident``."""
    return any(
        '"route":"mcp","dir":"s2c"' in text and f'"id":{ident},' in text
        for text in record.read_text().splitlines()
    )


def _session_across_a_death(tmp_path: Path) -> tuple[Path, str]:
    """Initialize, list the tools, call; once that is recorded the observing process is
    killed; after the restart two calls, the second naming an argument its tool does not
    declare. Returns the recording and the wrapper's stderr."""
    record, errors = tmp_path / "r.jsonl", tmp_path / "stderr"
    with PluginProcess(seed=10) as plugin, errors.open("wb") as stderr:
        process = start_piped(wrapped(plugin, record), stderr=stderr.fileno())
        assert process.stdin is not None and process.stdout is not None

        def ask(line: bytes, ident: int) -> dict[str, Any]:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(line)
            process.stdin.flush()
            answer: dict[str, Any] = json.loads(process.stdout.readline())
            assert answer["id"] == ident
            return answer

        try:
            ask(INITIALIZE, 0)
            process.stdin.write(rpc_line({"method": "notifications/initialized"}))
            ask(rpc_line({"id": 1, "method": "tools/list"}), 1)
            ask(_call(2, "list_layers", {}), 2)
            wait_for(lambda: _recorded(record, 2), what="the answer in the recording")
            os.kill(observing_process(process.pid), signal.SIGKILL)
            wait_for(lambda: b"observation restarted" in errors.read_bytes(), what="the restart")
            assert not ask(_call(3, "create_layer", {"name": "After"}), 3)["result"]["isError"]
            ask(_call(4, "create_layer", {"name": "B", "colour": "red"}), 4)
            process.stdin.close()
            assert process.wait(60) == 0
        finally:
            reap(process)
            process.stdout.close()
    return record, errors.read_text()


def test_the_rules_go_on_where_the_process_that_died_left_them(tmp_path: Path) -> None:
    record, errors = _session_across_a_death(tmp_path)
    assert "Traceback" not in errors, errors
    events = read_recording(str(record)).events
    found = [event for event in events if isinstance(event, ViolationSeen)]
    # No call after the restart is taken for one sent before `initialize` (row 1, answered).
    assert [v.violation.rule for v in found] == [UNDECLARED], [v.violation for v in found]
    # The undeclared argument is found live, on the call's request: the tools listed before
    # the restart are known to the process after it.
    [undeclared] = found
    assert undeclared.violation.path == "$.params.arguments.colour"
    lines = [json.loads(text) for text in record.read_text().splitlines()[1:]]
    restart = next(i for i, line in enumerate(lines) if line["kind"] == "observation-restarted")
    [violation] = [i for i, line in enumerate(lines) if line["kind"] == "violation"]
    assert violation > restart
    # The wrapper's closing count, `show` and `check` say the same.
    assert "recorded 4 exchanges (0 errors, 1 violation)" in errors, errors
    shown = run_cli("show", "--json", str(record), env=environment())
    flows = [json.loads(text) for text in shown.stdout.splitlines() if text.strip()]
    rules = [
        [v["rule"] for v in flow["violations"]]
        for flow in flows
        if flow.get("method") == "tools/call"
    ]
    assert rules == [[], [], [UNDECLARED]]
    # (Its gap is what observation lost, accepted here: no finding is an error.)
    checked = run_cli("check", "--json", "--allow-incomplete", str(record), env=environment())
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert [group["rule"] for group in report["rules"]] == [UNDECLARED]
    assert INITIALIZE_FIRST not in checked.stdout
