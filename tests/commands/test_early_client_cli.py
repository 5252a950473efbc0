"""A client that connects the moment ``golem-proxy proxy`` lets it is served at once: the
proxy accepts no connection before it can serve it (before, the port accepted while the
observing process started, and the client's first call waited ~1 s that its recording, which
stamps a call when the proxy reads it, did not show)."""

from __future__ import annotations

import json
import socket
import struct
import time
from pathlib import Path

import pytest

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import interrupt, start_cli, wait_for_line
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

plugin = plugin_fixture(seed=11)

CONNECT_FOR = 30.0
"""Seconds the client keeps trying to connect while the proxy starts."""


def _connect_as_soon_as_possible(path: str) -> socket.socket:
    """Connect to the Unix socket at ``path`` as soon as it accepts, trying every 2 ms."""
    deadline = time.monotonic() + CONNECT_FOR
    while True:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(path)
        except OSError:  # not there yet, or refused: nothing listens yet
            client.close()
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} never accepted") from None
            time.sleep(0.002)
            continue
        return client


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_client_connecting_at_once_waits_no_longer_than_its_recording_says(
    tmp_path: Path, plugin: PluginProcess, observer: str
) -> None:
    path = str(tmp_path / "p.sock")
    recording = tmp_path / "early.jsonl"
    proxy = start_cli(
        "proxy", "--route", f"unix:{path}={plugin.main}", "--record", str(recording),
        "--observer", observer,
    )  # fmt: skip
    try:
        client = _connect_as_soon_as_possible(path)
        with client:
            client.settimeout(30)
            started = time.monotonic()
            body = json.dumps({"id": "a1", "method": "ping", "params": {}}).encode()
            client.sendall(struct.pack("!I", len(body)) + body)
            (size,) = struct.unpack("!I", receive_exactly(client, 4))
            receive_exactly(client, size)
            waited = time.monotonic() - started
        wait_for_line(proxy, "Ctrl-C to stop")
    finally:
        assert interrupt(proxy) == 0
    times = {
        line["dir"]: line["t"]
        for line in map(json.loads, recording.read_text().splitlines()[1:])
        if line["kind"] == "frame" and line.get("id") == "a1"
    }
    recorded = times["s2c"] - times["c2s"]
    # What the client waited is what the recording says, within scheduling noise; before,
    # the client waited out the observing process's start (~1 s) on top.
    assert waited - recorded < 0.3, (waited, recorded)
