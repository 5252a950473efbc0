"""A GOLEM server that answers each request with bytes the caller chose: hostile answers for
the one-shot clients (``call``, ``resend``) in the tests, one large answer in ``bench_call``.
Blocking sockets in a thread, on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

Answer = Callable[[Any], bytes]
"""The request's id → the answer's payload (framed by the server)."""


def _read_exactly(peer: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = peer.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


@contextmanager
def answering(
    answer: Answer, connections: int = 1, *, framed: bool = True, timeout: float = 30
) -> Iterator[str]:
    """Listen on a free loopback port and answer ``connections`` connections, one request
    each, with ``answer(request id)`` (sent as is when not ``framed``), waiting up to
    ``timeout`` seconds for each connection and on each socket. Yields ``HOST:PORT``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(timeout)

    def serve() -> None:
        for _ in range(connections):
            try:
                peer, _ = server.accept()
            except OSError:
                return
            with peer:
                peer.settimeout(timeout)
                try:
                    (length,) = struct.unpack("!I", _read_exactly(peer, 4))
                    request = json.loads(_read_exactly(peer, length))
                    payload = answer(request.get("id"))
                    header = struct.pack("!I", len(payload)) if framed else b""
                    peer.sendall(header + payload)
                except (OSError, EOFError):
                    continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        with contextlib.suppress(OSError):  # wakes an accept() still waiting (Linux)
            server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join(timeout)
