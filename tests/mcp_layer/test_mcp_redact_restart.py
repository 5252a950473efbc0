"""``golem-proxy mcp --redact`` (the observing process a child of its own, the default) after
that process is killed: a tool call's argument the rule replaced before the death stays hidden
where the plugin lists it after it, on the GOLEM hop and in the tool's result on the MCP hop.
The wrapper restarts its observing process as the proxy does, and hands the new one what the
dead one had learned to hide (live/control_reader.py); before, the list after the restart was
recorded with the layer's name in clear."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.processes import observing_processes
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.live.observer_child_helpers import process_gone, wait_for
from tests.support.cli_helpers import reap

from .mcp_helpers import INITIALIZE, rpc_line, start_piped, wrapped

SECRET = "Hunter2-Restarted"


def _call(ident: int, tool: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": tool, "arguments": arguments}
    return rpc_line({"id": ident, "method": "tools/call", "params": params})


def _mcp_answers_recorded(record: Path) -> int:
    data = record.read_bytes()
    return sum(
        1
        for line in data[: data.rfind(b"\n") + 1].splitlines()[1:]
        if b'"route":"mcp","dir":"s2c"' in line and b'"kind":"frame"' in line
    )


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def test_a_tool_argument_redacted_before_the_observing_process_died_stays_hidden(
    tmp_path: Path,
) -> None:
    record, errors = tmp_path / "r.jsonl", tmp_path / "stderr"
    rule = ("--redact", "tools/call:params.arguments.name")
    with PluginProcess(seed=12) as plugin, errors.open("wb") as stderr:
        process = start_piped(wrapped(plugin, record, *rule), stderr=stderr.fileno())
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 0
            process.stdin.write(
                rpc_line({"method": "notifications/initialized"})
                + _call(1, "create_layer", {"name": SECRET})
            )
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 1
            # Recorded: the observing process decoded the call and learned its argument.
            wait_for(lambda: _mcp_answers_recorded(record) == 2, what="the call recorded")
            wait_for(lambda: len(observing_processes(process.pid)) == 2, what="a standby")
            active = observing_processes(process.pid)[0]
            os.kill(active, signal.SIGKILL)
            wait_for(lambda: process_gone(active), what="the observing process to die")
            wait_for(lambda: b"observation restarted" in errors.read_bytes(), what="the restart")
            process.stdin.write(_call(2, "list_layers", {}))
            process.stdin.flush()
            listed = json.loads(process.stdout.readline())
            assert listed["id"] == 2 and SECRET in listed["result"]["content"][0]["text"]
            process.stdin.close()
            assert process.wait(60) == 0
        finally:
            reap(process)
            process.stdout.close()
    assert SECRET not in errors.read_text()
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    assert [line["kind"] for line in lines].count("observation-restarted") == 1
    assert not [text for text in _strings(lines) if SECRET in text]
    restart = next(line["seq"] for line in lines if line["kind"] == "observation-restarted")
    # The list after the restart, recorded on both hops with its echo replaced.
    hidden = [
        line["route"]
        for line in lines
        if line["seq"] > restart
        and line["kind"] == "frame"
        and line["dir"] == "s2c"
        and "echo" in line.get("redacted", [])
    ]
    assert sorted(hidden) == ["main", "mcp"], hidden
    assert not read_recording(str(record)).truncated_tail
