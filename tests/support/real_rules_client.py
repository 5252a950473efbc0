"""A client that follows the GOLEM MCP server's connection rules, for tests of what a plugin
going away costs it (and how the proxy records it)."""

from __future__ import annotations

import socket
import struct

from golem_core.profiles import GOLEM
from tests.support.waiting import receive_exactly

_HEADER = struct.Struct("!I")


class RealRulesClient:
    """The GOLEM MCP server's connection rules (mcp_server/connection.py at 9819b31): one
    ``sendall`` per request, exact reads, a connection closed during a read fails the call
    (``ConnectionError``, not retried), ``BrokenPipeError``/``ConnectionResetError``
    reconnect and retry, three attempts in all."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = self._connect()
        self.calls = 0

    def _connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def call(self) -> str:
        """``ok``, or ``failed:<exception name>``."""
        self.calls += 1
        request = GOLEM.encode({"id": f"c{self.calls}", "method": "ping", "params": {}})
        for _ in range(3):
            try:
                self.sock.sendall(request)
                (length,) = _HEADER.unpack(receive_exactly(self.sock, 4))
                receive_exactly(self.sock, length)
                return "ok"
            except (BrokenPipeError, ConnectionResetError):
                self.sock.close()
                try:
                    self.sock = self._connect()
                except OSError:
                    continue
            except (ConnectionError, TimeoutError) as exc:
                return f"failed:{type(exc).__name__}"
        return "failed:retries"

    def close(self) -> None:
        self.sock.close()
