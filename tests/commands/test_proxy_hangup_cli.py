"""``golem-proxy proxy`` whose terminal closes (SIGHUP) stops as Ctrl-C stops it: its
connections drained and its recording closed with a session-end line. SIGHUP's default
action ended the process with the recording unclosed (`check`: "the proxy stopped without
closing this recording", exit 3)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture

from .test_log_cli import ProxyProcess

plugin = plugin_fixture(seed=3)


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_hangup_closes_the_recording(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    trace = tmp_path / "hup.jsonl"
    proxy = ProxyProcess(tmp_path, plugin.main, "--record", str(trace), "--observer", observer)
    try:
        with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
            client.send_command("scene.list_layers")
        proxy.process.send_signal(signal.SIGHUP)
        assert proxy.process.wait(30) == 0
    finally:
        proxy.kill()
    last = json.loads(trace.read_text().splitlines()[-1])
    assert last["kind"] == "session-end" and "SIGHUP" in last["reason"]
    report = json.loads(run_cli("check", str(trace), "--json").stdout)
    assert report["complete"] is True, report["not_inspected"]
