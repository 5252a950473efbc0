"""``golem-proxy mcp --observer-spool``: both hops' records go through the spool beside the
recording, the tool call is attributed and recorded as through the pipe, and the spool goes
at the end."""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import reap

from .mcp_helpers import INITIALIZE, rpc_line, start_piped, wrapped

LIST_LAYERS = rpc_line(
    {"id": 1, "method": "tools/call", "params": {"name": "list_layers", "arguments": {}}}
)


def test_mcp_records_a_tool_call_through_the_spool(tmp_path: Path) -> None:
    record, errors = tmp_path / "r.jsonl", tmp_path / "stderr"
    with PluginProcess(seed=8) as plugin, errors.open("wb") as stderr:
        process = start_piped(
            wrapped(plugin, record, "--observer", "child-process", "--observer-spool"),
            stderr=stderr.fileno(),
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
            answers = [process.stdout.readline()]
            assert Path(f"{record}.spool").exists()
            process.stdin.write(rpc_line({"method": "notifications/initialized"}) + LIST_LAYERS)
            process.stdin.flush()
            answers.append(process.stdout.readline())
            process.stdin.close()
            assert process.wait(60) == 0, errors.read_text()
        finally:
            reap(process)
            process.stdout.close()
    assert [json.loads(answer)["id"] for answer in answers] == [0, 1]
    [call] = read_tool_calls(str(record))
    assert [flow.method for flow in call.golem] == ["ping", "scene.list_layers"]
    assert not Path(f"{record}.spool").exists()
    assert "observation stopped" not in errors.read_text()
