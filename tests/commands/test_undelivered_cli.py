"""An answer the upstream sends after its client is gone, as a user sees it: ``golem-proxy
proxy --record`` between a client and an upstream on 127.0.0.1, then ``show`` and ``export``
on the recording. The proxy reads the answer but cannot write it (the client reset): the
exchange is answered, and marked undelivered, in both observer modes, on a plain route and on
a faulted one (each forwards on a path of its own), with ``--enforce-limits`` too (its bytes
are checked before they are sent)."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_proxy.events import ExchangeCompleted
from golem_proxy.recording.format import read_recording
from tests.support.cli_helpers import run_cli, wait_for_line

REQUEST = json.dumps({"id": "a1", "method": "scene.slow", "params": {}}).encode()
ANSWER = json.dumps({"id": "a1", "result": {"done": True}, "error": None}).encode()


def framed(payload: bytes) -> bytes:
    return struct.pack("!I", len(payload)) + payload


class SlowUpstream:
    """Answers one request, once told to (`answer`), after the client's FIN reached it."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.client_done = threading.Event()
        self.answer = threading.Event()
        self.finished = threading.Event()
        self.request_in = threading.Event()
        self.fin_in = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            peer, _ = self.listener.accept()
            with peer:
                head = peer.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:  # the proxy's readiness probe
                    continue
                peer.recv(struct.unpack("!I", head)[0], socket.MSG_WAITALL)
                self.request_in.set()
                assert peer.recv(1) == b""  # the client's FIN, passed on
                self.fin_in.set()
                self.answer.wait(20)
                peer.sendall(framed(ANSWER))
                self.finished.set()
                return

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def upstream() -> Iterator[SlowUpstream]:
    up = SlowUpstream()
    yield up
    up.close()


def client_leaves(port: int, upstream: SlowUpstream, how: str) -> None:
    """Send the request, half-close, then go: ``reset`` (a write to it then fails) or
    ``close`` (the first write after it is still taken by the kernel)."""
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(framed(REQUEST))
    client.shutdown(socket.SHUT_WR)
    assert upstream.fin_in.wait(20), "the upstream never saw the client's FIN"
    if how == "reset":
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    upstream.answer.set()
    assert upstream.finished.wait(20)


MODES = [
    pytest.param([], id="child-process"),
    pytest.param(["--observer", "in-process"], id="in-process"),
    pytest.param(["--fault", "delay:ms=1,p=0"], id="faulted-route"),
    # Checked before they are sent, the bytes are recorded after the write all the same.
    pytest.param(["--enforce-limits"], id="enforce-limits"),
    pytest.param(["--enforce-limits", "--observer", "in-process"], id="enforce-limits-in-process"),
    pytest.param(
        ["--enforce-limits", "--fault", "delay:ms=1,p=0", "--observer", "in-process"],
        id="enforce-limits-faulted-in-process",
    ),
]


@pytest.mark.parametrize("extra", MODES)
def test_an_answer_the_client_never_got_is_recorded_and_shown_undelivered(
    upstream: SlowUpstream, tmp_path: Path, extra: list[str]
) -> None:
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{upstream.port}"
    cli = start_proxy_cli("--route", route, "--record", str(record), *extra)
    try:
        client_leaves(cli.port, upstream, "reset")
        # The exchange is logged once the proxy decoded the answer.
        logged = wait_for_line(cli.process, r"scene\.slow").string
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "ok (undelivered: client gone)" in logged

    recording = read_recording(str(record))
    (exchange,) = [e for e in recording.events if isinstance(e, ExchangeCompleted)]
    assert exchange.outcome.text == "ok"
    assert exchange.response.undelivered == "client gone"
    assert exchange.response.delivered_bytes == 0
    line = next(
        json.loads(text)
        for text in record.read_text().splitlines()
        if '"dir":"s2c"' in text and '"kind":"frame"' in text
    )
    assert line["undelivered"] == "client gone" and "delivered_bytes" not in line

    shown = run_cli("show", str(record))
    assert shown.returncode == 0, shown.stderr
    assert "ok (undelivered: client gone)" in shown.stdout
    rows = [json.loads(text) for text in run_cli("show", str(record), "--json").stdout.splitlines()]
    (row,) = [r for r in rows if r["method"] == "scene.slow"]
    assert row["undelivered"] == "client gone" and row["outcome"] == "ok"

    checked = run_cli("check", str(record))
    assert "1 flow failed: 1 ok (undelivered: client gone)" in checked.stdout

    out = tmp_path / "streams"
    exported = run_cli("export", str(record), "--format", "streams", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    streams = json.loads((out / "index.json").read_text())["streams"]
    (answers,) = [s for s in streams if s["direction"] == "s2c" and s["bytes"]]
    # The file holds the answer as the upstream sent it; the proxy forwarded none of it.
    assert answers["undelivered_frames"] == 1
    assert answers["recorded_bytes"] == 0 and answers["complete"] is True


def test_an_answer_the_kernel_took_is_delivered_as_far_as_the_proxy_knows(
    upstream: SlowUpstream, tmp_path: Path
) -> None:
    # The client closed (no reset yet): the write succeeds, the client's kernel then throws
    # the bytes away and resets. Nothing the proxy saw says so: the exchange stays ok.
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{upstream.port}"
    cli = start_proxy_cli("--route", route, "--record", str(record))
    try:
        client_leaves(cli.port, upstream, "close")
        logged = wait_for_line(cli.process, r"scene\.slow").string
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert " ok " in logged and "undelivered" not in logged
    (exchange,) = [
        e for e in read_recording(str(record)).events if isinstance(e, ExchangeCompleted)
    ]
    assert exchange.outcome.text == "ok" and not exchange.response.undelivered
