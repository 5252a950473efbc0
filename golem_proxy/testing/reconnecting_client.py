"""A client that reconnects the way the real GOLEM MCP server's connection does
(src/golem_3dmcp/connection.py at golem-3dmcp HEAD), counting every connection it opens.

Its rules: ``connect`` opens a socket and sends ``ping`` through ``send_command``;
``send_command`` tries up to three times, and after a ``BrokenPipeError`` or
``ConnectionResetError`` reconnects (ignoring a failed reconnect) before the next try; a
command sent while not connected fails at once. Reconnecting pings through ``send_command``
again, so a peer that accepts and resets every connection makes the attempts multiply at
each level. `golem_proxy.testing.client.GolemClient` keeps the wire behaviour but not this
recursion; here it is what is being measured.
"""

from __future__ import annotations

import contextlib
import socket
import uuid
from typing import Any, Optional

from golem_core.blocking import MessageReader, send_message
from golem_core.messages import Role

MAX_ATTEMPTS = 3


class ClientGaveUp(Exception):
    """The call failed the way the real client reports it (RhinoConnectionError)."""


class ReconnectingClient:
    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.attempts = 0
        """Connections tried (each ``connect`` to the address, refused or not)."""
        self._sock: Optional[socket.socket] = None

    def connect(self) -> None:
        self.disconnect()
        self.attempts += 1
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as exc:
            raise ClientGaveUp(f"cannot connect: {exc}") from exc
        try:
            self.send_command("ping")
        except Exception as exc:
            self.disconnect()
            raise ClientGaveUp(f"ping handshake failed: {exc}") from exc

    def disconnect(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None

    def send_command(self, method: str, params: Optional[dict[str, Any]] = None) -> Any:
        last: Optional[BaseException] = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                return self._roundtrip(method, params or {})
            except (BrokenPipeError, ConnectionResetError) as exc:
                last = exc
                if attempt < MAX_ATTEMPTS:
                    with contextlib.suppress(ClientGaveUp):  # the next try finds out
                        self.connect()
        raise ClientGaveUp(f"{method} failed after {MAX_ATTEMPTS} attempts: {last}")

    def _roundtrip(self, method: str, params: dict[str, Any]) -> Any:
        sock = self._sock
        if sock is None:
            raise ClientGaveUp("not connected")
        send_message(sock, {"id": str(uuid.uuid4()), "method": method, "params": params})
        reply = MessageReader(sock).read_message(Role.RESPONSE)
        if reply is None:
            raise ConnectionError("the peer closed the connection")
        return reply.obj
