"""The intercept console on a private Unix socket, for runs whose stdin is not the user's.

Under ``golem-proxy mcp`` stdin carries the MCP client's bytes, so held frames are decided
through ``--console unix:PATH`` instead: each line a client sends is one command for the
`InterceptConsole`, and its answer comes back to that client as plain text lines (no ANSI).
The socket is opened by `open_listener` with its rules (0600, in a directory only the user
may write to); held-frame notices stay in the log, as with stdin.

A client's line is input like a frame: a line longer than `MAX_LINE` is read to its end,
not kept, and refused in one line; a client that never reads stalls only its own answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Union

import trio
from rich.text import Text

from ..net.listeners import Listener
from .intercept_console import MAX_LINE, InterceptConsole

__all__ = ["serve_console"]

_CHUNK = 65536


async def serve_console(
    listener: Listener, console: InterceptConsole, limit: int = MAX_LINE
) -> None:
    """Serve console clients on ``listener`` until cancelled (its opener closes it); a line
    longer than ``limit`` bytes is refused. Never raises for what a client does."""
    async with trio.open_nursery() as clients:
        while True:
            stream = await listener.listener.accept()
            clients.start_soon(_serve_client, stream, console, limit)


async def _serve_client(stream: trio.SocketStream, console: InterceptConsole, limit: int) -> None:
    async with stream:
        try:
            async for line in _lines(stream, limit):
                if isinstance(line, int):
                    answers = [Text(f"line too long ({line} bytes, at most {limit}): ignored")]
                else:
                    answers = console.handle_bytes(line)
                await stream.send_all("".join(f"{text.plain}\n" for text in answers).encode())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the client went away: nothing to answer


async def _lines(stream: trio.SocketStream, limit: int) -> AsyncIterator[Union[bytes, int]]:
    """Yield each line ``stream`` sends (without its newline; a last line without one too),
    or the size of a line longer than ``limit``, which is not kept."""
    buffer = bytearray()
    skipped = 0  # bytes of an overlong line read so far, 0 when none is being skipped
    while True:
        data = await stream.receive_some(_CHUNK)
        if not data:
            break
        # Only the new bytes are searched: a long line costs one scan, not one per chunk.
        start = len(buffer)
        buffer += data
        while True:
            end = buffer.find(b"\n", start)
            start = 0
            if end < 0:
                break
            if skipped or end > limit:
                yield skipped + end
                skipped = 0
            else:
                yield bytes(buffer[:end])
            del buffer[: end + 1]
        if skipped or len(buffer) > limit:
            skipped += len(buffer)
            buffer.clear()
    if skipped:
        yield skipped + len(buffer)
    elif buffer:
        yield bytes(buffer)
