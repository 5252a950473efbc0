"""The handoff: what the forwarding side hands the observing side, as records on a pipe.

Observation in a process of its own (docs/architecture.md, issue 25): the relay of
``proxy --observer child-process`` hands every forwarded chunk on through it (observer_link.py).
`HandoffWriter` is the forwarding side: it writes to a non-blocking pipe and never waits. When
the pipe is full, forwarded chunks wait in order up to a bounded ``backlog`` (references to the
chunks, not copies); past it they are not queued but counted per connection and direction, and
a ``LOST`` record says how many once the pipe has room again, so the observing side records a
gap, never a stall. The records that describe connections (``OPENED``, ``END``, ``CLOSED``)
and other events (``EVENT``) are small and are never dropped: they wait, in order, for room.
When the reading side is gone (``EPIPE``), the writer says so (`gone`) and drops everything.

The observing side reads them with `handoff_reader.RecordReader`. A record is a fixed header
(kind, connection, direction, time, length) and then ``length`` bytes (the data, or for
``OPENED``, ``CLOSED`` and ``EVENT`` a description of the event: the proxy's observer link
sends the event itself, pickled, since both ends are the same program); for ``LOST`` and
``RESUMED``, ``length`` is a number of bytes and nothing follows.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import os
import struct
from dataclasses import dataclass
from typing import Optional, Union

from golem_core.decoders import Chunk

from ..events import Direction
from . import kernel_pipes
from .pipe_backlog import PipeBacklog

__all__ = [
    "COUNT_KINDS",
    "HEADER",
    "PIPE_DIRECTIONS",
    "SIZE_DIGITS",
    "HandoffError",
    "HandoffWriter",
    "Kind",
    "Record",
    "direction_number",
    "encode",
    "read_unsent",
    "unsent_data",
]

HEADER = struct.Struct("!BIBdI")
"""kind, connection id, direction (0 client to server, 1 back), time, length."""

PIPE_DIRECTIONS = (Direction.C2S, Direction.S2C)
"""A direction by its number on the pipe (`direction_number`)."""


def direction_number(direction: Direction) -> int:
    """A direction on the pipe: 0 client to server, 1 back."""
    return 0 if direction is Direction.C2S else 1


class Kind(enum.IntEnum):
    OPENED = 1
    DATA = 2
    END = 3
    CLOSED = 4
    LOST = 5
    EVENT = 6
    """Something the forwarding side itself has to say (an upstream that went down)."""
    RESUME = 7
    """The first record to a restarted observing process: the connections open when the one
    before it died (pickled, as events are; observer_link.py)."""
    RESUMED = 8
    """One direction of a connection open across a restart goes on here, at a frame boundary,
    after ``length`` bytes forwarded unobserved (nothing follows the header, as for ``LOST``)."""
    UNDELIVERED = 9
    """The ``DATA`` of the connection's direction from here on never reached its receiver
    (writing it failed); the record's data says why (UTF-8: ``client gone``, …)."""
    ARRIVED = 10
    """Frames of the connection's direction were read at the record's time and may be handed
    on later (held): what is decided about them as they arrive is decided here, in order with
    the records before it (nothing follows the header)."""
    SESSION_END = 11
    """The last record: the session ended in order; the data says how, in words (UTF-8). A pipe
    that ends without it was left by a forwarding process that did not end in order."""
    UNSENT = 12
    """Bytes of the connection's direction read that were neither sent on nor handed on (their
    writer's turn did not come at the connection's end): the data says how many and why (UTF-8,
    ``<size> <why>``); the observing side records them as a gap that says so."""
    UNRECORDED = 13
    """Of a frame of the connection's direction not recorded as it came (dropped, edited or
    corrupted on its way), the values ``--redact`` replaces in it, found by the forwarding
    side: the observing side's redaction hides them where they come back, and
    nothing of the frame is published (`ConnectionTap.learn_unrecorded`). The data: the values
    (unrecorded_values.py), never the frame."""
    CUT = 14
    """The connection's direction ends inside a frame, as the forwarding side followed its
    framing (link_resume.py): just before its ``END``, so that a stream whose last frame was
    shed from its first byte on (link_holds.py) is said truncated. The data: the bytes of the
    frame still to come, in decimal (``0``: not known, a line or a split header)."""
    CUT_BY = 15
    """The connection's direction's next ``END`` is the proxy's, not its side's: the data says
    how (UTF-8: ``--fault truncate``), so that what it leaves unanswered says so."""
    SPOOL_FULL = 16
    """The last record of a spool (spool.py) that reached ``--spool-limit``: the records go on
    through the pipe (nothing follows the header), their offsets counted on."""
    UNDELIVERED_LAST = 17
    """Of the ``DATA`` of the connection's direction handed on before its write to the
    receiver (a spool's, `ObserverLink.hands_on_first`), the last bytes never reached it
    (the write failed, or the connection ended while they waited): the data says how many and
    why (UTF-8, ``<size> <why>``, as ``UNSENT``'s); the observing side marks them as
    ``UNDELIVERED`` would have before them."""
    SETTLED = 18
    """Written at a batch's end (a spool's doorbell ring, `SpoolWriter.ring`, between tasks)
    when its last record was ``DATA``: the forwarding step that chunk was handed on in is
    over, so what of it did not go would have followed it already (``UNDELIVERED_LAST``),
    unless its write waits for room. The observing side holds a spool's last ``DATA`` until
    a record follows it (this one or any other), so that frames it ends are not published
    delivered before that record could say otherwise (spool_hold.py). Nothing follows the
    header."""


COUNT_KINDS = (Kind.LOST, Kind.RESUMED)
"""Kinds whose length is a number of bytes, with no data after the header."""


class HandoffError(Exception):
    """The byte stream is not a sequence of records (a bug, or not our pipe)."""


@dataclass(frozen=True)
class Record:
    kind: Kind
    conn: int
    direction: int
    t: float
    data: Chunk = b""
    """The record's bytes; from `RecordReader`, a large record's are a view of what was read."""
    lost: int = 0
    """For ``LOST`` and ``RESUMED``: how many forwarded bytes were not handed on."""


def unsent_data(size: int, why: str) -> str:
    """An ``UNSENT`` record's data: ``<size> <why>``."""
    return f"{size} {why}"


SIZE_DIGITS = 20
"""The most digits an ``UNSENT`` or ``UNDELIVERED_LAST`` record's size has (a byte count a
64-bit counter holds); more is not a size the forwarding side wrote."""


def read_unsent(data: Union[bytes, memoryview]) -> Optional[tuple[int, str]]:
    """An ``UNSENT`` (or ``UNDELIVERED_LAST``) record's size and why; None for data that is
    not one: the size is ASCII digits, at most `SIZE_DIGITS` of them (``int`` takes other
    digits too, "²", and refuses thousands of them with a message of its own)."""
    size, _, why = bytes(data).decode("utf-8", "replace").partition(" ")
    if not (size.isascii() and size.isdigit() and len(size) <= SIZE_DIGITS):
        return None
    return int(size), why


def encode(record: Record) -> bytes:
    """The record's bytes on the pipe."""
    counts = record.kind in COUNT_KINDS
    length = record.lost if counts else len(record.data)
    header = HEADER.pack(record.kind, record.conn, record.direction, record.t, length)
    return header if counts else header + record.data


class _Piped:
    """The next ``size`` bytes of the writer's pipe backlog, waiting in order with the rest."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size


class HandoffWriter:
    """Writes records to ``fd`` (made non-blocking) without ever waiting; see the module
    docstring. Not thread-safe: one forwarding loop calls it."""

    def __init__(self, fd: int, backlog: int = 0) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self.backlog = backlog
        """Bytes of records that may wait for room, in this process, before forwarded bytes
        are counted as lost instead: the chunks themselves, not copies (the observing side
        may take a while over one large frame; 0: nothing waits but the events)."""
        self.waiting_bytes = 0
        self.gone = False
        """The reading side closed the pipe: nothing is handed on any more."""
        self.lost_total = 0
        """Forwarded bytes not handed on since the start (the pipe was full, or is gone)."""
        self.handed = 0
        """Bytes of the records handed on so far (written, or waiting for room): the offset in
        the pipe's stream the reading side counts as `RecordReader.offset`."""
        self._lost: dict[int, dict[int, tuple[int, float]]] = {}
        """Bytes not handed on, by connection then direction: (bytes, when the first was).
        By connection, so that a connection's next record looks at its own losses only, not
        at those of every connection shedding at the time."""
        self._waiting: collections.deque[Union[memoryview, _Piped]] = collections.deque()
        """Encoded records that must go out before anything else, in order; the first may be
        partly written. Bytes of records that wait in the pipe backlog are `_Piped`."""
        self._piped: Optional[PipeBacklog] = None
        """Bytes from pipes that wait for room (`data_from_pipe`), made when first needed."""
        self.unrung = False
        """Records were written that the reading side was not told of (a spool's writer,
        spool.py, tells it with `ring`; on a pipe, the pipe itself tells it)."""

    @property
    def pipe_fd(self) -> int:
        """The pipe the reading side waits on (here, the one the records go through)."""
        return self.fd

    def ring(self) -> None:
        """Tell the reading side records were written (nothing to do on a pipe)."""

    def close(self) -> None:
        """Close the pipe (the reading side then reads to its end)."""
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1

    def data(self, conn: int, direction: int, t: float, data: Union[bytes, memoryview]) -> bool:
        """Hand on forwarded bytes; returns False when they were counted as lost instead."""
        if self._lost:
            # Every loss of the connection first, the other direction's too: answers handed on
            # after requests that were not would be orphans to the observing side.
            self._queue_lost(conn)
        header = HEADER.pack(Kind.DATA, conn, direction, t, len(data))
        if self.flush() and self._write_data(header, data):
            self.handed += len(header) + len(data)
            return True
        if not self.gone and self.waiting_bytes + len(header) + len(data) <= self.backlog:
            self._wait(memoryview(header))
            self._wait(memoryview(data))
            self.handed += len(header) + len(data)
            return True
        self.lose(conn, direction, t, len(data))
        return False

    def data_from_pipe(self, conn: int, direction: int, t: float, source: int, size: int) -> bool:
        """Hand on forwarded bytes that wait at the start of pipe ``source`` (kernel_pipes.py),
        without them entering the process: spliced into the handoff pipe, and what it has no
        room for into the pipe backlog (pipe_backlog.py), which `flush` splices on in order
        with the rest; only past that backlog's pipes do they wait in memory. The next
        ``size`` bytes of ``source`` are taken either way. Returns False when they were
        counted as lost instead (as `data`)."""
        if self._lost:
            self._queue_lost(conn)
        header = HEADER.pack(Kind.DATA, conn, direction, t, size)
        # A header is written whole or not at all: a pipe takes a write of at most PIPE_BUF
        # (4 KiB on Linux) bytes in one piece.
        if self.flush() and self._write_some(memoryview(header)):
            moved = self._splice_some(source, size)
            if moved < size:
                self._wait_piped(source, size - moved)
            self.handed += len(header) + size
            return True
        if self.gone or self.waiting_bytes + len(header) + size > self.backlog:
            kernel_pipes.drain(source, size)
            self.lose(conn, direction, t, size)
            return False
        self._wait(memoryview(header))
        self._wait_piped(source, size)
        self.handed += len(header) + size
        return True

    def _splice_some(self, source: int, size: int) -> int:
        """Move up to ``size`` bytes from pipe ``source`` into the handoff pipe, as far as it
        takes them now."""
        moved = 0
        while moved < size and not self.gone:
            try:
                step = kernel_pipes.splice(source, self.fd, size - moved)
            except BlockingIOError:
                break
            except OSError:
                self._gone()
                break
            if not step:
                break
            moved += step
        return moved

    def _wait_piped(self, source: int, size: int) -> None:
        """The next ``size`` bytes of pipe ``source`` wait for room: in the pipe backlog as far
        as it takes them, the rest in memory (dropped when the reader is gone)."""
        if self.gone:
            kernel_pipes.drain(source, size)
            return
        if self._piped is None:
            self._piped = PipeBacklog(kernel_pipes.PIPE_SIZE)
        taken = self._piped.take(source, size)
        if taken:
            self._waiting.append(_Piped(taken))
            self.waiting_bytes += taken
        if taken < size:
            self._wait(memoryview(kernel_pipes.drain(source, size - taken)))

    def lose(self, conn: int, direction: int, t: float, size: int) -> None:
        """Count ``size`` forwarded bytes as not handed on (a ``LOST`` record says so before
        the connection's next record)."""
        of_conn = self._lost.setdefault(conn, {})
        lost, first_t = of_conn.get(direction, (0, t))
        of_conn[direction] = (lost + size, first_t)
        self.lost_total += size

    @property
    def piped_bytes(self) -> int:
        """Bytes of records waiting for room in the pipe backlog, not in memory."""
        return 0 if self._piped is None else self._piped.held

    @property
    def waiting(self) -> bool:
        """Records wait for room in the pipe (`flush` when it is writable again)."""
        return bool(self._waiting) and not self.gone

    def event(
        self, kind: Kind, conn: int, direction: int, t: float, text: Union[str, bytes] = ""
    ) -> None:
        """A connection's ``OPENED``, ``END`` or ``CLOSED``, an ``EVENT``, or the
        ``SESSION_END``: never dropped
        (unless the reader is gone), written after the losses of its connection it follows."""
        if kind in (Kind.DATA, *COUNT_KINDS):
            raise ValueError(f"{kind.name} is not an event")
        if self.gone:
            return
        # The session's end comes after every connection's losses; another after its own.
        for lost_conn in list(self._lost) if kind is Kind.SESSION_END else [conn]:
            self._queue_lost(lost_conn)
        data = text.encode("utf-8", "replace") if isinstance(text, str) else text
        record = encode(Record(kind, conn, direction, t, data))
        self._wait(memoryview(record))
        self.handed += len(record)
        self.flush()

    def resumed(self, conn: int, direction: int, t: float, lost: int) -> None:
        """A ``RESUMED`` record (after the connection's losses): never dropped, as events."""
        if self.gone:
            return
        self._queue_lost(conn)
        record = encode(Record(Kind.RESUMED, conn, direction, t, lost=lost))
        self._wait(memoryview(record))
        self.handed += len(record)
        self.flush()

    def flush(self) -> bool:
        """Write what waits, as far as the pipe takes it; True when nothing waits any more."""
        while self._waiting and not self.gone:
            head = self._waiting[0]
            if isinstance(head, _Piped):
                written = self._give_piped(head.size)
            else:
                written = self._write_some(head)
            if self.gone:  # the reader closed the pipe: what waited was dropped
                return False
            self.waiting_bytes -= written
            if written < len(head):
                if isinstance(head, _Piped):
                    head.size -= written
                else:
                    self._waiting[0] = head[written:]
                return False
            self._waiting.popleft()
        return not self._waiting and not self.gone

    def _wait(self, view: memoryview) -> None:
        self._waiting.append(view)
        self.waiting_bytes += len(view)

    def _queue_lost(self, conn: int) -> None:
        """Queue a ``LOST`` record for each direction of ``conn`` that lost bytes, if any."""
        lost = self._lost.pop(conn, None)
        if lost is None:
            return
        for direction, (size, t) in lost.items():
            record = encode(Record(Kind.LOST, conn, direction, t, lost=size))
            self._wait(memoryview(record))
            self.handed += len(record)

    def _write_data(self, header: bytes, data: Union[bytes, memoryview]) -> bool:
        """Write a ``DATA`` record, without copying the chunk into a record first."""
        if self.gone:
            return False
        try:
            written = os.writev(self.fd, (header, data))
        except BlockingIOError:
            return False
        except OSError:
            self._gone()
            return False
        if written == 0:
            return False
        if written < len(header):
            self._wait(memoryview(header)[written:])
            self._wait(memoryview(data))
        elif written < len(header) + len(data):
            self._wait(memoryview(data)[written - len(header) :])
        return True

    def abandon(self) -> None:
        """Hand nothing on any more (the reading side is gone or given up): what waits is
        dropped and the pipe backlog's pipes closed."""
        self._gone()

    def _gone(self) -> None:
        self.gone = True
        self._waiting.clear()
        self.waiting_bytes = 0
        if self._piped is not None:
            self._piped.clear()

    def _give_piped(self, size: int) -> int:
        assert self._piped is not None
        try:
            return self._piped.give(self.fd, size)
        except OSError:
            self._gone()
            return 0

    def _write_some(self, view: memoryview) -> int:
        if self.gone:
            return 0
        try:
            return os.write(self.fd, view)
        except BlockingIOError:
            return 0
        except (BrokenPipeError, OSError):
            self._gone()
            return 0
