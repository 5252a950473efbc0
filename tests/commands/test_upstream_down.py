"""A proxy in front of a plugin that is down refuses as the plugin would, instead of
accepting and resetting every connection (which sent the real GOLEM client, reconnecting
recursively, into 132-217 connections in 0.17 s). Run as a user runs it: the CLI in its own
process, the headless plugin as the upstream, a client with the real client's reconnect
rules counting its connection attempts."""

from __future__ import annotations

import queue
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from golem_proxy.events import UpstreamStatus
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.reconnecting_client import ClientGaveUp, ReconnectingClient
from tests.support.cli_helpers import start_cli


class RunningCli:
    """The CLI as a subprocess, its stdout and stderr read by threads into queues."""

    def __init__(self, *args: str) -> None:
        self.process = start_cli(*args)
        self.out: queue.Queue[str] = queue.Queue()
        self.err: queue.Queue[str] = queue.Queue()
        self.lines: list[str] = []
        self.err_lines: list[str] = []
        self._readers = [
            threading.Thread(target=_pump, args=(stream, lines), daemon=True)
            for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err))
        ]
        for reader in self._readers:
            reader.start()

    def wait_for(self, pattern: str, *, stderr: bool = False, timeout: float = 20) -> str:
        """The next line matching ``pattern`` (polled until ``timeout``)."""
        source, seen = (self.err, self.err_lines) if stderr else (self.out, self.lines)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = source.get(timeout=0.05)
            except queue.Empty:
                continue
            seen.append(line)
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matching {pattern!r}: {seen!r}")

    def stdout_lines(self) -> list[str]:
        """Every line the process wrote on stdout (call once it has exited)."""
        for reader in self._readers:
            reader.join(10)
        lines = list(self.lines)
        while not self.out.empty():
            lines.append(self.out.get_nowait())
        return lines

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def _pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A port the headless plugin listened on, now closed: connecting is refused."""
    with PluginProcess(seed=3) as plugin:
        port = plugin.main.port
    yield port


def test_a_proxy_before_a_downed_plugin_refuses_as_the_plugin_would(
    dead_port: int, tmp_path: Path
) -> None:
    direct = ReconnectingClient("127.0.0.1", dead_port)
    with pytest.raises(ClientGaveUp):
        direct.connect()
    assert direct.attempts == 1

    record = tmp_path / "down.jsonl"
    cli = RunningCli(
        "proxy", "--route", f"127.0.0.1:0=127.0.0.1:{dead_port}", "--record", str(record)
    )
    try:
        cli.wait_for(rf"upstream 127\.0\.0\.1:{dead_port} is not listening yet", stderr=True)
        port = int(re.findall(r"127\.0\.0\.1:(\d+) →", cli.wait_for(r" → "))[0])
        through = ReconnectingClient("127.0.0.1", port)
        with pytest.raises(ClientGaveUp):
            through.connect()
        assert through.attempts <= direct.attempts + 1
        cli.wait_for("upstream down")
        again = ReconnectingClient("127.0.0.1", port)
        with pytest.raises(ClientGaveUp):
            again.connect()
        assert again.attempts == direct.attempts  # refused, as direct

        with PluginProcess(seed=3, port=dead_port):
            cli.wait_for("upstream back")
            back = ReconnectingClient("127.0.0.1", port)
            back.connect()
            assert back.send_command("ping")["result"]
            back.disconnect()
        assert cli.stop() == 0
    finally:
        if cli.process.poll() is None:
            cli.process.kill()
            cli.process.wait()
    changes = [e for e in read_recording(str(record)).events if isinstance(e, UpstreamStatus)]
    assert [change.up for change in changes] == [False, True]
    down_lines = [line for line in cli.lines if "upstream down" in line]
    assert len(down_lines) <= 1  # said once, not per refused client
