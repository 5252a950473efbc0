"""A JSON-RPC upstream flooding its client with notifications, through ``golem-proxy proxy
--record --quiet`` as a user runs it: each was logged and recorded as ``malformed
missing-id`` plus two violations (three lines each, even quiet; a recording 11 times the
traffic). Now each is one frame line, the quiet log says nothing of them, and ``show`` and
``stats`` list and count them."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_helpers import run_cli

from .test_upstream_down import RunningCli

NOTES = 20_000
NOTE = b'{"jsonrpc":"2.0","method":"tick","params":{"n":1%06d}}\n'
CALL = b'{"jsonrpc":"2.0","id":1,"method":"set_vim","params":{"enabled":true}}\n'


@pytest.fixture
def flooding_upstream() -> Iterator[int]:
    """A server that answers nothing and sends `NOTES` notifications to each client that
    says something; its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(30)

    def serve() -> None:
        while True:  # the proxy's start-up check connects too, and says nothing
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                if not conn.recv(4096):
                    continue
                conn.sendall(b"".join(NOTE % n for n in range(NOTES)))
                with contextlib.suppress(OSError):
                    conn.recv(10)  # until the client or the proxy goes
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    thread.join(5)


def _lines(path: Path) -> int:
    with open(path, "rb") as stream:
        return sum(1 for _ in stream)


def test_a_notification_flood_is_recorded_once_each_and_not_logged_quiet(
    flooding_upstream: int, tmp_path: Path
) -> None:
    record = tmp_path / "flood.jsonl"
    cli = RunningCli(
        "proxy",
        "--profile",
        "jsonrpc-ndjson",
        "--route",
        f"127.0.0.1:0=127.0.0.1:{flooding_upstream}",
        "--record",
        str(record),
        "--quiet",
    )
    traffic = NOTES * len(NOTE % 0)
    try:
        port = int(cli.wait_for(r" → ").split("127.0.0.1:")[1].split()[0])
        cli.wait_for("Ctrl-C to stop")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(CALL)
            received = 0
            while received < traffic:
                chunk = client.recv(1 << 20)
                assert chunk, "the proxy closed before the flood was through"
                received += len(chunk)
            # Every notification reaches the recording (header, open, call, notifications).
            deadline = time.monotonic() + 60
            while _lines(record) < NOTES + 3 and time.monotonic() < deadline:
                time.sleep(0.1)
        assert cli.stop() == 0
    finally:
        if cli.process.poll() is None:
            cli.process.kill()
            cli.process.wait()
    quiet = [line for line in cli.stdout_lines() if "tick" in line or "malformed" in line]
    assert quiet == []

    lines = record.read_bytes().splitlines()
    kinds = [json.loads(line).get("kind") for line in lines[1:]]
    assert kinds.count("frame") == NOTES + 1
    assert "violation" not in kinds
    assert len(lines) <= NOTES + 10
    assert record.stat().st_size <= 4 * traffic  # one short line per 57-byte notification

    shown = run_cli("show", str(record), "--json")
    assert shown.returncode == 0, shown.stderr
    statuses = [json.loads(line)["status"] for line in shown.stdout.splitlines()]
    assert statuses.count("notification") == NOTES
    counted = run_cli("stats", str(record), "--json")
    assert counted.returncode == 0, counted.stderr
    rows = {row["method"]: row for row in json.loads(counted.stdout)["methods"]}
    assert rows["tick"]["count"] == NOTES and rows["tick"]["errors"] == 0
