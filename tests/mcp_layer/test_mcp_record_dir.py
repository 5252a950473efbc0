"""Two ``golem-proxy mcp --record-dir DIR`` wrappers started together, as an MCP client starts
its servers: both run and each records to a file of its own (the second got "already exists"
for the first's one-second name, and its client "Connection closed")."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.testing.plugin_process import PluginProcess
from tests.robustness.test_record_dir_names import taken_names

from .mcp_helpers import SERVER_COMMAND, Outcome, call_tools, environment


def test_two_wrappers_started_together_record_side_by_side(tmp_path: Path) -> None:
    records = tmp_path / "sessions"
    records.mkdir()
    taken = taken_names(records)  # whatever second they start in, its name is taken
    outcomes: dict[str, list[Outcome]] = {}
    failures: dict[str, BaseException] = {}
    with PluginProcess(seed=7) as plugin:
        command = [
            sys.executable, "-m", "golem_proxy", "mcp",
            "--upstream", str(plugin.main), "--gh-upstream", str(plugin.gh),
            "--record-dir", str(records), "--", *SERVER_COMMAND,
        ]  # fmt: skip

        def client(name: str) -> None:
            try:
                calls = [("create_layer", {"name": name})]
                outcomes[name] = call_tools(command, environment(), calls)
            except BaseException as exc:  # the client's "Connection closed", told below
                failures[name] = exc

        threads = [threading.Thread(target=client, args=(name,)) for name in ("A", "B")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
    assert failures == {}
    assert sorted(outcomes) == ["A", "B"]
    written = sorted(set(records.iterdir()) - set(taken))
    assert len(written) == 2, written
    made = sorted(call.arguments["name"] for path in written for call in read_tool_calls(str(path)))
    assert made == ["A", "B"]
    assert {path: path.read_text() for path in taken} == taken
