"""Reading what one side of a connection sent, in chunks sized to the traffic: the one read
rule of every pump (the plain pumps of `relay`, the frame-by-frame ones of `fault_relay`)."""

from __future__ import annotations

import os
from typing import Optional

import trio

__all__ = ["RECV_SIZE", "RECV_SIZE_BULK", "ChunkReader"]

RECV_SIZE = 65536
"""A read's size while traffic is light (one frame of a request/response exchange)."""
RECV_SIZE_BULK = 1024 * 1024
"""A read's size once a read filled its buffer: the kernel holds more (a large frame in
flight), and one scheduler round per MiB rather than per 64 KiB is what lets the relay (and
the tap behind it) keep up with a peer that writes a 16 MiB frame in one go."""


class ChunkReader:
    """Reads a non-blocking socket with plain ``os.read``, waiting only when the kernel says
    so: a chunk costs one scheduler round, not the three of trio's socket methods (each of
    which checkpoints on success too)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = RECV_SIZE
        self.waiting = False
        """Its reader waits for the socket to be readable (read_up.py looks for such)."""
        self.taken = 0
        """Bytes read so far (read_up.py: how far the socket's stream has been taken)."""

    def read_ready(self, most: Optional[int] = None) -> Optional[bytes]:
        """What the kernel holds now, up to the current size and ``most`` bytes (``b""``: end
        of stream), or None when it holds nothing yet. Raises OSError (a reset)."""
        try:
            chunk = os.read(self.fd, self.size if most is None else min(self.size, most))
        except BlockingIOError:
            self.size = RECV_SIZE
            return None
        self.size = RECV_SIZE_BULK if len(chunk) == self.size else RECV_SIZE
        self.taken += len(chunk)
        return chunk

    async def wait(self) -> None:
        """Until the socket is readable (data, an end of stream or an error)."""
        self.waiting = True
        try:
            await trio.lowlevel.wait_readable(self.fd)
        finally:
            self.waiting = False

    async def read(self) -> bytes:
        """The next chunk (``b""``: end of stream), waiting for it; a scheduler round either
        way, so that a peer that keeps sending does not keep the other tasks waiting (never
        cancelled once read: the chunk is not lost). Raises OSError (a reset)."""
        while True:
            chunk = self.read_ready()
            if chunk is not None:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return chunk
            await self.wait()
