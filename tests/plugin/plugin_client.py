"""A small blocking GOLEM client on golem_core for the plugin tests (stdlib only)."""

from __future__ import annotations

import itertools
import socket
from typing import Any, Optional

from golem_core.blocking import MessageReader

SOCKET_TIMEOUT = 10.0


class Client:
    """One connection to a channel; every socket operation is bounded by SOCKET_TIMEOUT."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=SOCKET_TIMEOUT)
        self.sock.settimeout(SOCKET_TIMEOUT)
        self.reader = MessageReader(self.sock)
        self._ids = itertools.count(1)

    def request(self, method: str, params: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        """Send a request and return the whole reply envelope: the reply echoing its id. A
        frame that answers nothing fails the test (a reply with another id: once no answer
        came within SOCKET_TIMEOUT)."""
        request_id = f"req-{next(self._ids)}"
        message = self.reader.ask({"id": request_id, "method": method, "params": params or {}})
        assert message is not None, "the plugin closed the connection"
        assert self.reader.answers.unrelated == 0, "the plugin sent a frame that answers nothing"
        obj: dict[str, Any] = message.obj
        return obj

    def read_reply(self) -> dict[str, Any]:
        """The next frame the plugin sends, whatever it answers."""
        message = self.reader.read_message()
        assert message is not None, "the plugin closed the connection"
        obj: dict[str, Any] = message.obj
        return obj

    def call(self, method: str, **params: Any) -> Any:
        """The result of a call that must succeed."""
        reply = self.request(method, params)
        assert reply["error"] is None, reply["error"]
        return reply["result"]

    def error(self, method: str, **params: Any) -> dict[str, Any]:
        """The error object of a call that must fail."""
        reply = self.request(method, params)
        assert reply["result"] is None
        assert reply["error"] is not None, reply
        error: dict[str, Any] = reply["error"]
        return error

    def close(self) -> None:
        self.sock.close()
