"""Peers and process helpers for the tests of ``proxy --observer child-process``: a threaded
echo upstream, a GOLEM client, a proxy in front of a GOLEM upstream, and finding the observing
process of a running proxy."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.robustness.crash import ThreadedUpstream
from bench.robustness.proxy_cli import ProxyCli, start_proxy_cli
from bench.threaded_server import ThreadedServer
from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Message, Role
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
