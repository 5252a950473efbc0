"""A tool call whose result carries the plugin's error dict as its structured content (the
real GOLEM-3DMCP server returns it, ``isError`` false) is a failure in every view, as the
GOLEM exchange under it is."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import call_tools, environment, wrapped


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=environment())


def test_an_error_dict_returned_as_a_tools_result_is_a_failed_call(tmp_path: Path) -> None:
    record = tmp_path / "session.jsonl"
    with PluginProcess(seed=3) as plugin:
        [(is_error, content)] = call_tools(
            wrapped(plugin, record), environment(), [("boolean_union", {"guids": []})]
        )
    assert not is_error and "INVALID_PARAMS" in content[0]["text"]

    shown = cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    [call] = [flow for flow in map(json.loads, shown.stdout.splitlines()) if flow.get("tool")]
    assert call["tool"] == "boolean_union"
    assert call["is_error"] is True
    assert call["status"] == "INVALID_PARAMS (in result)"

    stats = cli("stats", "--json", str(record))
    assert stats.returncode == 0, stats.stderr
    [row] = json.loads(stats.stdout)["tools"]
    assert (row["tool"], row["errors"]) == ("boolean_union", 1)

    checked = cli("check", str(record))
    assert "2 INVALID_PARAMS (in result)" in checked.stdout
