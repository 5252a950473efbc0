"""Two attacks of issue 21, measured through the CLI as a user runs it (docs/reliability.md,
"Hostile input, round 3"):

    python bench/hostile_round3.py notifications [--count N] [--wait]
    python bench/hostile_round3.py storm

``notifications``: a jsonrpc-ndjson upstream sends N server notifications (57 B each) through
``proxy --record --quiet``; the client reads them all, then Ctrl-C (at once, or with --wait
once the recording holds them all). Prints the time to exit after Ctrl-C, the log lines, the
recording's lines and size against the traffic.

``storm``: the headless plugin is stopped behind a running proxy; a client with the real GOLEM
client's reconnect rules calls once, direct and through the proxy. Prints its connection
attempts each way. Loopback only; everything bounded in time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from golem_proxy.testing.plugin_process import PluginProcess  # noqa: E402
from golem_proxy.testing.reconnecting_client import (  # noqa: E402
    ClientGaveUp,
    ReconnectingClient,
)

NOTE = b'{"jsonrpc":"2.0","method":"tick","params":{"n":1%06d}}\n'
CALL = b'{"jsonrpc":"2.0","id":1,"method":"state"}\n'


def start_proxy(*args: str) -> tuple[subprocess.Popen[str], int, list[str]]:
    """The CLI proxy, its listening port, and the list its stdout lines go to."""
    process = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", "proxy", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line)
        found = re.search(r"127\.0\.0\.1:(\d+) →", line)
        if found:
            break
    else:
        raise SystemExit(
            f"the proxy did not start: {process.stderr.read() if process.stderr else ''}"
        )
    threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True).start()
    return process, int(found.group(1)), lines


def notifications(count: int, wait: bool) -> None:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:  # the proxy's start-up check connects and says nothing
            conn, _ = server.accept()
            if conn.recv(100):
                break
        conn.sendall(b"".join(NOTE % (n % 1_000_000) for n in range(count)))
        conn.recv(10)

    threading.Thread(target=serve, daemon=True).start()
    record = Path(tempfile.mkdtemp()) / "flood.jsonl"
    upstream = server.getsockname()[1]
    route = f"127.0.0.1:0=127.0.0.1:{upstream}"
    process, port, lines = start_proxy(
        "--profile", "jsonrpc-ndjson", "--route", route, "--record", str(record), "--quiet"
    )
    traffic = count * len(NOTE % 0)
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(CALL)
        received = 0
        while received < traffic:
            chunk = client.recv(1 << 20)
            if not chunk:
                break
            received += len(chunk)
        if wait:
            started = time.monotonic()
            while _lines(record) < count + 3 and time.monotonic() - started < 600:
                time.sleep(0.5)
            print(f"recorded every notification {time.monotonic() - started:.1f} s after the flood")
        stopping = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = process.wait(120)
        print(f"exit {code} {time.monotonic() - stopping:.2f} s after Ctrl-C")
    size = record.stat().st_size
    print(f"received {received:,} of {traffic:,} bytes; log lines {len(lines):,}")
    print(
        f"recording: {_lines(record):,} lines, {size:,} bytes ({size / traffic:.1f}x the traffic)"
    )


def _lines(path: Path) -> int:
    with open(path, "rb") as stream:
        return sum(1 for _ in stream)


def storm() -> None:
    with PluginProcess(seed=3) as plugin:
        dead = plugin.main.port
    direct = ReconnectingClient("127.0.0.1", dead)
    with contextlib.suppress(ClientGaveUp):
        direct.connect()
    process, port, _ = start_proxy("--route", f"127.0.0.1:0=127.0.0.1:{dead}", "--quiet")
    through = ReconnectingClient("127.0.0.1", port)
    started = time.monotonic()
    with contextlib.suppress(ClientGaveUp):
        through.connect()
    spent = time.monotonic() - started
    process.send_signal(signal.SIGINT)
    process.wait(30)
    print(f"connection attempts: direct {direct.attempts}, through the proxy {through.attempts}")
    print(f"(through the proxy in {spent:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="attack", required=True)
    flood = sub.add_parser("notifications")
    flood.add_argument("--count", type=int, default=300_000)
    flood.add_argument("--wait", action="store_true")
    sub.add_parser("storm")
    args = parser.parse_args()
    if args.attack == "notifications":
        notifications(args.count, args.wait)
    else:
        storm()


if __name__ == "__main__":
    main()
