"""An answer to a client that closed without reading it is recorded undelivered ("client gone")
whichever the proxy reads first, the answer or the client's FIN, with the spool as through the
pipe: a chunk handed on before its write (`Connection.forward`, ``--observer-spool``) is said
undelivered after it (``UNDELIVERED_LAST``), and the observing process publishes no frame of it
before it knows whether that follows. The real command line and real loopback sockets."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionClosed, Direction, FrameSeen
from golem_proxy.live.spool_place import BESIDE, SPOOL_DIR_ENV
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import wait_for

CLIENTS = 24
"""Clients each closing with its answer on the way; the proxy's two pumps wake together for
each, in an order trio draws at random: one in two took the answer first."""


def _serving(upstream: socket.socket, size: int) -> socket.socket:
    """The upstream's connection that brings a request of ``size`` bytes, read whole (a
    connection closed before any byte, the proxy's look at the upstream, is passed over)."""
    while True:
        served, _ = upstream.accept()
        served.settimeout(20)
        got = b""
        while len(got) < size:
            chunk = served.recv(65536)
            if not chunk:
                break
            got += chunk
        if got:
            assert len(got) == size, got
            return served
        served.close()


def _stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped now (a signal's stop takes effect a moment after it is sent)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] == "T"


def _closes(record: Path) -> int:
    return record.read_text(errors="replace").count('"kind":"close"')


@pytest.mark.parametrize(
    "observer", [("--observer-spool",), ("--observer", "child-process")], ids=["spool", "pipe"]
)
def test_an_answer_that_comes_in_with_the_clients_fin_is_recorded_undelivered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, observer: tuple[str, ...]
) -> None:
    """Each client sends a call and closes; the proxy is stopped (SIGSTOP) while the answer
    and the client's FIN reach its sockets, so that both wait for it together. The client's
    closed socket refuses the answer with a reset, unacknowledged: every answer is recorded
    ``undelivered: client gone``. Before, one written ahead of the FIN's read (the answer's
    pump ran first) was recorded delivered, its connection closed ``client reset the
    connection``, and the spool held no word of it."""
    monkeypatch.setenv(SPOOL_DIR_ENV, BESIDE)
    record = tmp_path / "s.jsonl"
    with socket.create_server(("127.0.0.1", 0)) as upstream:
        upstream.settimeout(20)
        cli = start_proxy_cli(
            "--route",
            f"127.0.0.1:0=127.0.0.1:{upstream.getsockname()[1]}",
            "--record",
            str(record),
            *observer,
        )
        try:
            for n in range(CLIENTS):
                request = GOLEM.encode({"id": n, "method": "echo", "params": {"n": n}})
                client = socket.create_connection(("127.0.0.1", cli.port), timeout=20)
                client.sendall(request)
                with _serving(upstream, len(request)) as served:
                    os.kill(cli.process.pid, signal.SIGSTOP)
                    try:
                        wait_for(lambda: _stopped(cli.process.pid), what="the proxy stopped")
                        served.sendall(GOLEM.encode({"id": n, "result": {"n": n}}))
                        client.close()
                        time.sleep(0.05)  # both in the proxy's sockets before it runs on
                    finally:
                        os.kill(cli.process.pid, signal.SIGCONT)
                    # The proxy has the answer: the upstream may go (it ends a connection
                    # the proxy found no reason to end).
                    time.sleep(0.05)
                wait_for(lambda n=n: _closes(record) > n, what=f"connection {n + 1} closed")
            cli.stop()
        finally:
            cli.kill()
    events = read_recording(str(record)).events
    answers = [e for e in events if isinstance(e, FrameSeen) and e.direction is Direction.S2C]
    assert len(answers) == CLIENTS, [type(e).__name__ for e in events]
    closes = {e.conn: e.reason for e in events if isinstance(e, ConnectionClosed)}
    delivered = [(e.conn, closes.get(e.conn)) for e in answers if e.undelivered != "client gone"]
    assert delivered == [], delivered
