"""Plain ``os.read`` / ``os.write`` on trio's non-blocking sockets, waiting only when the
kernel says so: one scheduler round per chunk instead of the three of trio's socket methods
(each of which checkpoints on success too). For the relay's pumps and the replay server."""

from __future__ import annotations

import os

import trio

__all__ = ["read_some", "write_all"]


async def read_some(stream: trio.abc.Stream, size: int) -> bytes:
    """Up to ``size`` bytes from ``stream`` (``b""`` at end of stream). Raises OSError
    (ConnectionResetError, …) from the socket, or trio's errors for other streams."""
    if isinstance(stream, trio.SocketStream):
        fd = stream.socket.fileno()
        while True:
            try:
                return os.read(fd, size)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
    return bytes(await stream.receive_some(size))


async def write_all(target: trio.abc.Stream | int, data: bytes) -> None:
    """Write all of ``data`` to a stream (or a non-blocking socket's fd), waiting only when
    its buffer is full. Raises OSError (BrokenPipeError, ConnectionResetError) when the peer
    is gone."""
    if isinstance(target, trio.abc.Stream) and not isinstance(target, trio.SocketStream):
        await target.send_all(data)
        return
    fd = target if isinstance(target, int) else target.socket.fileno()
    view = memoryview(data)
    while view:
        try:
            sent = os.write(fd, view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(fd)
            continue
        view = view[sent:]
