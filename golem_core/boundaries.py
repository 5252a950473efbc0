"""Where frames start in one direction of a stream, without decoding it.

A process that forwards a stream but does not decode it can still say, cheaply, whether the
bytes it has forwarded end where a frame starts, and where in its next chunk the frame in
progress ends: by length arithmetic for length-prefixed framing, by the last byte for lines.
That is where a decoder started in the middle of the stream can take it up exactly.

The boundaries are the decoders' (`golem_core.decoders`) when they skip oversized frames (the
taps' setting), whatever their cap: a length-prefixed header over the cap is skipped by its
declared length, an over-long line up to its newline, so a frame's end is where it would be
under any cap.

Cost per chunk fed: lines, one look at its last byte; length-prefixed, one subtraction when the
chunk ends inside a frame whose length is known, else one header read per frame starting in it.
Length-prefixed, the headers read are counted on the way (`frames`): whether every request of a
direction has had its answer is known without decoding.
"""

from __future__ import annotations

from typing import Optional

from .decoders import Chunk
from .framing import LENGTH_HEADER, Framing

__all__ = ["FrameBoundaries"]

_HEADER_SIZE = LENGTH_HEADER.size
_unpack_header = LENGTH_HEADER.unpack_from
_NEWLINE = 0x0A


class FrameBoundaries:
    """Where frames start in one direction of a stream, by the framing alone: what the
    forwarding path needs to hand a stream on from a frame boundary, without decoding.

    `feed` every chunk of the stream in order; `at_boundary` says whether the bytes fed so far
    end where a frame starts; `rest_of_frame` says how much of the next chunk still belongs to
    the frame in progress, so the chunk can be split at the next boundary.
    """

    __slots__ = ("_header", "_in_line", "_lines", "_remaining", "_started")

    def __init__(self, framing: Framing) -> None:
        self._lines = framing is Framing.LINE
        self._in_line = False
        """Lines: the last byte fed is not a newline."""
        self._remaining = 0
        """Length-prefixed: bytes of the frame in progress still to come, once its header is
        whole (0 at a boundary or while a header is split)."""
        self._header = b""
        """Length-prefixed: the first bytes of a header split across chunks (at most 3)."""
        self._started = 0
        """Length-prefixed: frames whose header was read whole."""

    @property
    def at_boundary(self) -> bool:
        """The bytes fed so far end where a frame starts (true before any byte is fed)."""
        if self._lines:
            return not self._in_line
        return not self._remaining and not self._header

    @property
    def frames(self) -> Optional[int]:
        """Length-prefixed: the frames fed whole so far; None for lines, whose frames are not
        counted (that would mean looking at every byte)."""
        if self._lines:
            return None
        return self._started - 1 if self._remaining else self._started

    @property
    def body_left(self) -> int:
        """Length-prefixed: bytes of the frame in progress known to be still to come (its
        header read whole), which may be moved on without looking at them (`skip`); 0 for
        lines, whose end is known only by looking."""
        return self._remaining

    def skip(self, size: int) -> None:
        """Take into account the stream's next ``size`` bytes, at most `body_left`, without
        looking at them (the forwarding path moved them without reading them). Raises
        ValueError past `body_left`."""
        if not 0 <= size <= self._remaining:
            raise ValueError(f"{size} bytes skipped where {self._remaining} are known")
        self._remaining -= size

    def feed(self, data: Chunk) -> None:
        """Take the stream's next bytes into account."""
        n = len(data)
        if self._lines:
            if n:
                self._in_line = data[-1] != _NEWLINE
            return
        pos = self._remaining
        if pos >= n:
            # The chunk ends inside (or exactly at the end of) a frame whose length is known.
            self._remaining = pos - n
            return
        if self._header:
            # Here nothing remained of a frame: the chunk starts with the rest of a header.
            split = self._header
            need = _HEADER_SIZE - len(split)
            if n < need:
                self._header = split + bytes(data)
                return
            self._header = b""
            (length,) = _unpack_header(split + bytes(data[:need]))
            pos = need + length
            self._started += 1
        last_header = n - _HEADER_SIZE
        started = 0
        while pos <= last_header:
            (length,) = _unpack_header(data, pos)
            pos += _HEADER_SIZE + length
            started += 1
        self._started += started
        if pos >= n:
            self._remaining = pos - n
        else:
            self._remaining = 0
            self._header = bytes(data[pos:])

    def rest_of_frame(self, data: Chunk) -> Optional[int]:
        """How many leading bytes of ``data`` (the stream's next bytes, not fed yet) still
        belong to the frame in progress, that is where in ``data`` the next frame starts: 0 at
        a boundary, at most ``len(data)``; None when the frame in progress goes on past
        ``data`` (all of it is that frame's). Does not feed ``data``."""
        n = len(data)
        if self._lines:
            if not self._in_line:
                return 0
            newline = bytes(data).find(b"\n")
            return None if newline < 0 else newline + 1
        rest = self._remaining
        if self._header:
            need = _HEADER_SIZE - len(self._header)
            if n < need:
                return None
            (length,) = _unpack_header(self._header + bytes(data[:need]))
            rest = need + length
        return rest if rest <= n else None
