"""``proxy --fault`` as a user runs it, on clients that send most of a large frame and close:
the frame-by-frame route forwards each cut frame in one burst at the end, the observer sheds
part of it, and still every byte forwarded is in the recording (frames, framing errors,
gaps), and every connection is reported truncated, with either observer, shedding or not."""

from __future__ import annotations

import base64
import json
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from bench.threaded_server import ThreadedServer

CLIENTS = 4
DECLARED = 3 << 20
"""What each client's frame header says."""
SENT = 2 << 20
"""What each client sends of it (header included) before it closes."""


class Sink(ThreadedServer):
    """An upstream that reads everything and counts it, per connection."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.lock = threading.Lock()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with self.lock:
            index = len(self.received)
            self.received.append(0)
        with conn:
            while data := conn.recv(1 << 20):
                self.received[index] += len(data)


def _cut_frame() -> bytes:
    body = b'{"id": "big", "method": "m", "params": {"s": "'
    return struct.pack("!I", DECLARED) + body + b"x" * (SENT - 4 - len(body))


def _read(record: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in record.read_text().splitlines()[1:]]


def _accounted(lines: list[dict[str, object]], conn: int) -> int:
    """The client's bytes of ``conn`` the recording holds: frames, framing errors' and
    discarded bytes, and gaps (of bytes: an eviction's counts requests)."""
    total = 0
    for line in lines:
        if line.get("conn") != conn or line.get("dir") != "c2s":
            continue
        kind = line["kind"]
        if kind == "frame":
            total += int(str(line["size"]))
        elif kind in ("frame-error", "discarded"):
            total += len(base64.b64decode(str(line.get("raw", ""))))
        elif kind == "unobserved" and line["reason"] != "evicted":
            total += int(str(line["size"]))
    return total


@pytest.mark.parametrize(
    "observer",
    [("in-process",), ("child-process",), ("child-process", "--observer-hold", "0")],
    ids=["in-process", "child-process", "child-process-shedding"],
)
def test_every_byte_of_frames_cut_short_is_accounted_for(
    tmp_path: Path, observer: tuple[str, ...]
) -> None:
    record = tmp_path / "cut.jsonl"
    with Sink() as sink:
        cli = start_proxy_cli(
            "--route", f"main@127.0.0.1:0=127.0.0.1:{sink.port}", "--record", str(record),
            "--fault", "delay:ms=1,method=nothing", "--observer", *observer,
            "--observer-memory", "1", "--observe-frame-limit", "0.0625",
        )  # fmt: skip
        try:
            frame = _cut_frame()
            clients = [socket.create_connection(("127.0.0.1", cli.port)) for _ in range(CLIENTS)]
            for client in clients:
                client.sendall(frame)
            for client in clients:
                client.close()
            deadline = time.monotonic() + 30
            while sink.received.count(SENT) < CLIENTS and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    # The proxy's probes of the upstream (connected, closed) carry nothing.
    assert [size for size in sink.received if size] == [SENT] * CLIENTS

    lines = _read(record)
    closes = {line["conn"]: line["bytes"] for line in lines if line["kind"] == "close"}
    assert closes == {conn: {"c2s": SENT, "s2c": 0} for conn in range(1, CLIENTS + 1)}
    for conn in closes:
        assert _accounted(lines, conn) == SENT, conn
    details = [str(line["detail"]) for line in lines if line["kind"] == "unobserved"]
    assert not [detail for detail in details if "whole" in detail]  # no frame went whole

    truncated = {
        line["conn"]
        for line in lines
        if line["kind"] == "frame-error" and line["error"] == "truncated"
    }
    # Also where the forwarding process shed a frame from its first byte on: it followed the
    # framing, and says where the stream ended (tests/commands/test_shed_cut_frame_cli.py).
    assert truncated == set(closes)
