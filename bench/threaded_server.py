"""A blocking TCP server on 127.0.0.1 that serves each connection in a thread of its own: the
upstream the attack rig stands up, and the one tests on blocking sockets extend."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Optional, TypeVar

_Server = TypeVar("_Server", bound="ThreadedServer")


class ThreadedServer:
    """Accepts on a free loopback port from construction until `close`, and hands each
    connection to `serve` in a daemon thread. A subclass sets its own state before calling
    ``super().__init__()``: connections may arrive as soon as it returns."""

    def __init__(self, backlog: Optional[int] = None) -> None:
        self.server = socket.create_server(("127.0.0.1", 0), backlog=backlog)
        self.port: int = self.server.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def __enter__(self: _Server) -> _Server:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def serve(self, conn: socket.socket) -> None:
        """Serve one accepted connection (in its own thread); the subclass closes it."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop accepting and wait for the accepting thread (connections being served go on)."""
        # A plain close does not wake a thread blocked in accept(); a shutdown does. Joined, so
        # the accepting thread does not outlive its user.
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        self._acceptor.join(timeout=10)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()
