"""Ctrl-C right after a burst: the log shows what the session published, or says how much it
did not show (issue 22 point 7). Before, a consumer that missed the last events of a session
was never told, and a stop published its decoded backlog faster than any consumer's bound."""

from __future__ import annotations

import io
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest
import trio
from rich.console import Console

from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionOpened, EventsMissed
from golem_proxy.live.hub import EventHub, Subscription
from golem_proxy.live.log import EventLog, Verbosity
from golem_proxy.live.session import _log_events
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import ROOT
from tests.support.plugin_fixture import plugin_fixture

NOT_SHOWN = re.compile(r"… (\d+) events not shown \(the proxy stopped before the log caught up")


def opened(number: int) -> ConnectionOpened:
    return ConnectionOpened(
        conn=number,
        route="main",
        client=f"127.0.0.1:{50000 + number}",
        upstream="127.0.0.1:9876",
        t=0.0,
    )


def hub_after_a_burst(
    count: int, buffer: int, widen: Optional[int] = None
) -> tuple[EventHub, Subscription]:
    """A closed hub that published ``count`` connections opening, and its one subscription
    (of ``buffer`` events, widened to ``widen`` before the burst)."""
    hub = EventHub()
    subscription = hub.subscribe("log", buffer=buffer)
    if widen is not None:
        hub.widen(widen)
    for number in range(count):
        hub.publish(opened(number), 1.0)
    hub.close()
    return hub, subscription


@pytest.mark.trio
async def test_a_consumer_that_missed_the_last_events_is_told_at_the_end() -> None:
    _, subscription = hub_after_a_burst(10, buffer=3)
    events = [event async for batch in subscription.batches() for event in batch]
    assert [type(event) for event in events] == [ConnectionOpened] * 3 + [EventsMissed]
    last = events[-1]
    assert isinstance(last, EventsMissed) and last.count == 7
    assert subscription.total_missed == 7


@pytest.mark.trio
async def test_a_widened_hub_queues_what_a_stopping_session_publishes() -> None:
    _, subscription = hub_after_a_burst(50, buffer=3, widen=100)
    events = [event async for batch in subscription.batches() for event in batch]
    assert len(events) == 50 and subscription.total_missed == 0


@pytest.mark.trio
async def test_a_log_cut_by_its_deadline_says_how_many_events_it_did_not_show() -> None:
    hub, subscription = hub_after_a_burst(500, buffer=1000)
    shown = io.StringIO()
    log = EventLog(Console(file=shown, width=200), GOLEM, Verbosity.NORMAL)
    with trio.CancelScope() as scope:
        scope.cancel()  # the deadline has passed before the log could start
        await _log_events(hub, subscription, log)
    found = NOT_SHOWN.search(shown.getvalue())
    assert found is not None, shown.getvalue()
    printed = shown.getvalue().count("connected ")
    assert printed + int(found.group(1)) == 500


plugin = plugin_fixture(seed=5)


def burst_then_ctrl_c(
    plugin: PluginProcess, tmp_path: Path, calls: int, *args: str
) -> tuple[int, str]:
    """A quiet proxy logging to a file; ``calls`` calls (every fifth to a method the plugin
    does not have), 32 in flight; the client hangs up and SIGINT follows at once."""
    out_path = tmp_path / "px.out"
    with out_path.open("wb") as out:
        proxy = subprocess.Popen(
            [
                *(sys.executable, "-m", "golem_proxy", "proxy", "--quiet", *args),
                *("--route", f"main@127.0.0.1:0={plugin.main}"),
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
        )
    try:
        port = _listening_port(out_path)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            _pipelined_calls(sock, calls, window=32)
        proxy.send_signal(signal.SIGINT)
        _, errors = proxy.communicate(timeout=60)
    finally:
        if proxy.poll() is None:
            proxy.kill()
            proxy.wait()
    # Nothing on stderr but the closing summary (the log went to stdout, whole).
    assert re.fullmatch(
        rb"golem-proxy proxy: \d+ exchanges \([^)]*\), not recorded[^\n]*\n", errors
    ), errors
    return proxy.returncode, out_path.read_text("utf-8")


def _listening_port(out_path: Path) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"main: 127\.0\.0\.1:(\d+)", out_path.read_text("utf-8"))
        if found is not None:
            return int(found.group(1))
        time.sleep(0.05)
    raise AssertionError("the proxy did not start listening")


def _pipelined_calls(sock: socket.socket, calls: int, window: int) -> None:
    sent = answered = 0
    pending = bytearray()
    while answered < calls:
        while sent < calls and sent - answered < window:
            method = "nope.missing" if sent % 5 == 0 else "ping"
            sock.sendall(GOLEM.encode({"id": f"r{sent}", "method": method, "params": {}}))
            sent += 1
        chunk = sock.recv(1 << 20)
        assert chunk, "the proxy hung up"
        pending += chunk
        while len(pending) >= 4:
            size = int.from_bytes(pending[:4], "big")
            if len(pending) < 4 + size:
                break
            del pending[: 4 + size]
            answered += 1


def _error_lines(shown: str) -> int:
    return sum("nope.missing  " in line for line in shown.splitlines())


def test_ctrl_c_after_a_burst_logs_every_error(plugin: PluginProcess, tmp_path: Path) -> None:
    code, shown = burst_then_ctrl_c(plugin, tmp_path, 5000, "--drain-timeout", "10")
    assert code == 0
    assert _error_lines(shown) == 1000, shown[-2000:]
    assert NOT_SHOWN.search(shown) is None


def test_a_log_without_time_to_catch_up_says_so(plugin: PluginProcess, tmp_path: Path) -> None:
    code, shown = burst_then_ctrl_c(plugin, tmp_path, 5000, "--drain-timeout", "0")
    assert code == 0
    found = NOT_SHOWN.search(shown)
    # Either the log had caught up before the stop, or it says what it left out.
    assert _error_lines(shown) == 1000 or found is not None, shown[-2000:]
