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
that is stamped when it reads it. Every connection's pump reads on within one budget as well
(`ReadOnBudget`: `READ_ON_TOTAL_BYTES`, `READ_ON_TOTAL_CHUNKS`), since a bound per connection is
no bound on a thousand connections each holding a frame (``--intercept`` on every request,
``--fault delay`` on all): past it, a pump stops reading on as it does past its own bound, and
takes its share back as the frames it read go on. Nothing is lost either way: the bytes wait in
the kernel, and the client on its flow control."""

from __future__ import annotations

from collections import deque
from typing import Callable, Optional, Union

import trio

from .chunks import ChunkReader

__all__ = [
    "READ_ON_BYTES",
    "READ_ON_CHUNKS",
    "READ_ON_TOTAL_BYTES",
    "READ_ON_TOTAL_CHUNKS",
    "ReadOn",
    "ReadOnBudget",
]

READ_ON_BYTES = 4 * 1024 * 1024
"""The most a held frame's pump reads on behind it (bytes)."""
READ_ON_CHUNKS = 4096
"""The most reads it keeps behind it: each is marked for the session as it is read
(`Connection.arrived`), and a client writing a byte at a time would otherwise queue one mark a
byte."""

READ_ON_TOTAL_BYTES = 64 * 1024 * 1024
"""The most all held frames' pumps read on at once, together (bytes): 16 connections at their
own bound."""
READ_ON_TOTAL_CHUNKS = 65536
"""The most reads all of them keep at once, together."""

Read = Union[bytes, OSError]
"""What a read gave: bytes (``b""``: the end of the stream) or the error it raised (a reset)."""


class ReadOnBudget:
    """What the pumps of every connection may have read on at once, all together: each read
    takes its bytes and one chunk of it, given back as what was read goes on (`ReadOn.take`)
    or is let go with its connection."""

    def __init__(
        self, total_bytes: int = READ_ON_TOTAL_BYTES, total_chunks: int = READ_ON_TOTAL_CHUNKS
    ) -> None:
        self.total_bytes = total_bytes
        self.total_chunks = total_chunks
        self.bytes = 0
        """Bytes read on and not handed back yet, by every connection."""
        self.chunks = 0
        """Reads kept, by every connection."""

    def room(self) -> int:
        """How many bytes one more read may take now (0: none: the budget is spent)."""
        if self.chunks >= self.total_chunks:
            return 0
        return max(0, self.total_bytes - self.bytes)

    def took(self, size: int) -> None:
        self.bytes += size
        self.chunks += 1

    def give_back(self, size: int, chunks: int) -> None:
        self.bytes = max(0, self.bytes - size)
        self.chunks = max(0, self.chunks - chunks)


class ReadOn:
    """The chunks one request pump read on behind the frame it holds, in order, with the times
    they were read, within ``budget``'s share (shared by every connection; one of its own when
    not given)."""

    def __init__(
        self,
        reader: ChunkReader,
        now: Callable[[], float],
        mark: Callable[[float], None],
        budget: Optional[ReadOnBudget] = None,
    ) -> None:
        self.reader = reader
        """The pump's own reader: only one of the two reads at a time."""
        self.now = now
        self.mark = mark
        """Called with each chunk's time as it is read (`Connection.arrived`)."""
        self.budget = budget if budget is not None else ReadOnBudget()
        self._reads: deque[tuple[float, Read]] = deque()
        self._bytes = 0
        self._chunks = 0
        """The reads of bytes kept: what this one took of ``budget``, with ``_bytes``."""
        self.ended = False
        """The stream's end (or its error) was read: there is nothing more to read."""

    def take(self) -> Optional[tuple[float, Read]]:
        """The oldest read not handed back yet, and its time; None when there is none."""
        if not self._reads:
            return None
        t, read = self._reads.popleft()
        if isinstance(read, bytes) and read:
            self._bytes -= len(read)
            self._chunks -= 1
            self.budget.give_back(len(read), 1)
        return t, read

    def drain(self) -> list[tuple[float, bytes]]:
        """The bytes read and not handed back yet, with their times (an end or an error
        left out), forgotten here: the connection ends, and they were never sent on."""
        chunks = [(t, read) for t, read in self._reads if isinstance(read, bytes) and read]
        self._reads.clear()
        self.release()
        return chunks

    def release(self) -> None:
        """Give back the share of the budget this one holds: its connection ended, and what
        it still keeps is never handed back (`drain` hands it over)."""
        self.budget.give_back(self._bytes, self._chunks)
        self._bytes = self._chunks = 0

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
            read = await self._read()
            if read is None:
                return None  # every connection's reads together are at their bound
            t = self.now()
            if isinstance(read, bytes) and read:
                self.mark(t)
                self._reads.append((t, read))
                continue
            self.ended = True
            if not keep_end:
                return read
            self._reads.append((t, read))
        return None

    async def _read(self) -> Optional[Read]:
        """The next read, as `ChunkReader.read` makes it, of no more than the budget has room
        for: its share is taken in the same step as the read, before any other pump reads
        (a share taken when the read was asked for would be spent on a wait). None when the
        budget has no room."""
        reader = self.reader
        while True:
            room = self.budget.room()
            if room <= 0:
                return None
            try:
                chunk = reader.read_ready(room)
            except OSError as exc:
                return exc
            if chunk is None:
                await reader.wait()
                continue
            if chunk:
                self.budget.took(len(chunk))
                self._bytes += len(chunk)
                self._chunks += 1
            # A chunk read is kept, cancelled or not (`ChunkReader.read`).
            await trio.lowlevel.cancel_shielded_checkpoint()
            return chunk

    async def during(self, seconds: float) -> None:
        """Wait ``seconds``, reading on meanwhile (`until_end`)."""
        with trio.move_on_after(seconds):
            await self.until_end()
            await trio.sleep_forever()
