"""A blocking client that behaves like the GOLEM MCP server's `RhinoConnection`: UUID4 request
ids, connect-then-ping, one request at a time, and a reconnect (up to 3 times) when the peer
resets or closes the connection. Framing through `golem_core.blocking`.

For tests and tools that need to talk to the plugin, the proxy or a replay server.
"""

from __future__ import annotations

import socket
import uuid
from typing import Any, Optional

from golem_core.blocking import MessageReader, send_message
from golem_core.messages import ErrorResponse, Message, Response, Role
from golem_core.profiles import GOLEM, Profile

__all__ = ["GolemClient", "GolemClientError", "RemoteError"]

MAX_AUTO_RECONNECT_ATTEMPTS = 3


class GolemClientError(Exception):
    """The connection failed, or the peer answered something that is not a response."""


class RemoteError(GolemClientError):
    """The peer answered with an error object."""

    def __init__(self, code: Any, message: str, response: ErrorResponse) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.response = response


class GolemClient:
    """``GolemClient(host, port).call(method, params)`` → the ``result``; raises RemoteError
    for an error response and GolemClientError when the link fails for good."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9876,
        *,
        timeout: float = 10.0,
        profile: Profile = GOLEM,
        ping_on_connect: bool = True,
        unix_path: Optional[str] = None,
    ) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.profile = profile
        self.ping_on_connect = ping_on_connect
        self.unix_path = unix_path
        self.sock: Optional[socket.socket] = None
        self.reader: Optional[MessageReader] = None
        self.reconnects = 0
        self._next_int_id = 1

    # -- connection --------------------------------------------------------------------------
    def connect(self) -> None:
        """Open the connection and (like the reference client) ping. Raises
        GolemClientError."""
        self.close()
        try:
            if self.unix_path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(self.timeout)
                sock.connect(self.unix_path)
            else:
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as exc:
            raise GolemClientError(f"cannot connect: {exc}") from exc
        self.sock = sock
        self.reader = MessageReader(sock, self.profile)
        if self.ping_on_connect:
            result = self._round_trip("ping", {})
            if not (isinstance(result, dict) and result.get("alive") is True):
                raise GolemClientError(f"ping answered {result!r}")

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None
                self.reader = None

    def __enter__(self) -> GolemClient:
        self.connect()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- calls -------------------------------------------------------------------------------
    def new_id(self) -> Any:
        if self.profile is GOLEM:
            return str(uuid.uuid4())
        ident = self._next_int_id
        self._next_int_id += 1
        return ident

    def call(self, method: str, params: Optional[dict[str, Any]] = None) -> Any:
        """Send one request and return its ``result``. Reconnects on a reset or closed
        connection, as the reference client does. Raises RemoteError, GolemClientError."""
        attempts = 0
        while True:
            if self.sock is None:
                self.connect()
            try:
                return self._round_trip(method, params or {})
            except (ConnectionResetError, BrokenPipeError, _Closed) as exc:
                attempts += 1
                if attempts > MAX_AUTO_RECONNECT_ATTEMPTS:
                    raise GolemClientError(f"connection lost: {exc}") from exc
                self.reconnects += 1
                self.close()

    def request(self, method: str, params: Any = None, *, request_id: Any = None) -> Message:
        """Send one request as given and return the typed reply (no reconnect, no error
        raising). Raises GolemClientError when the connection closes first."""
        if self.sock is None:
            self.connect()
        obj: dict[str, Any] = {
            "id": self.new_id() if request_id is None else request_id,
            "method": method,
            "params": {} if params is None else params,
        }
        if self.profile is not GOLEM:
            obj = {"jsonrpc": "2.0", **obj}
        return self.send_raw_message(obj)

    def send_raw_message(self, obj: Any) -> Message:
        assert self.sock is not None
        send_message(self.sock, obj, self.profile)
        return self.read_reply()

    def send_bytes(self, data: bytes) -> Optional[Message]:
        """Send raw bytes and read one reply (None when the peer closes instead)."""
        if self.sock is None:
            self.connect()
        assert self.sock is not None and self.reader is not None
        self.sock.sendall(data)
        reply = self.reader.read_message(Role.RESPONSE)
        return reply

    def read_reply(self) -> Message:
        assert self.reader is not None
        reply = self.reader.read_message(Role.RESPONSE)
        if reply is None:
            self.close()
            raise _Closed("the peer closed the connection")
        return reply

    def _round_trip(self, method: str, params: Any) -> Any:
        reply = self.request(method, params)
        if isinstance(reply, Response):
            return reply.result
        if isinstance(reply, ErrorResponse):
            raise RemoteError(reply.error.code, reply.error.message, reply)
        raise GolemClientError(f"not a response: {reply!r}")


class _Closed(GolemClientError, ConnectionError):
    """The peer closed the connection (EOF) while a reply was awaited."""
