"""An answer the upstream sends after its client is gone, as a user sees it: ``golem-proxy
proxy --record`` between a client and an upstream on 127.0.0.1, then ``show`` and ``export``
on the recording. The proxy reads the answer but cannot write it (the client reset): the
exchange is answered, and marked undelivered, in both observer modes, on a plain route and on
a faulted one (each forwards on a path of its own), with ``--enforce-limits`` too (its bytes
are checked before they are sent); and an answer a ``delay`` or ``slice`` fault still held
when its client reset."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

import pytest

from bench.robustness.proxy_cli import ProxyCli, start_proxy_cli
from golem_proxy.events import (
    Direction,
    ExchangeCompleted,
    FaultInjected,
    FrameSeen,
    FramingErrorSeen,
    ObservationLost,
)
from golem_proxy.recording.format import read_recording
from tests.support.cli_helpers import run_cli, wait_for_line

REQUEST = json.dumps({"id": "a1", "method": "scene.slow", "params": {}}).encode()
ANSWER = json.dumps({"id": "a1", "result": {"done": True}, "error": None}).encode()


def framed(payload: bytes) -> bytes:
    return struct.pack("!I", len(payload)) + payload


def read_request(peer: socket.socket) -> bool:
    """Read one GOLEM frame from ``peer``; False for the proxy's readiness probe (a connection
    closed before a header, or one the proxy reset: a client that went away mid-request)."""
    try:
        head = peer.recv(4, socket.MSG_WAITALL)
    except ConnectionResetError:
        return False
    if len(head) < 4:
        return False
    peer.recv(struct.unpack("!I", head)[0], socket.MSG_WAITALL)
    return True


def accept_or_none(listener: socket.socket) -> Optional[socket.socket]:
    """The next connection to ``listener``; None once it is closed (`close_listener`)."""
    try:
        return listener.accept()[0]
    except OSError:
        return None


def close_listener(listener: socket.socket, thread: threading.Thread) -> None:
    """Close an upstream's listener and wait for its thread: a close alone does not wake an
    ``accept`` blocked in another thread, whose thread would outlive the test (the replay
    tests fork, and wait for this process to run one thread)."""
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept: EINVAL
    listener.close()
    thread.join(10)
    assert not thread.is_alive(), "the upstream's thread did not end"


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
            peer = accept_or_none(self.listener)
            if peer is None:
                return
            with peer:
                if not read_request(peer):
                    continue
                self.request_in.set()
                assert peer.recv(1) == b""  # the client's FIN, passed on
                self.fin_in.set()
                self.answer.wait(20)
                peer.sendall(framed(ANSWER))
                self.finished.set()
                return

    def close(self) -> None:
        close_listener(self.listener, self.thread)


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
        logged = wait_for_line(cli.process, r"scene\.slow\s+ok").string
    finally:
        printed = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "ok (undelivered: client gone)" in logged
    # The closing line counts it among the errors, as stats and check do.
    assert re.search(r"\d+ exchanges? \(1 error,", printed + cli.stderr), printed + cli.stderr

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
    # The upstream answered ok; the client never got it: the call failed for the client, for
    # every view alike.
    assert row["error"] is True

    checked = run_cli("check", str(record))
    assert "1 flow failed: 1 ok (undelivered: client gone)" in checked.stdout
    stats = json.loads(run_cli("stats", str(record), "--json").stdout)
    (slow,) = [r for r in stats["methods"] if r["method"] == "scene.slow"]
    assert slow["errors"] == 1 and stats["overall"]["errors"] == 1
    assert run_cli("show", str(record), "--filter", "~e").stdout.count("scene.slow") == 1

    out = tmp_path / "streams"
    exported = run_cli("export", str(record), "--format", "streams", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    streams = json.loads((out / "index.json").read_text())["streams"]
    (answers,) = [s for s in streams if s["direction"] == "s2c" and s["bytes"]]
    # The file holds the answer as the upstream sent it; the proxy forwarded none of it.
    assert answers["undelivered_frames"] == 1
    assert answers["recorded_bytes"] == 0 and answers["complete"] is True
    assert answers["undelivered_bytes"] == answers["bytes"]
    (row,) = [line for line in exported.stdout.splitlines() if answers["file"] in line]
    assert "= 0 B forwarded + 1 frame undelivered" in row


def test_an_answer_to_a_client_that_closed_is_refused_unread_and_undelivered(
    upstream: SlowUpstream, tmp_path: Path
) -> None:
    # The client closed (no reset yet): the write succeeds, and the client's kernel refuses
    # the bytes at once with a reset, acknowledging none: the client never got the answer.
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{upstream.port}"
    cli = start_proxy_cli("--route", route, "--record", str(record))
    try:
        client_leaves(cli.port, upstream, "close")
        logged = wait_for_line(cli.process, r"scene\.slow\s+ok").string
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "undelivered: client gone" in logged
    (exchange,) = [
        e for e in read_recording(str(record)).events if isinstance(e, ExchangeCompleted)
    ]
    assert exchange.outcome.text == "ok" and exchange.response.undelivered == "client gone"


class PromptUpstream:
    """Answers one request at once, then waits for its connection to end."""

    def __init__(self, answer: bytes = ANSWER) -> None:
        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.answered = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            peer = accept_or_none(self.listener)
            if peer is None:
                return
            with peer:
                if not read_request(peer):
                    continue
                peer.sendall(framed(self.answer))
                self.answered.set()
                with contextlib.suppress(OSError):
                    peer.recv(1)  # the proxy resets it once the client is gone
                return

    def close(self) -> None:
        close_listener(self.listener, self.thread)


def _tcp_queues(port: int) -> tuple[list[int], list[int]]:
    """Of the established loopback connections to ``port`` (Linux's /proc/net/tcp): the
    bytes each peer of ``port`` has not read yet, and those ``port``'s own sockets sent that
    were not yet acknowledged."""
    unread, unacked = [], []
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = row.split()
        local, remote, state = fields[1], fields[2], fields[3]
        tx_queue, rx_queue = (int(part, 16) for part in fields[4].split(":"))
        if state != "01":  # ESTABLISHED
            continue
        if int(remote.split(":")[1], 16) == port:
            unread.append(rx_queue)
        elif int(local.split(":")[1], 16) == port:
            unacked.append(tx_queue)
    return unread, unacked


def proxy_read_the_answer(upstream: PromptUpstream) -> bool:
    """The upstream's answer reached the proxy's socket and the proxy read all of it."""
    unread, unacked = _tcp_queues(upstream.port)
    return (
        upstream.answered.is_set() and bool(unread) and bool(unacked) and not any(unread + unacked)
    )


def wait_until(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


HELD = [
    # Held whole: none of the answer went.
    pytest.param("delay:ms=60000,dir=s2c", 0, [], id="delay"),
    pytest.param("delay:ms=60000,dir=s2c", 0, ["--observer", "in-process"], id="delay-in-process"),
    # Sent in pieces, the client gone after the first: that piece went, the rest never did.
    pytest.param("slice:size=10,gap=60000,dir=s2c", 10, [], id="slice"),
    pytest.param(
        "slice:size=10,gap=60000,dir=s2c", 10, ["--observer", "in-process"], id="slice-in-process"
    ),
]


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
@pytest.mark.parametrize(("fault", "delivered", "extra"), HELD)
def test_an_answer_a_fault_held_when_the_client_reset_is_recorded_undelivered(
    tmp_path: Path, fault: str, delivered: int, extra: list[str]
) -> None:
    up = PromptUpstream()
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{up.port}"
    cli = start_proxy_cli("--route", route, "--record", str(record), "--fault", fault, *extra)
    try:
        client = socket.create_connection(("127.0.0.1", cli.port))
        client.settimeout(20)
        client.sendall(framed(REQUEST))
        if delivered:
            assert client.recv(delivered, socket.MSG_WAITALL) == framed(ANSWER)[:delivered]
        else:
            wait_until(lambda: proxy_read_the_answer(up), "the proxy to read the answer")
        # The client gives up while the rest of the answer is held: a reset.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        logged = wait_for_line(cli.process, r"scene\.slow\s+ok").string
    finally:
        cli.stop()
        up.close()
    assert cli.process.returncode == 0, cli.stderr
    assert "ok (undelivered: client gone)" in logged

    (exchange,) = [
        e for e in read_recording(str(record)).events if isinstance(e, ExchangeCompleted)
    ]
    assert exchange.outcome.text == "ok"
    assert exchange.response.undelivered == "client gone"
    assert exchange.response.delivered_bytes == delivered
    assert exchange.response.size == len(framed(ANSWER))
    shown = run_cli("show", str(record))
    assert shown.returncode == 0, shown.stderr
    assert "ok (undelivered: client gone)" in shown.stdout


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
@pytest.mark.parametrize("extra", [[], ["--observer", "in-process"]], ids=["child", "in-process"])
def test_the_pieces_of_a_sliced_answer_left_when_its_write_fails_are_recorded_undelivered(
    tmp_path: Path, extra: list[str]
) -> None:
    """Sliced with no pause: the pieces go back to back until the client, which stopped
    reading, fills up; it then resets. The piece whose write failed, or waited for room, and
    the pieces after it never went: the answer is recorded whole, undelivered."""
    big = json.dumps({"id": "a1", "result": {"blob": "x" * 4_000_000}, "error": None}).encode()
    up = PromptUpstream(big)
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{up.port}"
    fault = "slice:size=4096,gap=0,dir=s2c"
    cli = start_proxy_cli("--route", route, "--record", str(record), "--fault", fault, *extra)
    try:
        client = socket.create_connection(("127.0.0.1", cli.port))
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        client.sendall(framed(REQUEST))

        def client_full() -> bool:
            unread, _ = _tcp_queues(cli.port)
            return sum(unread) >= 32768

        wait_until(client_full, "the answer to fill the client's buffer")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        logged = wait_for_line(cli.process, r"scene\.slow\s+ok").string  # not the fault's line
    finally:
        cli.stop()
        up.close()
    assert cli.process.returncode == 0, cli.stderr
    assert "ok (undelivered: client gone)" in logged
    (exchange,) = [
        e for e in read_recording(str(record)).events if isinstance(e, ExchangeCompleted)
    ]
    assert exchange.response.undelivered == "client gone"
    assert exchange.response.size == len(framed(big))
    assert 0 < exchange.response.delivered_bytes < exchange.response.size


def _read_by_proxy(port: int) -> bool:
    """Every byte sent to the proxy listening on ``port`` over loopback was read by it: its
    accepted sockets hold nothing unread, and their clients nothing unacknowledged."""
    rows = [row.split() for row in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    ours = [r for r in rows if r[3] == "01" and int(r[1].split(":")[1], 16) == port]
    clients = [r for r in rows if r[3] == "01" and int(r[2].split(":")[1], 16) == port]
    queues = [int(r[4].split(":")[1], 16) for r in ours] + [
        int(r[4].split(":")[0], 16) for r in clients
    ]
    return bool(ours) and not any(queues)


@contextlib.contextmanager
def faulted_proxy(tmp_path: Path, fault: str, extra: list[str]) -> Iterator[tuple[ProxyCli, Path]]:
    """``proxy --record`` with ``--fault fault`` to a `PromptUpstream`, stopped (and the
    upstream closed) when the block ends: the proxy, and its recording's path."""
    up = PromptUpstream()
    record = tmp_path / "session.jsonl"
    route = f"main@127.0.0.1:0=127.0.0.1:{up.port}"
    cli = start_proxy_cli("--route", route, "--record", str(record), "--fault", fault, *extra)
    try:
        yield cli, record
    finally:
        cli.stop()
        up.close()
    assert cli.process.returncode == 0, cli.stderr


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
@pytest.mark.parametrize("extra", [[], ["--observer", "in-process"]], ids=["child", "in-process"])
def test_requests_read_behind_a_delayed_one_are_recorded_when_the_connection_ends(
    tmp_path: Path, extra: list[str]
) -> None:
    """Three requests and the start of a fourth in one read; the first waits out a delay when
    the proxy is stopped (a pump waiting out a delay reads nothing, so nothing else ends the
    connection first). None went on; all of them were sent, so all are recorded undelivered,
    and the incomplete one is a truncated frame, as on a plain route."""
    requests = [
        framed(json.dumps({"id": f"r{n}", "method": "scene.slow", "params": {}}).encode())
        for n in range(3)
    ]
    with faulted_proxy(tmp_path, "delay:ms=60000,dir=c2s", extra) as (cli, record):
        client = socket.create_connection(("127.0.0.1", cli.port))
        client.sendall(b"".join(requests) + requests[0][:7])
        wait_until(lambda: _read_by_proxy(cli.port), "the proxy to read the requests")
    client.close()
    events = read_recording(str(record)).events
    sent = [e for e in events if isinstance(e, FrameSeen) and e.direction is Direction.C2S]
    assert [e.message.id for e in sent] == ["r0", "r1", "r2"]  # type: ignore[union-attr]
    assert all(e.undelivered for e in sent), [e.undelivered for e in sent]
    assert not [e for e in events if isinstance(e, ObservationLost)]
    (cut,) = [e for e in events if isinstance(e, FramingErrorSeen)]
    assert (cut.direction, cut.raw, cut.undelivered) == (
        Direction.C2S,
        requests[0][:7],
        "connection ended",
    )
    rows = [json.loads(text) for text in run_cli("show", str(record), "--json").stdout.splitlines()]
    statuses = [r["status"] for r in rows if r.get("method") == "scene.slow"]
    # Requests the plugin never got: not "unanswered", which would say it may have acted.
    # The first says the proxy held it until then: the delay is recorded after it.
    assert re.fullmatch(
        r"undelivered \(connection ended\) \(\+[\d.]+ m?s --fault delay\)", statuses[0]
    )
    assert statuses[1:] == ["undelivered (connection ended)"] * 2
    (delay,) = [e for e in events if isinstance(e, FaultInjected)]
    assert delay.fault == "delay" and not delay.withheld and delay.held_s
    assert re.search(r"; the connection ended [\d,]+ ms into it: never sent$", delay.detail)


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
@pytest.mark.parametrize("extra", [[], ["--observer", "in-process"]], ids=["child", "in-process"])
def test_the_bytes_read_behind_a_truncated_request_are_counted_at_the_close(
    tmp_path: Path, extra: list[str]
) -> None:
    """Behind a truncated frame they cannot be recorded as the stream's bytes; the close says
    how many were read and never sent, and the truncated frame stays as it was sent."""
    with faulted_proxy(tmp_path, "truncate:dir=c2s", extra) as (cli, record):
        client = socket.create_connection(("127.0.0.1", cli.port))
        client.settimeout(20)
        client.sendall(framed(REQUEST) * 3)
        assert client.recv(1) == b""  # the proxy closed the connection after the cut
    client.close()
    lines = [json.loads(text) for text in record.read_text().splitlines()[1:]]
    (close,) = [line for line in lines if line.get("kind") == "close"]
    behind = 2 * len(framed(REQUEST))
    unsent = f"{behind:,} bytes read behind a truncated frame not sent"
    assert close["reason"] == f"fault: truncated a frame (c2s); {unsent}"
    assert not [line for line in lines if line.get("kind") == "unobserved"]


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
@pytest.mark.parametrize("extra", [[], ["--observer", "in-process"]], ids=["child", "in-process"])
def test_half_a_request_read_when_its_client_resets_is_recorded_truncated(
    tmp_path: Path, extra: list[str]
) -> None:
    """On a faulted route a frame is recorded as it goes on; one its client reset in the middle
    of never went, but the proxy read its start: it is recorded, a truncated frame as on a
    plain route, not left out."""
    with faulted_proxy(tmp_path, "delay:ms=1,p=0", extra) as (cli, record):
        client = socket.create_connection(("127.0.0.1", cli.port))
        client.sendall(framed(REQUEST)[:10])
        wait_until(lambda: _read_by_proxy(cli.port), "the proxy to read the bytes")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        wait_for_line(cli.process, r"#1\s+closed")
    events = read_recording(str(record)).events
    assert not [e for e in events if isinstance(e, ObservationLost)]
    (cut,) = [e for e in events if isinstance(e, FramingErrorSeen)]
    assert (cut.direction, cut.raw, cut.kind.value) == (
        Direction.C2S,
        framed(REQUEST)[:10],
        "truncated",
    )
