"""What the documented faults do to the real GOLEM client (`golem_proxy.testing.client.GolemClient`,
the MCP server's connection logic) against the headless plugin, through the proxy command.
docs/faults.md shows these runs; each assertion here backs one sentence there."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import ProxyCli, start_proxy_cli
from golem_core.errors import TruncatedFrame
from golem_proxy.events import FaultInjected
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import (
    GolemClient,
    RhinoCommandError,
    RhinoConnectionError,
    RhinoTimeoutError,
)
from golem_proxy.testing.plugin_process import PluginProcess


@pytest.fixture(scope="module")
def plugin() -> Iterator[PluginProcess]:
    with PluginProcess(seed=3) as running:
        yield running


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "faults.jsonl"


def proxy_with(plugin: PluginProcess, record: Path, *specs: str) -> ProxyCli:
    args = ["--route", f"127.0.0.1:0={plugin.main}", "--record", str(record), "--fault-seed", "1"]
    for spec in specs:
        args += ["--fault", spec]
    return start_proxy_cli(*args)


def test_reset_before_a_method_is_retried_by_the_client(
    plugin: PluginProcess, record: Path
) -> None:
    cli = proxy_with(plugin, record, "reset:when=before,method=scene.list_objects,times=1")
    try:
        with GolemClient("127.0.0.1", cli.port, timeout=5) as client:
            result = client.send_command("scene.list_objects", {}, timeout=5)
            assert "objects" in result
            assert client.reconnects == 1
    finally:
        log = cli.stop()
    assert "fault reset scene.list_objects withheld request" in log
    assert "closed: fault: reset" in log
    recording = read_recording(str(record))
    methods = [e.method for e in recording.exchanges()]
    assert methods == ["ping", "ping", "scene.list_objects"]  # a new connection pings first


def test_reset_every_time_gives_up_after_three_reconnects(
    plugin: PluginProcess, record: Path
) -> None:
    cli = proxy_with(plugin, record, "reset:when=before,method=scene.list_objects,p=1")
    try:
        with GolemClient("127.0.0.1", cli.port, timeout=5) as client:
            with pytest.raises(RhinoConnectionError, match="connection lost"):
                client.send_command("scene.list_objects", {}, timeout=5)
            assert client.reconnects == 3
    finally:
        cli.stop()
    faults = [e for e in read_recording(str(record)).events if isinstance(e, FaultInjected)]
    assert len(faults) == 4  # the first try and three retries


def test_dropped_response_times_out_and_is_not_retried(plugin: PluginProcess, record: Path) -> None:
    cli = proxy_with(plugin, record, "drop:method=viewport.capture")
    try:
        with GolemClient("127.0.0.1", cli.port, timeout=5) as client:
            start = time.monotonic()
            with pytest.raises(RhinoTimeoutError, match=r"no response within 0\.5 s"):
                client.send_command("viewport.capture", {"width": 8, "height": 8}, timeout=0.5)
            assert 0.5 <= time.monotonic() - start < 3
            assert client.reconnects == 0
    finally:
        log = cli.stop()
    assert "fault drop viewport.capture withheld response" in log


def test_injected_error_is_a_command_error_and_is_not_retried(
    plugin: PluginProcess, record: Path
) -> None:
    cli = proxy_with(plugin, record, "error:code=TIMEOUT,message=UI thread busy,method=viewport.*")
    try:
        with GolemClient("127.0.0.1", cli.port, timeout=5) as client:
            with pytest.raises(RhinoCommandError) as failure:
                client.send_command("viewport.capture", {}, timeout=5)
            assert (failure.value.code, failure.value.message) == ("TIMEOUT", "UI thread busy")
            assert client.reconnects == 0
            assert client.send_command("ping", {}, timeout=5) == {"alive": True}
    finally:
        log = cli.stop()
    assert "viewport.capture" in log and "TIMEOUT" in log
    statuses = [(e.method, e.error_code) for e in read_recording(str(record)).exchanges()]
    assert ("viewport.capture", "TIMEOUT") in statuses


def test_truncated_response_escapes_the_client_retry_logic(
    plugin: PluginProcess, record: Path
) -> None:
    """A finding, pinned: a response cut mid-frame raises TruncatedFrame, which is neither a
    ConnectionResetError (retried) nor a RhinoConnectionError (what callers catch). The MCP
    server's reader raises a bare ConnectionError there, which its retry does not catch either."""
    cli = proxy_with(plugin, record, "truncate:at=0.5,dir=s2c,method=scene.list_objects")
    try:
        with GolemClient("127.0.0.1", cli.port, timeout=5) as client:
            with pytest.raises(TruncatedFrame):
                client.send_command("scene.list_objects", {}, timeout=5)
            assert client.reconnects == 0
    finally:
        cli.stop()


def test_truncated_request_looks_like_a_closed_plugin_and_is_retried(
    plugin: PluginProcess, record: Path
) -> None:
    """Cut on the way in, the plugin sees half a request and the proxy closes both sides: the
    client reads a clean EOF, which it treats as a reset and retries, up to giving up."""
    cli = proxy_with(plugin, record, "truncate:at=0.5,dir=c2s,method=scene.list_objects")
    try:
        with GolemClient("127.0.0.1", cli.port, timeout=5) as client:
            with pytest.raises(RhinoConnectionError, match="closed the connection"):
                client.send_command("scene.list_objects", {}, timeout=5)
            assert client.reconnects == 3
    finally:
        cli.stop()
