"""``proxy --observer child-process --observer-hold`` as a user runs it, on a client whose last
frame is cut by the end of its stream while its connection sheds from that frame's first byte
on: the observing process never sees the frame's header, and still the recording says the
stream was truncated, as it does when any of the frame was observed
(tests/commands/test_fault_lost_frames_cli.py, tests/live/test_tap_loss.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.processes import observing_process
from bench.robustness.proxy_cli import start_proxy_cli
from bench.threaded_server import ThreadedServer
from golem_proxy.live.link_ledger import TRAIL_LIMIT
from tests.live.observer_child_helpers import wait_for


class Sink(ThreadedServer):
    """An upstream that reads everything and answers nothing."""

    def __init__(self) -> None:
        self.received = 0
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(1 << 16):
                self.received += len(data)


def _golem_call(n: int) -> bytes:
    body = json.dumps({"id": f"r{n}", "method": "echo", "params": {}}).encode()
    return struct.pack("!I", len(body)) + body


GOLEM_CUT = (
    struct.pack("!I", 5000) + b'{"id": "big", "method": "echo", "params": {"s": "' + (b"x" * 1000)
)
"""A frame's first bytes: the rest of its 5,004 still to come when the client closes."""
GOLEM_WHERE = f"{5004 - len(GOLEM_CUT)} bytes before the end of a frame"


def _line_call(n: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "echo"}).encode() + b"\n"


LINE_CUT = b'{"jsonrpc": "2.0", "id": 9, "method": "echo", "params": "' + b"x" * 1000


def _recorded(record: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in record.read_text().splitlines()[1:]]


@pytest.mark.parametrize(
    ("options", "call", "cut", "where"),
    [
        ((), _golem_call, GOLEM_CUT, GOLEM_WHERE),
        (("--observer-restarts", "0"), _golem_call, GOLEM_CUT, GOLEM_WHERE),
        (("--profile", "jsonrpc-ndjson"), _line_call, LINE_CUT, "in a line"),
    ],
    ids=["golem", "golem-no-restarts", "lines"],
)  # fmt: skip
def test_a_frame_shed_from_its_first_byte_and_cut_by_the_end_reads_truncated(
    tmp_path: Path,
    options: tuple[str, ...],
    call: Callable[[int], bytes],
    cut: bytes,
    where: str,
) -> None:
    calls = [call(n) for n in range(3)]
    record = tmp_path / "shed.jsonl"
    with Sink() as sink:
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0=127.0.0.1:{sink.port}", "--record", str(record), "-q",
            "--observer", "child-process", "--observer-hold", "0", *options,
        )  # fmt: skip
        observer = observing_process(cli.process.pid)
        stopped = False
        try:
            client = socket.create_connection(("127.0.0.1", cli.port))
            client.sendall(calls[0])
            wait_for(lambda: sink.received == len(calls[0]), what="the first call")
            os.kill(observer, signal.SIGSTOP)
            stopped = True
            # The observing process acknowledges nothing now: the second call is handed on
            # and trails; the third, past the trail limit, has the link hold the connection,
            # which sheds at once (--observer-hold 0) before the relay reads on.
            client.sendall(calls[1])
            wait_for(lambda: sink.received == sum(map(len, calls[:2])), what="the second call")
            time.sleep(TRAIL_LIMIT * 3)
            client.sendall(calls[2])
            wait_for(lambda: sink.received == sum(map(len, calls)), what="the third call")
            client.sendall(cut)  # shed from its first byte
            client.close()
            sent = sum(map(len, calls)) + len(cut)
            wait_for(lambda: sink.received == sent, what="the cut frame")
        finally:
            if stopped:
                os.kill(observer, signal.SIGCONT)
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "observation stopped" not in cli.stderr

    client_side = [line for line in _recorded(record) if line.get("dir") == "c2s"]
    gaps = [(line["reason"], line["size"]) for line in client_side if line["kind"] == "unobserved"]
    assert gaps == [("behind", len(cut))]  # the shed began at the cut frame's first byte
    truncated = [
        line["detail"]
        for line in client_side
        if line["kind"] == "frame-error" and line["error"] == "truncated"
    ]
    assert truncated == [f"stream ended {where} partly unobserved"]
