"""What the forwarding process reads on an observing process's control socket
(``--observer child-process``): its acknowledgements (`ACK`), and, with ``--redact``, the
values its redaction learned (`LEARNED`), kept here so that a process that replaces a dead one
hides them from its first frame (`ObserverSetup.echoes`).

An observing process that dies takes its `Echoes` with it: before these were kept here, a layer
name ``--redact params.name`` replaced in a request was recorded in clear in the next
``scene.list_layers`` answer once a new process had taken over. The observing process tells of
each value when it first learns it (not of each frame that repeats it), before it acknowledges
the frame that taught it, on the same socket: a value whose frame's acknowledgement came is
here. What a dead process learned and had not told yet is read out of the socket at the
restart (`ControlReader.drain`). The values the forwarding process finds itself in a frame not
recorded as it came (`ObserverLink.unrecorded`) are kept here as it hands them on, so that
those the dead process never read, or that waited while a connection shed, are not lost with
it (the observing process then tells of them too: they are held already).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterable
from typing import Optional

from .observer_launch import ACK, LEARNED, LEARNED_MAX
from .redact import MAX_ECHOES

__all__ = ["DRAIN_READS", "ControlRead", "ControlReader", "HeldEchoes"]

DRAIN_READS = 64
"""Reads of a dead process's control socket at most, at the restart (its buffer is bounded:
one or two reads empty it)."""

_MARK = ACK.pack(LEARNED, 0)[:8]


class HeldEchoes:
    """The values the observing processes of the session learned to hide, the last
    `MAX_ECHOES` (as an `Echoes` keeps them): what a new process is handed at a restart."""

    def __init__(self) -> None:
        self._values: dict[str, None] = {}  # insertion-ordered set

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: str) -> bool:
        """Keep ``value`` (as the newest); whether it was not kept already."""
        new = value not in self._values
        self._values.pop(value, None)
        self._values[value] = None
        while len(self._values) > MAX_ECHOES:
            del self._values[next(iter(self._values))]
        return new

    def add_all(self, values: Iterable[str]) -> None:
        for value in values:
            self.add(value)

    def values(self) -> tuple[str, ...]:
        """The values kept, oldest first."""
        return tuple(self._values)


class ControlRead:
    """What one read of the control socket said."""

    __slots__ = ("ack", "broken", "new_values", "values")

    def __init__(self) -> None:
        self.ack: Optional[tuple[int, int]] = None
        """The greatest acknowledgement (offset, rate) read, if any."""
        self.new_values = 0
        """Values learned that were not held yet."""
        self.values = 0
        """Values told, held already or not (each costs the reading)."""
        self.broken: Optional[str] = None
        """Why what was read is no message a healthy process sends (a value too long, or no
        UTF-8): the process is to be stopped."""


class ControlReader:
    """Parses one observing process's control stream, across reads (a message may be split);
    the values it learned go to ``held``, shared by every process of the session."""

    def __init__(self, held: HeldEchoes) -> None:
        self.held = held
        self._pending = b""

    def feed(self, data: bytes) -> ControlRead:
        """Take ``data`` read from the socket; returns what the whole messages in it said."""
        read = ControlRead()
        buf = self._pending + data if self._pending else data
        pos = 0
        while True:
            mark = _aligned_mark(buf, pos)
            end = len(buf) if mark < 0 else mark
            whole = pos + (end - pos) // ACK.size * ACK.size
            if whole > pos:
                # The greatest says everything (a healthy process sends them growing only).
                top = max(ACK.iter_unpack(memoryview(buf)[pos:whole]))
                read.ack = top if read.ack is None else max(read.ack, top)
            if mark < 0:
                pos = whole
                break
            if len(buf) < mark + ACK.size:
                pos = mark
                break
            size = ACK.unpack_from(buf, mark)[1]
            if size > LEARNED_MAX:
                read.broken = f"the observing process sent a learned value of {size} bytes"
                break
            start = mark + ACK.size
            if len(buf) < start + size:
                pos = mark
                break
            try:
                value = buf[start : start + size].decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                read.broken = "the observing process sent a learned value that is no UTF-8"
                break
            read.values += 1
            read.new_values += self.held.add(value)
            pos = start + size
        self._pending = b"" if read.broken else buf[pos:]
        return read

    def drain(self, control: socket.socket) -> None:
        """Read what is left on the socket of a process that died (the values it told of
        before it died, which no read took yet), without waiting."""
        with contextlib.suppress(OSError):
            control.setblocking(False)
            for _ in range(DRAIN_READS):
                data = control.recv(256 * 1024)
                if not data or self.feed(data).broken:
                    return


def _aligned_mark(buf: bytes, pos: int) -> int:
    """Where the next `LEARNED` message starts in ``buf`` from ``pos`` (messages are
    `ACK`-sized from there until one), or -1. The mark's bytes may also be a rate's, half an
    `ACK` in: those are stepped over."""
    found = buf.find(_MARK, pos)
    while found >= 0 and (found - pos) % ACK.size:
        found = buf.find(_MARK, found + 1)
    return found
