"""Waiting with a deadline, never a fixed sleep: for a condition in a trio test, for bytes on a
blocking socket."""

from __future__ import annotations

import socket
from typing import Any, Callable

import trio


async def until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll ``check`` until it returns something truthy, and return that; trio.TooSlowError
    after ``timeout`` seconds."""
    with trio.fail_after(timeout):
        while True:
            found = check()
            if found:
                return found
            await trio.sleep(0.002)


def receive_exactly(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes from ``sock`` (its own timeout applies). Raises ConnectionError when the
    peer closes first, as the GOLEM-3DMCP client's reader does."""
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(
                f"the peer closed the connection after {len(data)} of {size} bytes"
            )
        data += chunk
    return bytes(data)
