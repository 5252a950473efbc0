"""The live log's clock is the session's: a line's time is the recording's ``started_at`` plus
its ``t``, also where an observing process of its own prints it (it stamped lines from its own
start, 0.4 s late, and seconds late once it had replaced another)."""

from __future__ import annotations

import datetime
import json
import re
import socket
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_proxy.testing.plugin_process import PluginProcess
from tests.live.observer_child_helpers import wait_for


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_log_line_is_stamped_with_the_sessions_clock(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "clock.jsonl"
    with PluginProcess(seed=3) as plugin:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0={plugin.main.host}:{plugin.main.port}",
            "--record", str(record), "--observer", observer,
        )  # fmt: skip
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=10):
                pass
            lines = record.read_text
            wait_for(lambda: '"kind":"close"' in lines(), what="the connection's close")
        finally:
            printed = cli.stop()
    header, *rest = [json.loads(line) for line in record.read_text().splitlines()]
    (opened,) = [line for line in rest if line["kind"] == "open"]
    start = datetime.datetime.fromisoformat(header["started_at"].replace("Z", "+00:00"))
    expected = datetime.datetime.fromtimestamp(start.timestamp() + opened["t"])
    match = re.search(r"^(\d\d:\d\d:\d\d\.\d{3}) \S+\s+#1\s+connected", printed, re.M)
    assert match, printed
    stamped = datetime.datetime.combine(
        expected.date(), datetime.time.fromisoformat(match.group(1))
    )
    assert abs((stamped - expected).total_seconds()) < 0.05, (match.group(1), expected)
