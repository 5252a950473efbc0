"""``golem-proxy proxy`` stopped while a request waits for a slow answer: the first Ctrl-C or
SIGTERM lets the connections drain (``--drain-timeout``); another one cuts them at once, and
the recording still ends in order, the cut connection saying why."""

from __future__ import annotations

import json
import re
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from golem_proxy.events import ConnectionClosed, SessionEnded
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.live.observer_child_helpers import wait_for

from .test_log_cli import ProxyProcess

SLEEP = {"id": "slow-1", "method": "debug.sleep", "params": {"seconds": 20}}


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_second_stop_signal_cuts_what_still_drains(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "r.jsonl"
    with PluginProcess(seed=3, extra_args=("--debug-methods",)) as plugin:
        proxy = ProxyProcess(
            tmp_path, plugin.main, "--record", str(record), "--observer", observer,
            "--drain-timeout", "30",
        )  # fmt: skip
        try:
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=20) as client:
                payload = json.dumps(SLEEP).encode()
                client.sendall(struct.pack("!I", len(payload)) + payload)
                wait_for(
                    lambda: record.exists() and '"method":"debug.sleep"' in record.read_text(),
                    what="the request in the recording",
                )
                proxy.process.send_signal(signal.SIGTERM)
                proxy.read_until(re.compile(rb"stopping: listeners closed"))
                proxy.process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                try:
                    proxy.process.wait(10)
                except subprocess.TimeoutExpired:
                    pytest.fail("still draining 10 s after the second SIGTERM")
                assert time.monotonic() - signalled < 5
        finally:
            proxy.kill()
    assert proxy.process.returncode == 0
    events = read_recording(str(record)).events
    assert isinstance(events[-1], SessionEnded)
    assert events[-1].reason == "stopped by SIGTERM"
    (closed,) = [e for e in events if isinstance(e, ConnectionClosed)]
    assert closed.reason == "stopped by SIGTERM again; the upstream's answer was not waited for"
    assert closed.abnormal
