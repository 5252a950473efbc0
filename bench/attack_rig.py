"""The pieces attacks.py puts together: an upstream that digests what it receives, client
connections that digest what they send and receive, a probe that keeps timing round trips on
another connection, the golem-proxy process under attack, and its memory.

Everything listens on and connects to 127.0.0.1 only, and every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Optional

from processes import ROOT, free_port, rss, status, wait_port
from threaded_server import ThreadedServer

HEADER = struct.Struct("!I")
PARSE_LIMIT = 1 << 20
"""The answering upstream parses frames up to this size; larger ones it only digests."""
RSS_CAP = 6 << 30
"""An attack stops early once the proxy holds this much (the machine is shared)."""


SETTLE_CAP = 120.0
"""The longest `Upstream.settled` waits while bytes still arrive."""
STILL_LIMIT = 30.0
"""Seconds without a byte arriving after which the upstream is taken as settled: a flood held
at the observer's pace moves in bursts of the clients' byte limit (1 MiB), each once the last
is recorded: 15-17 s apart for zero-length frames (262,144 frames and three lines each)."""


@dataclass
class Digest:
    """Byte count and CRC-32 of one direction of one connection (enough to see a change)."""

    count: int = 0
    crc: int = 0

    def add(self, data: bytes | memoryview) -> None:
        self.count += len(data)
        self.crc = zlib.crc32(data, self.crc)

    def key(self) -> tuple[int, int]:
        return self.count, self.crc


def answer_for(payload: bytes, framing: str, error: Optional[str] = None) -> Optional[bytes]:
    """What the answering upstream sends back for one frame or line: a small success for a
    request (an object with an id and a method), or an error with the message ``error``;
    nothing for anything else."""
    if len(payload) > PARSE_LIMIT:
        return None
    try:
        message = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message or message.get("id") is None:
        return None
    failure = None if error is None else {"code": -32000, "message": error}
    if framing == "golem":  # GOLEM writes both members, one of them null
        result = {"ok": True} if failure is None else None
        body = json.dumps({"id": message["id"], "result": result, "error": failure})
        return HEADER.pack(len(body)) + body.encode()
    outcome = {"result": {"ok": True}} if failure is None else {"error": failure}
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], **outcome})
    return body.encode() + b"\n"


SURROGATE_ERROR = "\udfff"
"""The error message of the ``surrogate-error`` upstream: a lone surrogate (JSON-escaped on the
wire, as a Python plugin's ``json.dumps`` writes it)."""


def encode(message: object, framing: str) -> bytes:
    """One frame (golem) or line (jsonrpc-ndjson) carrying ``message``, or raw JSON text."""
    body = message.encode() if isinstance(message, str) else json.dumps(message).encode()
    return HEADER.pack(len(body)) + body if framing == "golem" else body + b"\n"


@dataclass
class UpstreamConn:
    received: Digest = field(default_factory=Digest)
    sent: Digest = field(default_factory=Digest)
    closed: bool = False


class Upstream(ThreadedServer):
    """A threaded server on 127.0.0.1. ``answer`` replies to each request it can parse (frames
    over PARSE_LIMIT are digested while they stream, never buffered); ``surrogate-error``
    replies the same way with an error whose message is SURROGATE_ERROR; ``silent`` reads and
    digests everything and never answers."""

    def __init__(self, framing: str, behaviour: str) -> None:
        self.framing, self.behaviour = framing, behaviour
        self.error = SURROGATE_ERROR if behaviour == "surrogate-error" else None
        self.conns: list[UpstreamConn] = []
        super().__init__(backlog=256)

    def serve(self, conn: socket.socket) -> None:
        record = UpstreamConn()
        self.conns.append(record)
        parse = self._frames if self.framing == "golem" else self._lines
        buffer = bytearray(1 << 20)
        state: list[object] = [bytearray(), 0]  # pending bytes, bytes of a big frame to skip
        with conn:
            try:
                while n := conn.recv_into(buffer):
                    data = memoryview(buffer)[:n]
                    record.received.add(data)
                    if self.behaviour != "silent":
                        replies = parse(state, data)
                        if replies:
                            conn.sendall(replies)
                            record.sent.add(replies)
            except OSError:
                pass
            finally:
                record.closed = True

    def _frames(self, state: list[object], data: memoryview) -> bytes:
        pending, skip = state
        assert isinstance(pending, bytearray) and isinstance(skip, int)
        out = []
        if skip:
            taken = min(skip, len(data))
            skip, data = skip - taken, data[taken:]
        pending += data
        while not skip and len(pending) >= 4:
            (length,) = HEADER.unpack_from(pending)
            if length > PARSE_LIMIT:
                skip = max(length - (len(pending) - 4), 0)
                del pending[: 4 + length]
                continue
            if len(pending) < 4 + length:
                break
            reply = answer_for(bytes(pending[4 : 4 + length]), "golem", self.error)
            del pending[: 4 + length]
            if reply:
                out.append(reply)
        state[1] = skip
        return b"".join(out)

    def _lines(self, state: list[object], data: memoryview) -> bytes:
        pending = state[0]
        assert isinstance(pending, bytearray)
        pending += data
        out = []
        while (end := pending.find(b"\n")) >= 0:
            reply = answer_for(bytes(pending[:end]), "ndjson", self.error)
            del pending[: end + 1]
            if reply:
                out.append(reply)
        if len(pending) > PARSE_LIMIT:  # a line too long to answer: keep memory flat
            del pending[:]
        return b"".join(out)

    def settled(self, limit: float, cap: float = SETTLE_CAP) -> str:
        """Wait until every connection that carried bytes has closed ("closed"); give up once no
        byte has arrived for ``limit`` seconds ("still"), or after ``cap`` while bytes still
        arrive ("arriving"). Bytes still arriving extend the wait: a flood the proxy forwards
        at its observer's pace (the default hold) arrives whole, later than the attack's own
        deadline."""
        start = time.monotonic()
        deadline, moved = start + limit, self._moved()
        while time.monotonic() < min(deadline, start + cap):
            if all(c.closed for c in self.conns if c.received.count or c.sent.count):
                return "closed"
            time.sleep(0.05)
            now = self._moved()
            if now != moved:
                deadline, moved = time.monotonic() + limit, now
        return "still" if time.monotonic() >= deadline else "arriving"

    def _moved(self) -> int:
        return sum(c.received.count + c.sent.count for c in self.conns)


class Conn:
    """A client connection that digests what it sends and, on a thread, what it receives."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Short timeouts so that neither side can hang on a stalled proxy past its deadline.
        self.sock.settimeout(0.25)
        self.sent, self.received = Digest(), Digest()
        self.eof = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = bytearray(1 << 20)
        while True:
            try:
                n = self.sock.recv_into(buffer)
            except socket.timeout:
                continue
            except OSError:
                break
            if not n:
                break
            self.received.add(memoryview(buffer)[:n])
        self.eof.set()

    def send(
        self, data: bytes | memoryview, deadline: float, whole: Optional[Digest] = None
    ) -> bool:
        """Send ``data`` until ``deadline`` (monotonic); False if it broke or the time ran out.
        ``whole``, the digest of ``data`` worked out once, spares digesting the same big buffer
        on every connection (for a connection's first bytes only)."""
        view = memoryview(data)
        sent = 0
        while sent < len(view):
            try:
                n = self.sock.send(view[sent : sent + (1 << 20)])
            except socket.timeout:
                if time.monotonic() > deadline:
                    break
                continue
            except OSError:
                break
            if whole is None:
                self.sent.add(view[sent : sent + n])
            sent += n
        if whole is not None:
            if self.sent.count or sent < len(view):  # only a part went: digest that part
                self.sent.add(view[:sent])
            else:
                self.sent = Digest(whole.count, whole.crc)
        return sent == len(view)

    def wait_received(self, count: int, limit: float) -> bool:
        deadline = time.monotonic() + limit
        while self.received.count < count and time.monotonic() < deadline:
            if self.eof.is_set():
                return False
            time.sleep(0.005)
        return self.received.count >= count

    def shutdown(self) -> None:
        """Half-close: no more requests, answers may still come."""
        with suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def close(self, limit: float = 5.0) -> None:
        """Half-close, let the answers still on their way arrive, then close."""
        self.shutdown()
        self.eof.wait(limit)
        self.sock.close()


def byte_exact(conns: list[Conn], upstream: Upstream) -> str:
    """ "yes" when the upstream received exactly what the clients sent and the clients exactly
    what it answered (compared as sets of per-connection digests), else what differs."""
    settled = upstream.settled(STILL_LIMIT)
    theirs = [c for c in upstream.conns if c.received.count or c.sent.count]
    c2s = sorted(c.sent.key() for c in conns), sorted(c.received.key() for c in theirs)
    s2c = sorted(c.sent.key() for c in theirs), sorted(c.received.key() for c in conns)
    if c2s[0] == c2s[1] and s2c[0] == s2c[1]:
        return "yes"
    for direction, (want, got) in (("c2s", c2s), ("s2c", s2c)):
        if want != got:
            sent, arrived = sum(k[0] for k in want), sum(k[0] for k in got)
            if settled == "arriving" and arrived < sent:
                return (
                    f"not yet ({direction}: {arrived:,} of {sent:,} B arrived in "
                    f"{SETTLE_CAP:g} s, still arriving: held at the observer's pace)"
                )
            still = "" if settled == "closed" else "; the proxy still holds the upstream side open"
            if sent == arrived:
                return f"NO ({direction}: as many bytes, other content{still})"
            return f"NO ({direction}: {arrived:,} of {sent:,} B arrived{still})"
    return "NO"


class Probe:
    """Another client of the proxy: one small request at a time (the GOLEM client's pattern),
    every few milliseconds, timing each round trip and checking each answer byte for byte."""

    def __init__(self, port: int, framing: str) -> None:
        self.port, self.framing = port, framing
        self.samples: list[tuple[float, float]] = []  # (start, seconds)
        self.wrong = 0
        self.failures = 0
        self.pending_since: Optional[float] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        number = 0
        while not self._stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    sock.settimeout(0.5)
                    while not self._stop.wait(0.005):
                        number += 1
                        self._round_trip(sock, number)
            except OSError:
                if self._stop.is_set():
                    return
                self.failures += 1
                self.pending_since = None
                self._stop.wait(0.2)

    def _round_trip(self, sock: socket.socket, number: int) -> None:
        request = encode({"id": f"probe-{number}", "method": "ping", "params": {}}, self.framing)
        expected = answer_for(request[4:] if self.framing == "golem" else request, self.framing)
        assert expected is not None
        start = time.monotonic()
        self.pending_since = start
        sock.sendall(request)
        got = bytearray()
        while len(got) < len(expected):
            try:
                chunk = sock.recv(len(expected) - len(got))
            except socket.timeout:
                if self._stop.is_set():
                    raise OSError("stopped while waiting") from None
                continue
            if not chunk:
                raise OSError("closed")
            got += chunk
        self.pending_since = None
        self.samples.append((start, time.monotonic() - start))
        if got != expected:
            self.wrong += 1

    def worst(self, since: float) -> str:
        """The longest round trip that started after ``since`` (one still unanswered counts
        for how long it has waited so far)."""
        times = [seconds for start, seconds in self.samples if start >= since]
        pending = self.pending_since
        stalled = time.monotonic() - pending if pending is not None else 0.0
        if not times and not stalled:
            return "no round trip"
        worst = max([*times, stalled])
        text = f"{worst * 1e3:,.1f} ms" if worst < 1 else f"{worst:.2f} s"
        if stalled >= worst:
            text = f"≥ {text} (stalled)"
        failed = f", {self.failures} failed connects" if self.failures else ""
        return f"{text} ({len(times)} rt{failed})"

    def worst_seconds(self, since: float) -> float:
        times = [seconds for start, seconds in self.samples if start >= since]
        pending = self.pending_since
        return max([*times, time.monotonic() - pending if pending is not None else 0.0])

    def finish(self, limit: float) -> None:
        """Give a round trip in flight up to ``limit`` seconds to complete."""
        deadline = time.monotonic() + limit
        while self.pending_since is not None and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


class Memory:
    """Peak RSS of the proxy's process tree, sampled every 20 ms, and its VmHWM."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, rss(self.pid))

    def over_cap(self) -> bool:
        return self.peak > RSS_CAP

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return max(self.peak, status(self.pid, "VmHWM"))

    def settled(self, limit: float) -> int:
        """RSS once it stops moving (two readings 0.5 s apart within 1 MiB), or at the limit."""
        deadline = time.monotonic() + limit
        last = rss(self.pid)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = rss(self.pid)
            if abs(now - last) < (1 << 20):
                return now
            last = now
        return rss(self.pid)


class Output:
    """Drains one of the proxy's pipes on a thread: byte count, tail, and whether raw escape
    sequences from the traffic reached it."""

    MARKERS = (b"\x1b]0;PWNED", b"\x1b[2J")

    def __init__(self, pipe: Optional[IO[bytes]], read: bool = True) -> None:
        self.count = 0
        self.tail = b""
        self.escapes = False
        self._pipe = pipe
        if read and pipe is not None:
            threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self._pipe is not None
        fd = self._pipe.fileno()
        while chunk := os.read(fd, 1 << 16):
            self.count += len(chunk)
            window = self.tail[-16:] + chunk
            self.escapes = self.escapes or any(m in window for m in self.MARKERS)
            self.tail = (self.tail + chunk)[-4096:]

    def last_line(self) -> str:
        """The last line naming an error (a traceback's last line sits inside a box), else the
        last line."""
        lines = [ln.strip(" │|") for ln in self.tail.decode(errors="replace").splitlines()]
        lines = [ln for ln in lines if ln.strip("-+─╭╮╰╯ ")]
        errors = [ln for ln in lines if "Error" in ln or "Exception" in ln]
        chosen = errors or lines
        return chosen[-1][:160] if chosen else ""


@dataclass
class Proxy:
    process: subprocess.Popen[bytes]
    probe_port: int
    attack_port: int
    record: Path
    stdout: Output
    stderr: Output

    def serves(self, framing: str, limit: float = 5.0) -> bool:
        """Whether a new client gets a round trip answered within ``limit`` seconds."""
        request = encode({"id": "next-client", "method": "ping", "params": {}}, framing)
        expected = answer_for(request[4:] if framing == "golem" else request, framing)
        assert expected is not None
        try:
            with socket.create_connection(("127.0.0.1", self.probe_port), timeout=limit) as sock:
                sock.sendall(request)
                got = b""
                while len(got) < len(expected):
                    chunk = sock.recv(len(expected) - len(got))
                    if not chunk:
                        return False
                    got += chunk
                return got == expected
        except OSError:
            return False

    def stop(self) -> None:
        """Ctrl-C (the graceful stop that finishes the recording), then kill after 10 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def proxy(
    workdir: Path,
    probe_upstream: int,
    attack_upstream: int,
    args: list[str],
    *,
    read_stdout: bool = True,
) -> Iterator[Proxy]:
    """golem-proxy as a user starts it (the CLI, default log on stdout, recording on), with a
    ``probe`` route and an ``attack`` route; stopped on exit."""
    probe_port, attack_port = free_port(), free_port()
    record = workdir / "attack.jsonl"
    command = [sys.executable, "-m", "golem_proxy", "proxy",
               "--route", f"probe@127.0.0.1:{probe_port}=127.0.0.1:{probe_upstream}",
               "--route", f"attack@127.0.0.1:{attack_port}=127.0.0.1:{attack_upstream}",
               "--record", str(record), "--overwrite", *args]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    running = Proxy(
        process,
        probe_port,
        attack_port,
        record,
        Output(process.stdout, read=read_stdout),
        Output(process.stderr),
    )
    try:
        wait_port(probe_port, process)
        wait_port(attack_port, process)
        yield running
    finally:
        running.stop()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
