"""With ``--observer-spool`` a chunk goes to the spool before its write to the receiver
(`Connection.forward`, body_splice.py): a ``kill -9`` at any moment leaves in the spool every
byte a receiver has, and ``golem-proxy recover`` says the last chunk of each way may not have
gone; what was spooled and then not delivered (the receiver reset) is said after it. The real
command line and real loopback sockets."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import socket
import struct
import termios
import time
from pathlib import Path

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.live.handoff import COUNT_KINDS, HEADER, Kind
from golem_proxy.live.handoff_source import KILLED
from golem_proxy.live.spool_header import read_header
from golem_proxy.live.spool_place import BESIDE, SPOOL_DIR_ENV
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import golem_calls, observed_proxy, wait_for
from tests.live.test_spool_recover import _golem, _kill_everything

MIB = 1 << 20
ANSWER = 16 * MIB


def _spooled_to_client(spool: Path) -> int:
    """Bytes of ``DATA`` to a client the spool holds now, those of a record a write is in the
    middle of included (`recover` decodes them)."""
    with spool.open("rb") as stream:
        at = read_header(stream.fileno()).records_start
        data = spool.read_bytes()
    total = 0
    while at + HEADER.size <= len(data):
        kind, _, direction, _, length = HEADER.unpack_from(data, at)
        size = 0 if kind in COUNT_KINDS else length
        if kind == Kind.DATA and direction == 1:
            total += min(size, len(data) - at - HEADER.size)
        at += HEADER.size + size
    return total


def _request(size: int) -> bytes:
    return GOLEM.encode({"id": 1, "method": "echo", "params": {"b": "x" * size}})


def test_after_a_kill_9_mid_answer_recover_holds_every_byte_the_client_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy stopped (SIGSTOP) after each read of the client's: the spool then holds at
    least what the client read (before, a piece was spliced to the client first and to the
    spool after, and the client, woken by it, often read it before the spool had it). Killed
    with 12 MiB of a 16 MiB answer read, `recover` gives the killed connection every byte the
    client read, and its close says the spool's last chunk may not have been sent on."""
    monkeypatch.setenv(SPOOL_DIR_ENV, BESIDE)
    record = tmp_path / "s.jsonl"
    spool = Path(f"{record}.spool")
    behind: list[int] = []
    with observed_proxy(record, "--observer-spool") as cli:
        pid = cli.process.pid
        with socket.create_connection(("127.0.0.1", cli.port), timeout=20) as sock:
            sock.sendall(_request(ANSWER))
            got = 0
            while got < 12 * MIB:
                chunk = sock.recv(MIB)
                assert chunk, "the answer ended early"
                got += len(chunk)
                os.kill(pid, signal.SIGSTOP)
                try:
                    spooled = _spooled_to_client(spool)
                finally:
                    os.kill(pid, signal.SIGCONT)
                if spooled < got:
                    behind.append(got - spooled)
            os.kill(pid, signal.SIGSTOP)  # no byte more goes out: what the client has is known
            sock.setblocking(False)
            try:
                while chunk := sock.recv(MIB):
                    got += len(chunk)
            except BlockingIOError:
                pass
            _kill_everything(pid)
            cli.process.communicate()
    assert behind == [], f"the client had bytes the spool had not: {behind}"

    done = _golem("recover", str(record), cwd=tmp_path)

    assert done.returncode == 0, done
    assert "1 connection open at the kill: the last chunk the spool holds" in done.stdout, done
    closes = [
        e for e in read_recording(str(record)).events if getattr(e, "reason", "").startswith(KILLED)
    ]
    assert len(closes) == 1, closes
    assert closes[0].bytes_s2c >= got, (closes[0].bytes_s2c, got)
    doubt = re.fullmatch(
        rf"{KILLED}; the spool's last (\d+) bytes to the client.* may not have been sent on",
        closes[0].reason,
    )
    assert doubt is not None, closes[0].reason
    # What the spool holds past what the client read is at most its last chunk's.
    assert closes[0].bytes_s2c - got <= int(doubt[1]), (closes[0].bytes_s2c, got, doubt[1])


def test_an_answer_spooled_then_refused_by_a_client_that_reset_is_recorded_undelivered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client reads a little of a 4 MiB answer and resets: the spool holds the piece the
    proxy was writing, then an ``UNDELIVERED_LAST`` record saying how much of it did not
    go and why; the recording says the answer never reached the client, and the connection's
    bytes to the client are those delivered (the spool's, less what it took back)."""
    monkeypatch.setenv(SPOOL_DIR_ENV, BESIDE)
    record = tmp_path / "s.jsonl"
    spool = Path(f"{record}.spool")
    with observed_proxy(record, "--observer-spool") as cli:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            sock.settimeout(20)
            sock.connect(("127.0.0.1", cli.port))
            sock.sendall(_request(ANSWER))
            got = 0
            while got < 200_000:
                got += len(sock.recv(65536))
            # The reset must find the proxy with bytes it could not write yet (a client
            # reading as fast as it writes may leave it none: the answer is then cut, not
            # refused): the spool holds more than went into the kernels' buffers.
            wait_for(
                lambda: _stuck_unwritten(spool, got, sock, cli.port),
                what="the proxy waiting to write to the client",
            )
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        wait_for(
            lambda: '"undelivered":"client gone"' in record.read_text(errors="replace"),
            what="the answer recorded undelivered",
        )
        golem_calls(cli.port, [{"id": 2, "method": "echo", "params": {}}])
        data = spool.read_bytes()
        cli.stop()
    at = _records_start(data)
    kinds = []
    while at + HEADER.size <= len(data):
        kind, conn, direction, _, length = HEADER.unpack_from(data, at)
        size = 0 if kind in COUNT_KINDS else length
        if conn == 1 and direction == 1 and kind != Kind.DATA:
            kinds.append((Kind(kind), bytes(data[at + HEADER.size : at + HEADER.size + size])))
        at += HEADER.size + size
    taken_back = [why for kind, why in kinds if kind is Kind.UNDELIVERED_LAST]
    assert len(taken_back) == 1, kinds
    size, _, why = taken_back[0].decode().partition(" ")
    assert int(size) > 0 and why == "client gone", taken_back
    events = read_recording(str(record)).events
    answers = [e for e in events if getattr(e, "conn", None) == 1 and getattr(e, "undelivered", "")]
    assert answers, [type(e).__name__ for e in events]
    assert all(e.undelivered == "client gone" for e in answers)
    close = next(e for e in events if type(e).__name__ == "ConnectionClosed" and e.conn == 1)
    assert 0 < close.bytes_s2c < ANSWER


def _stuck_unwritten(spool: Path, got: int, sock: socket.socket, proxy_port: int) -> bool:
    """Whether the proxy holds bytes to the client it could not write, twice in a row 50 ms
    apart: the spool's (handed on before their write) past those the client read, those
    waiting in its socket and those the proxy's socket has yet to see acknowledged."""

    def unwritten() -> tuple[int, int]:
        spooled = _spooled_to_client(spool)
        waiting = int.from_bytes(fcntl.ioctl(sock, termios.FIONREAD, b"\0" * 4), "little")
        return spooled, spooled - got - waiting - _send_queue(proxy_port, sock.getsockname()[1])

    first = unwritten()
    time.sleep(0.05)
    return first[1] > 0 and unwritten() == first


def _send_queue(local_port: int, remote_port: int) -> int:
    """The bytes the socket from ``local_port`` to ``remote_port`` on 127.0.0.1 sent and its
    peer did not acknowledge yet (``/proc/net/tcp``'s ``tx_queue``)."""
    wanted = (f"0100007F:{local_port:04X}", f"0100007F:{remote_port:04X}")
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if (fields[1], fields[2]) == wanted:
            return int(fields[4].split(":")[0], 16)
    raise AssertionError(f"no socket from {local_port} to {remote_port}")


def _records_start(data: bytes) -> int:
    fd = os.memfd_create("spool")
    try:
        os.write(fd, data)
        return read_header(fd).records_start
    finally:
        os.close(fd)
