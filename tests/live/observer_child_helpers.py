"""Peers and process helpers for the tests of ``proxy --observer child-process``: a threaded
echo upstream, a GOLEM client, a proxy in front of a GOLEM upstream, and finding the observing
process of a running proxy."""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import random
import socket
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Optional

from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import ProxyCli, start_proxy_cli
from bench.threaded_server import ThreadedServer
from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Message, Response, Role
from golem_core.profiles import GOLEM


class EchoServer(ThreadedServer):
    """Echoes every byte back on each connection; passes a half-close on once it has echoed
    everything (a thread per connection, for tests that use blocking sockets)."""

    def __init__(self) -> None:
        self.resets = 0
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                while data := conn.recv(65536):
                    conn.sendall(data)
                conn.shutdown(socket.SHUT_WR)
            except ConnectionResetError:
                self.resets += 1
            except OSError:
                pass


def golem_calls(port: int, calls: list[dict[str, Any]], chunk: int = 0) -> list[Message]:
    """Send each call on one connection, one at a time (``chunk``: in pieces of that many
    bytes, each sent on its own); returns the answers."""
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = MessageReader(sock)
        for call in calls:
            data = GOLEM.encode(call)
            step = chunk or len(data)
            for start in range(0, len(data), step):
                sock.sendall(data[start : start + step])
            answer = reader.read_message(Role.RESPONSE)
            assert answer is not None, f"no answer to {call}"
            answers.append(answer)
    return answers


def pipelined_echoes(port: int, count: int) -> None:
    """Send ``count`` echo requests in one burst (from a thread of its own, as a client that
    writes before it reads) and read an answer to each; asserts each came."""
    burst = b"".join(GOLEM.encode({"id": n, "method": "echo", "params": {}}) for n in range(count))
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sender = threading.Thread(target=sock.sendall, args=(burst,))
        sender.start()
        reader = MessageReader(sock)
        for _ in range(count):
            assert reader.read_message(Role.RESPONSE) is not None
        sender.join()


class CountingClient:
    """Sequential echo calls on one connection, in a thread, until `stop`; counts the answers."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.answers = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        reader = MessageReader(self.sock)
        while not self._stop.is_set():
            send_message(self.sock, {"id": self.answers, "method": "echo", "params": {}})
            assert reader.read_message(Role.RESPONSE) is not None
            self.answers += 1

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(60)
        self.sock.close()
        return self.answers


def wait_for(predicate: Any, timeout: float = 20.0, what: str = "the condition") -> None:
    """Poll ``predicate`` until true (raises AssertionError after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie until its parent reaps it: gone as far as serving goes.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    return True


STOPPED = "golem-proxy: observation stopped ("


def said_observation_stopped(cli: ProxyCli, why: Optional[str]) -> Optional[str]:
    """Asserts the proxy exited 0 without an internal error, and said once that observation
    stopped, for a reason starting with ``why`` (None: never said it); returns the line."""
    assert cli.process.returncode == 0, cli.stderr
    assert "internal error" not in cli.stderr and "Traceback" not in cli.stderr, cli.stderr
    said = [line for line in cli.stderr.splitlines() if line.startswith(STOPPED)]
    if why is None:
        assert said == [], cli.stderr
        return None
    assert len(said) == 1, cli.stderr
    assert said[0].startswith(f"{STOPPED}{why}"), cli.stderr
    assert said[0].endswith("; forwarding goes on"), cli.stderr
    return said[0]


def tcp_connector(cli: ProxyCli, timeout: float) -> Callable[[], socket.socket]:
    """Opens a client connection to ``cli`` (no Nagle delay; ``timeout`` on each call)."""

    def connect() -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", cli.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    return connect


@contextlib.contextmanager
def observed_proxy(record: Path, *options: str, listen: str = "127.0.0.1:0") -> Iterator[ProxyCli]:
    """``proxy`` from ``listen`` to a threaded GOLEM echo upstream, recording to ``record``, with
    ``options``; yields the running command line. The upstream stops when the block ends, and
    a proxy the block did not stop is killed then, so no test leaves one running."""
    with ThreadedUpstream() as upstream:
        cli = start_proxy_cli(
            "--route", f"{listen}={upstream.address}", "--record", str(record), *options
        )
        try:
            yield cli
        finally:
            cli.kill()


def pipe_fill(observer: int) -> tuple[int, int]:
    """(bytes waiting in the handoff pipe, its capacity), read through the observing process's
    read end (its first argument) without reading anything. The end opened here is closed
    before returning: a reader kept open would hide the child's death from the writer."""
    argv = Path(f"/proc/{observer}/cmdline").read_bytes().split(b"\0")
    read_fd = int(argv[argv.index(b"golem_proxy.live.observing") + 1])
    fd = os.open(f"/proc/{observer}/fd/{read_fd}", os.O_RDONLY | os.O_NONBLOCK)
    try:
        waiting = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, waiting)
        capacity = fcntl.fcntl(fd, F_GETPIPE_SZ)
    finally:
        os.close(fd)
    return waiting[0], capacity


F_GETPIPE_SZ = 1032
"""Linux's fcntl for a pipe's capacity (the fcntl module names it from Python 3.10)."""


class MixedTraffic:
    """Clients of three kinds, each on a thread of its own, until `stop`: two making sequential
    small echo calls, one sending pipelined bursts, one sending large frames (1 to 3 MiB, so that
    records wait for room in the handoff pipe). Every answer is checked against its call (the
    echo upstream returns the params: the client gets back exactly what it sent); a failure is
    kept in `errors`, not raised in the thread."""

    KINDS = ("sequential", "sequential", "pipelined", "large")

    def __init__(self, connect: Callable[[], socket.socket], seed: int) -> None:
        self.connect = connect
        self.answers = [0] * len(self.KINDS)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(index, seed), daemon=True)
            for index in range(len(self.KINDS))
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, index: int, seed: int) -> None:
        rng = random.Random(seed * 10 + index)
        call = {"sequential": self._sequential, "pipelined": self._burst, "large": self._large}
        kind = self.KINDS[index]
        try:
            with self.connect() as sock:
                reader = MessageReader(sock)
                while not self._stop.is_set():
                    self.answers[index] += call[kind](sock, reader, rng)
        except Exception as exc:  # reported by the test, with the client it happened to
            self.errors.append(f"{kind} client {index}: {type(exc).__name__}: {exc}")

    def _sequential(self, sock: socket.socket, reader: MessageReader, rng: random.Random) -> int:
        params = {"n": rng.getrandbits(32), "text": "é€" * rng.randrange(100)}
        _call(sock, reader, [{"id": params["n"], "method": "echo", "params": params}])
        return 1

    def _burst(self, sock: socket.socket, reader: MessageReader, rng: random.Random) -> int:
        count = rng.randrange(20, 200)
        calls = [{"id": n, "method": "echo", "params": {"n": n}} for n in range(count)]
        _call(sock, reader, calls)
        return count

    def _large(self, sock: socket.socket, reader: MessageReader, rng: random.Random) -> int:
        blob = rng.randbytes(rng.randrange(512 * 1024, 1536 * 1024)).hex()
        _call(sock, reader, [{"id": "large", "method": "echo", "params": {"blob": blob}}])
        return 1

    def total(self) -> int:
        return sum(self.answers)

    def wait_each_answers(self, more: int, timeout: float) -> None:
        """Wait until every client has ``more`` answers beyond what it has now (the large one
        one at least), or a client failed (raises AssertionError then, or after ``timeout``)."""
        wanted = [count + (1 if kind == "large" else more)
                  for count, kind in zip(self.answers, self.KINDS)]  # fmt: skip
        wait_for(
            lambda: self.errors or all(a >= w for a, w in zip(self.answers, wanted)),
            timeout=timeout,
            what=f"every client to be answered again (answers {self.answers}, wanted {wanted})",
        )
        assert self.errors == []

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
        assert self.errors == []


def _call(sock: socket.socket, reader: MessageReader, calls: list[dict[str, Any]]) -> None:
    """Send ``calls`` in one write (from a thread of its own, as a pipelining client does) and
    check that each answer, in order, carries its call's id and params."""
    burst = b"".join(GOLEM.encode(call) for call in calls)
    sender = threading.Thread(target=sock.sendall, args=(burst,), daemon=True)
    sender.start()
    for call in calls:
        answer = reader.read_message(Role.RESPONSE)
        if not isinstance(answer, Response) or answer.id != call["id"]:
            raise AssertionError(f"the answer to {str(call)[:80]} was {str(answer)[:200]}")
        if answer.result != call["params"]:
            raise AssertionError(f"the answer to {call['id']!r} differs from its params")
    sender.join()
