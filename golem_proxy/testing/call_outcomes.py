"""What a GOLEM client got for each call it sent, one word a call, so that two runs of the same
session (through two proxies, or two observer places) compare as lists."""

from __future__ import annotations

import socket
from typing import Any

from golem_core.blocking import MessageReader
from golem_core.errors import TruncatedFrame
from golem_core.messages import ErrorResponse, Response, Role
from golem_core.profiles import GOLEM

__all__ = ["call_outcomes"]


def call_outcomes(port: int, calls: list[dict[str, Any]]) -> list[str]:
    """Send each call on one connection to 127.0.0.1:``port``, one at a time; returns what the
    client got for each (``ok``, ``error CODE``, ``malformed``, ``end``, ``reset``,
    ``truncated``), stopping at the first that ends the connection. Raises OSError when the
    connection cannot be made."""
    got: list[str] = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        reader = MessageReader(sock)
        for call in calls:
            try:
                sock.sendall(GOLEM.encode(call))
                answer = reader.read_message(Role.RESPONSE)
            except ConnectionResetError:
                return [*got, "reset"]
            except TruncatedFrame:
                return [*got, "truncated"]
            if answer is None:
                return [*got, "end"]
            if isinstance(answer, ErrorResponse):
                got.append(f"error {answer.error.code}")
            else:
                got.append("ok" if isinstance(answer, Response) else "malformed")
    return got
