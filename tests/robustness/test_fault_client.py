"""What the documented faults do to the real GOLEM client (`golem_proxy.testing.client.GolemClient`,
the MCP server's connection logic) against the headless plugin, through the proxy command.
docs/faults.md shows these runs; each assertion here backs one sentence there."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.errors import TruncatedFrame
from golem_proxy.events import FaultInjected, FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import (
    GolemClient,
    RhinoCommandError,
    RhinoConnectionError,
    RhinoTimeoutError,
)
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.plugin_fixture import plugin_fixture

plugin = plugin_fixture(seed=3)


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "faults.jsonl"


@dataclass
class FaultedRun:
    client: GolemClient
    log: str = ""
    """Everything the proxy printed, once the run ended."""


@contextmanager
def faulted_run(plugin: PluginProcess, record: Path, spec: str) -> Iterator[FaultedRun]:
    """The real client through a proxy to ``plugin`` that injects the fault ``spec`` and records
    to ``record``, for the block; the proxy is stopped (Ctrl-C) when it ends."""
    args = ["--route", f"127.0.0.1:0={plugin.main}", "--record", str(record), "--fault-seed", "1"]
    cli = start_proxy_cli(*args, "--fault", spec)
    try:
        with GolemClient("127.0.0.1", cli.port, timeout=5) as client:
            run = FaultedRun(client)
            yield run
    finally:
        log = cli.stop()
    run.log = log


def test_reset_before_a_method_is_retried_by_the_client(
    plugin: PluginProcess, record: Path
) -> None:
    with faulted_run(plugin, record, "reset:when=before,method=scene.list_objects,times=1") as run:
        result = run.client.send_command("scene.list_objects", {}, timeout=5)
        assert "objects" in result
        assert run.client.reconnects == 1
    assert "fault reset scene.list_objects withheld request" in run.log
    assert "closed: fault: reset" in run.log
    recording = read_recording(str(record))
    methods = [e.method for e in recording.exchanges()]
    assert methods == ["ping", "ping", "scene.list_objects"]  # a new connection pings first


def test_dropped_response_times_out_and_is_not_retried(plugin: PluginProcess, record: Path) -> None:
    with faulted_run(plugin, record, "drop:method=viewport.capture") as run:
        start = time.monotonic()
        with pytest.raises(RhinoTimeoutError, match=r"no response within 0\.5 s"):
            run.client.send_command("viewport.capture", {"width": 8, "height": 8}, timeout=0.5)
        # Not a speed: it waited its call's 0.5 s, not the 5 s connection timeout.
        assert 0.5 <= time.monotonic() - start < 4.5
        assert run.client.reconnects == 0
    assert "fault drop viewport.capture withheld response" in run.log
    sent = [
        e
        for e in read_recording(str(record)).events
        if isinstance(e, FrameSeen) and getattr(e.message, "method", None) == "viewport.capture"
    ]
    assert len(sent) == 1, sent


def test_injected_error_is_a_command_error_and_is_not_retried(
    plugin: PluginProcess, record: Path
) -> None:
    busy = "error:code=TIMEOUT,message=UI thread busy,method=viewport.*"
    with faulted_run(plugin, record, busy) as run:
        with pytest.raises(RhinoCommandError) as failure:
            run.client.send_command("viewport.capture", {}, timeout=5)
        assert (failure.value.code, failure.value.message) == ("TIMEOUT", "UI thread busy")
        assert run.client.reconnects == 0
        assert run.client.send_command("ping", {}, timeout=5) == {"alive": True}
    assert "viewport.capture" in run.log and "TIMEOUT" in run.log
    statuses = [(e.method, e.error_code) for e in read_recording(str(record)).exchanges()]
    assert ("viewport.capture", "TIMEOUT") in statuses


@pytest.mark.parametrize(
    ("spec", "error", "match", "reconnects", "faults"),
    [
        pytest.param(
            "reset:when=before,method=scene.list_objects,p=1",
            RhinoConnectionError,
            "connection lost",
            3,
            4,  # the first try and three retries
            id="reset-every-time-gives-up-after-three-reconnects",
        ),
        # A finding, pinned: a response cut mid-frame raises TruncatedFrame, which is neither a
        # ConnectionResetError (retried) nor a RhinoConnectionError (what callers catch). The
        # MCP server's reader raises a bare ConnectionError there, which its retry does not
        # catch either.
        pytest.param(
            "truncate:at=0.5,dir=s2c,method=scene.list_objects",
            TruncatedFrame,
            None,
            0,
            None,
            id="truncated-response-escapes-the-retry-logic",
        ),
        # Cut on the way in, the plugin sees half a request and the proxy closes both sides:
        # the client reads a clean EOF, which it treats as a reset and retries, up to giving up.
        pytest.param(
            "truncate:at=0.5,dir=c2s,method=scene.list_objects",
            RhinoConnectionError,
            "closed the connection",
            3,
            None,
            id="truncated-request-looks-like-a-closed-plugin-and-is-retried",
        ),
    ],
)
def test_a_fault_on_every_try_fails_the_call_after_the_retries_it_allows(
    plugin: PluginProcess,
    record: Path,
    spec: str,
    error: type[Exception],
    match: Optional[str],
    reconnects: int,
    faults: Optional[int],
) -> None:
    with faulted_run(plugin, record, spec) as run:
        with pytest.raises(error, match=match):
            run.client.send_command("scene.list_objects", {}, timeout=5)
        assert run.client.reconnects == reconnects
    if faults is not None:
        found = [e for e in read_recording(str(record)).events if isinstance(e, FaultInjected)]
        assert len(found) == faults
