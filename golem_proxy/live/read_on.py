"""What a client sends while its request pump holds a frame (fault_relay.py: a ``delay``, a
``slice`` waiting between its pieces, a request ``--intercept`` holds): read on as it comes, each
chunk stamped with the time it was read, and handed back to the pump in order once the frame went
on. A request the client pipelined behind a held one is then recorded at the time the client
sent it, and its latency is what the client waited (docs/faults.md), rather than the time the
pump, done with the held frame, got round to reading it.

Why read on rather than ask the kernel when the bytes came (``SO_TIMESTAMPNS``): on TCP that
gives one time per read, the last segment's, so requests read in one go after a hold would all
carry the last one's time; a Unix stream socket gives none at all (both measured on Linux);
and it is wall-clock time, where the recording's is the proxy's clock. Reading on gives each
chunk its own time on every kind of socket, and costs nothing on a route without faults or
``--intercept`` (whose pumps never come here), nor on a frame the proxy does not hold.

Bounded: past `READ_ON_BYTES` (or `READ_ON_CHUNKS` reads) the pump stops reading until the held
frame went on, as it did before, and the client waits on TCP's flow control; what it reads after
that is stamped when it reads it."""

from __future__ import annotations

from collections import deque
from typing import Callable, Optional, Union

import trio

from .chunks import ChunkReader

__all__ = ["READ_ON_BYTES", "READ_ON_CHUNKS", "ReadOn"]

READ_ON_BYTES = 4 * 1024 * 1024
"""The most a held frame's pump reads on behind it (bytes)."""
READ_ON_CHUNKS = 4096
"""The most reads it keeps behind it: each is marked for the session as it is read
(`Connection.arrived`), and a client writing a byte at a time would otherwise queue one mark a
byte."""

Read = Union[bytes, OSError]
"""What a read gave: bytes (``b""``: the end of the stream) or the error it raised (a reset)."""


class ReadOn:
    """The chunks one request pump read on behind the frame it holds, in order, with the times
    they were read."""

    def __init__(
        self, reader: ChunkReader, now: Callable[[], float], mark: Callable[[float], None]
    ) -> None:
        self.reader = reader
        """The pump's own reader: only one of the two reads at a time."""
        self.now = now
        self.mark = mark
        """Called with each chunk's time as it is read (`Connection.arrived`)."""
        self._reads: deque[tuple[float, Read]] = deque()
        self._bytes = 0
        self.ended = False
        """The stream's end (or its error) was read: there is nothing more to read."""

    def take(self) -> Optional[tuple[float, Read]]:
        """The oldest read not handed back yet, and its time; None when there is none."""
        if not self._reads:
            return None
        t, read = self._reads.popleft()
        if isinstance(read, bytes):
            self._bytes -= len(read)
        return t, read

    def drain(self) -> list[tuple[float, bytes]]:
        """The bytes read and not handed back yet, with their times (an end or an error
        left out), forgotten here: the connection ends, and they were never sent on."""
        chunks = [(t, read) for t, read in self._reads if isinstance(read, bytes) and read]
        self._reads.clear()
        self._bytes = 0
        return chunks

    def end_read(self) -> Optional[Read]:
        """The end (``b""``) or error read and not handed back yet, if any."""
        if self._reads and not (isinstance(self._reads[-1][1], bytes) and self._reads[-1][1]):
            return self._reads[-1][1]
        return None

    async def until_end(self, keep_end: bool = True) -> Optional[Read]:
        """Read on until the stream ends or the bound is reached, keeping each chunk with its
        time. The end (``b""``) or the error read is kept too when ``keep_end`` (the pump
        meets it in its turn, behind the frames read before it), else returned for the caller
        to act on at once. None when nothing more is read (the bound, or the end was read
        before). Cancel it to stop: a chunk read is never lost (`ChunkReader.read`)."""
        while not self.ended and self._bytes < READ_ON_BYTES and len(self._reads) < READ_ON_CHUNKS:
            read: Read
            try:
                read = await self.reader.read()
            except OSError as exc:
                read = exc
            t = self.now()
            if isinstance(read, bytes) and read:
                self.mark(t)
                self._reads.append((t, read))
                self._bytes += len(read)
                continue
            self.ended = True
            if not keep_end:
                return read
            self._reads.append((t, read))
        return None

    async def during(self, seconds: float) -> None:
        """Wait ``seconds``, reading on meanwhile (`until_end`)."""
        with trio.move_on_after(seconds):
            await self.until_end()
            await trio.sleep_forever()
