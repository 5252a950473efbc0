"""``proxy --fault`` as a user runs it, against the headless plugin in its own process: the
event of a fault follows the frame it hit, so every view shows it on that frame's flow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture

plugin = plugin_fixture(seed=3, scope="function")


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_delay_is_shown_on_the_flow_it_delayed(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "delayed.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--fault", "delay:ms=150,method=scene.list_layers",
    )  # fmt: skip
    try:
        # The client pings on connect: the delayed request's flow is not the first.
        with GolemClient("127.0.0.1", cli.port) as client:
            client.send_command("scene.list_layers", {})
            client.send_command("scene.get_document_info", {})
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr

    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    # Frames and faults in the order written (exchange lines are derived, skipped here).
    kinds = [
        (line["kind"], line["dir"], line.get("method"))
        for line in lines
        if line["kind"] in ("frame", "fault")
    ]
    request = kinds.index(("frame", "c2s", "scene.list_layers"))
    assert kinds[request + 1 : request + 4] == [
        ("fault", "c2s", "scene.list_layers"),
        ("frame", "s2c", None),
        ("fault", "s2c", "scene.list_layers"),
    ]

    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    flows = [json.loads(line) for line in shown.stdout.splitlines()]
    faults = {flow["method"]: [(f["fault"], f["direction"]) for f in flow.get("faults", [])]
              for flow in flows}  # fmt: skip
    assert faults == {
        "ping": [],
        "scene.list_layers": [("delay", "c2s"), ("delay", "s2c")],
        "scene.get_document_info": [],
    }
