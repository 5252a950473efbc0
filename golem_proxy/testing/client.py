"""A blocking GOLEM client that behaves on the wire like the GOLEM MCP server's connection:
UUID4 ids, a ``ping`` right after connecting, one request at a time, a receive timeout per
command, and up to three reconnects on a broken pipe or a reset. Used by the demo, the sample
recordings and tests that need a realistic client."""

from __future__ import annotations

import socket
import uuid
from typing import Any, Optional

from golem_core.blocking import MessageReader, send_message
from golem_core.messages import ErrorResponse, Malformed, Message, Response, Role

__all__ = [
    "GolemClient",
    "RhinoCommandError",
    "RhinoConnectionError",
    "RhinoTimeoutError",
]

MAX_AUTO_RECONNECT_ATTEMPTS = 3


class RhinoConnectionError(ConnectionError):
    """The plugin could not be reached (or stayed unreachable after reconnecting)."""


class RhinoTimeoutError(TimeoutError):
    """No response within the command's timeout (never retried)."""


class RhinoCommandError(Exception):
    """The plugin answered with an error envelope."""

    def __init__(self, code: Any, message: str, details: Any = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.details = details


class GolemClient:
    """One connection to a GOLEM plugin channel."""

    def __init__(self, host: str = "127.0.0.1", port: int = 9876, timeout: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.connect_timeout = timeout
        self.reconnects = 0
        self._sock: Optional[socket.socket] = None
        self._reader: Optional[MessageReader] = None

    def connect(self) -> None:
        """Open the socket and check the plugin answers ``ping``. Raises RhinoConnectionError."""
        self.close()
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        except OSError as exc:
            raise RhinoConnectionError(f"cannot reach {self.host}:{self.port}: {exc}") from exc
        self._sock = sock
        self._reader = MessageReader(sock)
        try:
            self._roundtrip("ping", {}, self.connect_timeout)
        except (OSError, RhinoTimeoutError, RhinoCommandError) as exc:
            self.close()
            raise RhinoConnectionError(f"no ping answer from {self.host}:{self.port}") from exc

    def is_connected(self) -> bool:
        return self._sock is not None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._reader = None

    def __enter__(self) -> GolemClient:
        self.connect()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send_command(
        self, method: str, params: Optional[dict[str, Any]] = None, timeout: float = 30.0
    ) -> Any:
        """Call ``method`` and return its result. Raises RhinoCommandError for an error answer,
        RhinoTimeoutError, or RhinoConnectionError once reconnecting gave up."""
        attempts = 0
        while True:
            if self._sock is None:
                self.connect()
            try:
                return self._roundtrip(method, params or {}, timeout)
            except (BrokenPipeError, ConnectionResetError) as exc:
                attempts += 1
                if attempts > MAX_AUTO_RECONNECT_ATTEMPTS:
                    raise RhinoConnectionError(f"{method}: connection lost: {exc}") from exc
                self.reconnects += 1
                self.close()

    def _roundtrip(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        assert self._sock is not None and self._reader is not None
        request_id = str(uuid.uuid4())
        send_message(self._sock, {"id": request_id, "method": method, "params": params})
        self._sock.settimeout(timeout)
        try:
            reply = self._reader.read_message(Role.RESPONSE)
        except socket.timeout as exc:
            raise RhinoTimeoutError(f"{method}: no response within {timeout:g} s") from exc
        if reply is None:
            raise ConnectionResetError(f"{method}: the plugin closed the connection")
        return _result(reply)


def _result(reply: Message) -> Any:
    if isinstance(reply, Response):
        return reply.result
    if isinstance(reply, ErrorResponse):
        raise RhinoCommandError(reply.error.code, reply.error.message, reply.error.details)
    assert isinstance(reply, Malformed)
    raise RhinoCommandError("MALFORMED", reply.detail)
