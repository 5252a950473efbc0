"""A call sent on a connection the proxy accepted while the plugin was down is recorded,
undelivered, saying the plugin could not be reached.

The proxy listens; the plugin does not. A client connects, sends its call at once and is reset
once the proxy's own connect is refused. The proxy read that call and never forwarded it: every
view has its row, `undelivered (upstream unreachable: connection refused)`, and the close says
how many bytes were read and not sent. A client that sends nothing is reset as promptly as
before. With observation in the proxy's process and in a process of its own."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import (
    ConnectionClosed,
    Direction,
    FrameSeen,
    FramingErrorSeen,
    ViolationSeen,
)
from golem_proxy.live.unreachable import BUDGET, CUT_HOW
from golem_proxy.recording.format import read_recording
from tests.support.cli_helpers import interrupt, reap, run_cli, start_cli, wait_for_line

WHY = "upstream unreachable: connection refused"
RESET_DEADLINE = 2.0
"""Seconds a client may wait for its reset once the upstream refused (the read of what it
sent takes 50 ms at most)."""


@pytest.fixture(params=["in-process", "child-process"])
def observer(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _refusing_port() -> int:
    """A loopback port nothing listens on: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_proxy(record: Path, observer: str) -> tuple[subprocess.Popen[str], int, int]:
    upstream = _refusing_port()
    proxy = start_cli(
        "proxy", "--quiet", "--observer", observer, "--record", str(record),
        "--route", f"127.0.0.1:0=127.0.0.1:{upstream}",
    )  # fmt: skip
    listen = int(wait_for_line(proxy, r"127\.0\.0\.1:(\d+) →").group(1))
    return proxy, listen, upstream


def _reset_after(client: socket.socket) -> float:
    """Seconds until ``client`` reads its reset (fails the test on anything else)."""
    started = time.monotonic()
    client.settimeout(10)
    with pytest.raises(ConnectionResetError):
        client.recv(100)
    return time.monotonic() - started


def _stop(proxy: subprocess.Popen[str]) -> tuple[str, str]:
    """Ctrl-C the proxy; its stdout (the live log) and stderr."""
    try:
        assert interrupt(proxy) == 0
        assert proxy.stdout is not None and proxy.stderr is not None
        return proxy.stdout.read(), proxy.stderr.read()
    finally:
        reap(proxy)


def test_a_call_to_an_unreachable_plugin_is_recorded_undelivered(
    tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "refused.jsonl"
    proxy, listen, upstream = _start_proxy(record, observer)
    request = GOLEM.encode({"id": "c1", "method": "ping", "params": {}})
    try:
        with socket.create_connection(("127.0.0.1", listen), timeout=10) as client:
            client.sendall(request)
            assert _reset_after(client) < RESET_DEADLINE
    finally:
        logged, closing = _stop(proxy)
    events = read_recording(str(record)).events
    # Byte-exact, as the client sent it, and marked as never having reached the plugin.
    (frame,) = [e for e in events if isinstance(e, FrameSeen)]
    assert frame.direction is Direction.C2S and frame.size == len(request)
    assert frame.payload == request[4:]  # after its 4-byte length header
    assert getattr(frame.message, "id", None) == "c1" and frame.undelivered == WHY
    (close,) = [e for e in events if isinstance(e, ConnectionClosed)]
    assert close.reason == (
        f"upstream 127.0.0.1:{upstream} unreachable: connection refused; "
        f"{len(request)} bytes read from the client not sent"
    )
    assert close.abnormal and close.bytes_c2s == close.bytes_s2c == 0
    shown = run_cli("show", str(record), "--json")
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines() if line.strip()]
    assert [(r["conn"], r["id"], r["method"], r["status"], r["undelivered"]) for r in rows] == [
        (1, "c1", "ping", f"undelivered ({WHY})", WHY)
    ]
    table = run_cli("show", str(record))
    assert f"ping    undelivered ({WHY})" in table.stdout, table.stdout
    check = run_cli("check", str(record))
    assert f"1 undelivered ({WHY})" in check.stdout + check.stderr
    # The live log has its line, quiet as it is, and the close says what was not sent.
    assert any(
        "#1" in line and "ping" in line and f"undelivered ({WHY})" in line and "48 B →" in line
        for line in logged.splitlines()
    ), logged
    assert f"{len(request)} bytes read from the client not sent" in logged
    assert "1 request without an answer (1 never delivered)" in closing


def test_a_client_that_sends_nothing_is_reset_promptly(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "silent.jsonl"
    proxy, listen, upstream = _start_proxy(record, observer)
    try:
        with socket.create_connection(("127.0.0.1", listen), timeout=10) as client:
            assert _reset_after(client) < RESET_DEADLINE
    finally:
        _stop(proxy)
    events = read_recording(str(record)).events
    assert not [e for e in events if isinstance(e, FrameSeen)]
    (close,) = [e for e in events if isinstance(e, ConnectionClosed)]
    assert close.reason == f"upstream 127.0.0.1:{upstream} unreachable: connection refused"


def _cut_row(read: int, size: int) -> str:
    return f"undelivered ({WHY}); {read:,} of {size:,} bytes read before the proxy reset the client"


def test_a_call_still_arriving_when_the_proxy_stops_reading_is_no_error_of_the_clients(
    tmp_path: Path, observer: str
) -> None:
    """The client writes its call in two parts, the second after the proxy stopped reading
    (50 ms): the client never ended its stream, the proxy did. The part read is the call's
    row, undelivered and read in part, not a truncated frame of the client's: no violation."""
    record = tmp_path / "slow.jsonl"
    proxy, listen, upstream = _start_proxy(record, observer)
    request = GOLEM.encode({"id": "c1", "method": "ping", "params": {"pad": "y" * 100}})
    try:
        with socket.create_connection(("127.0.0.1", listen), timeout=10) as client:
            client.sendall(request[:20])  # the rest would come later: the proxy resets it first
            assert _reset_after(client) < RESET_DEADLINE
    finally:
        logged, closing = _stop(proxy)
    events = read_recording(str(record)).events
    (error,) = [e for e in events if isinstance(e, FramingErrorSeen)]
    assert (error.cut, error.undelivered, error.raw) == (CUT_HOW, WHY, request[:20])
    assert error.detail == f"20 of {len(request)} bytes read before the proxy reset the client"
    assert not [e for e in events if isinstance(e, ViolationSeen)]
    (close,) = [e for e in events if isinstance(e, ConnectionClosed)]
    assert close.reason == (
        f"upstream 127.0.0.1:{upstream} unreachable: connection refused; "
        "20 bytes read from the client not sent"
    )
    shown = run_cli("show", str(record), "--json")
    rows = [json.loads(line) for line in shown.stdout.splitlines() if line.strip()]
    assert [(r["conn"], r["status"]) for r in rows] == [(1, _cut_row(20, len(request)))]
    check = run_cli("check", str(record))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "no contract violations" in check.stdout and "truncated" not in check.stdout
    assert f"#1   → {_cut_row(20, len(request))}" in logged, logged
    assert "framing error" not in logged + closing
    assert "1 frame never delivered, read in part" in closing


def test_a_call_larger_than_the_proxy_reads_is_read_within_its_budget(
    tmp_path: Path, observer: str
) -> None:
    """A call larger than what the proxy reads at once from the clients of unreachable
    upstreams (`unreachable.BUDGET`): no more than that is read (the rest is not: the close
    says so when the budget, not the 50 ms, stopped the reading), and the row says how much."""
    record = tmp_path / "large.jsonl"
    proxy, listen, upstream = _start_proxy(record, observer)
    request = GOLEM.encode({"id": "big", "method": "ping", "params": {"pad": "z" * (6 << 20)}})
    try:
        client = socket.create_connection(("127.0.0.1", listen), timeout=10)
        # Reset before it could write it all, or once it did (the sockets' buffers).
        with client, contextlib.suppress(OSError):
            client.sendall(request)
            client.recv(1)
    finally:
        _stop(proxy)
    events = read_recording(str(record)).events
    (error,) = [e for e in events if isinstance(e, FramingErrorSeen)]
    found = re.fullmatch(
        rf"([\d,]+) of {len(request):,} bytes read before the proxy reset the client", error.detail
    )
    assert found is not None, error.detail
    read = int(found.group(1).replace(",", ""))
    assert 0 < read <= BUDGET and error.cut == CUT_HOW and error.undelivered == WHY
    assert not [e for e in events if isinstance(e, ViolationSeen)]
    (close,) = [e for e in events if isinstance(e, ConnectionClosed)]
    said = f"upstream 127.0.0.1:{upstream} unreachable: connection refused; {read:,} bytes read "
    past = (
        f"from the client not sent; what it sent after them was not read (past the "
        f"{BUDGET:,} bytes read at once from clients of unreachable upstreams)"
    )
    # On a slow machine the 50 ms may end the reading first: then nothing more is said.
    assert close.reason in (said + past, said + "from the client not sent"), close.reason
    if read == BUDGET:
        assert close.reason == said + past
