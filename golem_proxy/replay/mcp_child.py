"""An MCP server run as a child and spoken to over its stdio, one NDJSON line at a time: what
`mcp-verify` plays the recorded client side to.

Its stdout is read into lines of at most ``max_line`` bytes (a longer line is reported as
such and skipped, never held whole); its stderr is drained all along, so the server can never
block on a full pipe, and the last few KiB are kept to explain a server that died.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional, Union

import trio

from ..live.stdio_child import ChildStartError, PipedChild, exit_status, open_piped_child

__all__ = ["ChildStartError", "McpChild", "Oversized", "StdoutLine"]

READ_SIZE = 65536
STDERR_TAIL = 8192
LINES_BUFFERED = 64


@dataclass(frozen=True)
class Oversized:
    """A stdout line longer than the limit: skipped, its size reported."""

    size: int


StdoutLine = Union[bytes, Oversized]


class McpChild:
    """``argv`` as a child with piped stdio. Use it inside a nursery: `start` starts the
    readers in it, `stop` ends the child."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], *, max_line: int = 64 * 1024 * 1024
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.max_line = max_line
        self.process: Optional[PipedChild] = None
        self._stderr = bytearray()
        self._lines_in, self._lines_out = trio.open_memory_channel[StdoutLine](LINES_BUFFERED)

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the child and its readers. Raises ChildStartError (one line) when it cannot
        be started."""
        self.process = await open_piped_child(self.argv, self.env)
        nursery.start_soon(self._read_stdout)
        nursery.start_soon(self._drain_stderr)

    @property
    def stderr_tail(self) -> str:
        """The last few KiB the child wrote to its stderr."""
        return self._stderr.decode("utf-8", "replace")

    @property
    def status(self) -> Optional[int]:
        """Its exit status once it exited (128 + N for signal N), else None."""
        code = self.process.returncode if self.process is not None else None
        return None if code is None else exit_status(code)

    async def send(self, payload: bytes) -> bool:
        """Write one line (``payload`` and a newline). False when the child no longer reads."""
        assert self.process is not None and self.process.stdin is not None
        try:
            await self.process.stdin.send_all(payload + b"\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return False
        return True

    async def receive(self) -> Optional[StdoutLine]:
        """The next line from its stdout (without the newline); None once stdout ended."""
        try:
            return await self._lines_out.receive()
        except trio.EndOfChannel:
            return None

    async def stop(self, exit_timeout: float) -> Optional[int]:
        """Close its stdin (as an MCP client does to end a session) and give it
        ``exit_timeout`` seconds to exit, then SIGTERM, then SIGKILL. Returns its status."""
        process = self.process
        if process is None:
            return None
        if process.stdin is not None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await process.stdin.aclose()
        for next_signal in (signal.SIGTERM, signal.SIGKILL):
            with trio.move_on_after(exit_timeout):
                await process.wait()
                break
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(next_signal)
        else:
            await process.wait()
        process.release()  # stopped in order: what it left running is not ours to kill
        return self.status

    async def _read_stdout(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        pending = bytearray()
        skipping = 0  # bytes of an oversized line read so far (0: not in one)
        async with self._lines_in:
            while True:
                try:
                    chunk = await stdout.receive_some(READ_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    chunk = b""
                if not chunk:
                    if skipping:
                        await self._lines_in.send(Oversized(skipping))
                    elif pending:
                        await self._lines_in.send(bytes(pending))
                    return
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    piece = chunk[start:] if end < 0 else chunk[start:end]
                    if skipping:
                        skipping += len(piece)
                    elif len(pending) + len(piece) > self.max_line:
                        skipping = len(pending) + len(piece)
                        pending.clear()
                    else:
                        pending += piece
                    if end < 0:
                        break
                    if skipping:
                        await self._lines_in.send(Oversized(skipping))
                        skipping = 0
                    else:
                        await self._lines_in.send(bytes(pending).rstrip(b"\r"))
                        pending.clear()
                    start = end + 1

    async def _drain_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        stderr = self.process.stderr
        while True:
            try:
                chunk = await stderr.receive_some(READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            if not chunk:
                return
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]
