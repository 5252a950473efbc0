"""The spool (``--observer-spool``): forwarding that never waits for observation.

With ``--observer child-process`` the forwarding process hands every chunk through a pipe and
holds a connection's relay while the recording trails the wire (observer_link.py): that keeps
a ``kill -9`` of everything to ~100 ms of lost lines, and paces forwarding at the observing
process's speed. With the spool the same handoff records (handoff.py, spliced bodies included)
go to a regular file beside the recording, ``<recording>.spool``, instead: a write to a file
never waits for a reader, so the bytes are on their way to disk at once, and the relay waits
only when the observing process trails by more than the spool's budget (``--spool-limit``:
`Ledger.budget`). The observing process reads the file from its own descriptor, from the
start, in order, and decodes exactly what it would have read from the pipe; the pipe stays, as
a doorbell (`SpoolWriter.ring`: one byte after each batch, never waited for) and as the sign
that the forwarding process is done (its end of file).

The forwarding side: `SpoolFile` (the file, created as a recording is: 0600, no symlink
followed) and `SpoolWriter`. The observing side: `SpoolRecords` (spool_records.py). The
session's end: `SpoolProgress`, `wait_while_recording` (spool_end.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import Callable, Optional, Union

from ..recording.files import read_side
from ..recording.spool_left import SPOOL_SUFFIX
from . import kernel_pipes
from .handoff import HandoffWriter, Kind, Record, encode
from .spool_header import mark_recorded, write_header
from .spool_place import OpenedSpool, create_spool, identity, remove_spool

__all__ = [
    "RING_EVERY",
    "SPOOL_LIMIT",
    "SPOOL_STALL",
    "SPOOL_SUFFIX",
    "SpoolFile",
    "SpoolWriter",
    "spool_path",
]

SPOOL_LIMIT = 2 * 1024 * 1024 * 1024
"""Bytes of records a spool may hold (``--spool-limit``): past them the session goes on as
without a spool (`SpoolWriter.on_full`); the observing process may leave as many
unacknowledged before the relay waits for it."""
SPOOL_STALL = 60.0
"""Seconds without an acknowledgement moving on, while something is outstanding, after which
an observing process reading a spool counts as stuck (`ObserverLink.stall_limit`): niced, on
a busy machine, it may go a while without the CPU, and nothing waits for it meanwhile."""

RING_EVERY = 0.01
"""Seconds records written to the spool gather before the doorbell rings for them all: a ring
per batch was a system call and a wake-up of the observing process per sequential call, each
costing the CPU the relay shares; the recording trails the wire by this much more, and a
``kill -9`` loses nothing more (the records are in the spool already)."""


def spool_path(record_path: str) -> str:
    """The spool beside the recording ``record_path``."""
    return record_path + SPOOL_SUFFIX


class SpoolFile:
    """The spool of one observing process: written here (``write_fd``), read by it from a
    descriptor of its own (``read_fd``, handed over at its start). A new observing process
    that takes over from a dead one gets a new spool (`renew`)."""

    def __init__(
        self, path: str, write_fd: int, read_fd: int, data: Optional[str] = None, need: int = 0
    ) -> None:
        self.path = path
        self.need = need
        """The bytes it may come to hold (``--spool-limit``), which its place must have room for."""
        self.write_fd = write_fd
        self.read_fd = read_fd
        self.data = data
        """Where its bytes are when ``path`` is a link to them (spool_place.py)."""
        self.made: Optional[OpenedSpool] = None
        """The link and file made (`create`), which `remove` removes while the names lead to
        them; None: by name."""

    @classmethod
    def create(cls, path: str, *, overwrite: bool = False, need: int = 0) -> SpoolFile:
        """Create the spool found at ``path`` (mode 0600, no symlink followed; its bytes on a
        memory file system when there is one, spool_place.py; without ``overwrite``, ``path``
        must not exist). Raises OSError."""
        stream, data = create_spool(path, overwrite=overwrite, need=need)
        with stream:
            write_fd = os.dup(stream.fileno())
        try:
            read_fd = read_side(path if data is None else data, write_fd)
            made = os.fstat(write_fd)
            link_id = identity(path)
        except BaseException:
            os.close(write_fd)
            remove_spool(path, data)
            raise
        spool = cls(path, write_fd, read_fd, data, need)
        # What `remove` takes away: these, not whatever the names lead to by then.
        spool.made = OpenedSpool(-1, path, data, link_id or (-1, -1), (made.st_dev, made.st_ino))
        return spool

    def begin(self, setup: bytes) -> None:
        """Write the spool's header (spool_header.py) for the process started with ``setup``
        (pickled), before it starts. Raises OSError."""
        write_header(self.write_fd, setup)

    def mark_recorded(self, record_fd: int) -> None:
        """Note in the header the size the recording (open on ``record_fd``) has now, just
        before the process is fed its first record: where `golem-proxy recover` cuts a copy of
        the recording to decode the spool onto. Raises OSError."""
        found = os.fstat(record_fd)
        mark_recorded(self.write_fd, found.st_size, found.st_ino)

    def close_read(self) -> None:
        """The observing process has its own descriptor now: close ours."""
        self.read_fd = _closed(self.read_fd)

    def renew(self) -> None:
        """Start again with an empty spool (a new observing process takes over: what the dead
        one did not read is a gap, as without a spool). Raises OSError."""
        self.remove()
        fresh = SpoolFile.create(self.path, need=self.need)
        self.write_fd, self.read_fd, self.data = fresh.write_fd, fresh.read_fd, fresh.data
        self.made = fresh.made

    def close(self) -> None:
        """Close it, leaving it on the disk (for `golem-proxy recover`)."""
        self.write_fd = _closed(self.write_fd)
        self.read_fd = _closed(self.read_fd)

    def remove(self) -> None:
        """Close it and take it off the disk (only the file it made: `OpenedSpool.remove`)."""
        self.close()
        if self.made is None:
            remove_spool(self.path, self.data)
        else:
            self.made.remove()


def _read_back(fd: int, size: int, at: int) -> bytes:
    """``size`` bytes at ``at`` of the spool open for writing only on ``fd``: read through a
    descriptor of its own (Linux's ``/proc/self/fd``), the spool's path being a link that
    anyone may have replaced since."""
    if not size:
        return b""
    reading = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
    try:
        got = os.pread(reading, size, at)
    finally:
        os.close(reading)
    if len(got) != size:
        raise OSError(f"the spool gave back {len(got)} of its last {size} bytes")
    return got


def _closed(fd: int) -> int:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)
    return -1


FILLED = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
"""A write's errors that say the spool can grow no more (its file system full, a file size
limit, a quota): as reaching ``--spool-limit`` (`SpoolWriter.on_full`)."""


class SpoolWriter(HandoffWriter):
    """A `HandoffWriter` whose records go to the spool's file, whole at once (a file takes
    every write: nothing waits for room), and whose reader is told of them through the
    ``doorbell`` pipe (`ring`). A write that finds the spool's file system full (`FILLED`) is
    the spool full: the spool is cut back to its last whole record, ends with its
    ``SPOOL_FULL`` record, and this writer goes on through the doorbell's pipe as a
    `HandoffWriter` (``backlog`` bytes may wait for room there), the records of the call that
    filled it first (`_filled`); then ``on_full`` says why. Another failed write raises, so
    that the link stops the observing process rather than leave a hole in the spool."""

    def __init__(
        self,
        spool_fd: int,
        doorbell: int,
        limit: Optional[int] = None,
        on_full: Optional[Callable[[str], None]] = None,
        backlog: int = 0,
    ) -> None:
        super().__init__(spool_fd, 0)
        os.set_blocking(doorbell, False)
        self.doorbell = doorbell
        self.limit = limit
        """The bytes of records the spool may hold (``--spool-limit``); None: no bound."""
        self.on_full = on_full
        """Called once, with why (empty: ``limit``), after a batch that takes the spool past
        ``limit`` or a call whose write found its file system full: the link goes back to the
        pipe (`ObserverLink.leave_spool`)."""
        self.piped_backlog = backlog
        self.piped = False
        """The spool filled its file system: records go through the doorbell's pipe."""
        self._at = os.lseek(spool_fd, 0, os.SEEK_CUR) if spool_fd >= 0 else 0
        """Where the next byte goes in the spool."""
        self._records_start = self._at
        """Where its records begin (after its header, written before this writer)."""
        self._whole = self._at
        """Where the records of the call at work begin: the end of the last whole record."""
        self._carried: Optional[bytearray] = None
        """Once the spool filled up during a call: that call's bytes, for the pipe."""
        self._t = 0.0
        """The time of the call at work (the ``SPOOL_FULL`` record's, should it fill up)."""
        self._after_data = False
        """The last record written is ``DATA``: the next ring settles it (`Kind.SETTLED`)."""

    def data(self, conn: int, direction: int, t: float, data: Union[bytes, memoryview]) -> bool:
        self._whole, self._t, self._after_data = self._at, t, True
        return self._ended(super().data(conn, direction, t, data))

    def data_from_pipe(self, conn: int, direction: int, t: float, source: int, size: int) -> bool:
        self._whole, self._t, self._after_data = self._at, t, True
        return self._ended(super().data_from_pipe(conn, direction, t, source, size))

    def event(
        self, kind: Kind, conn: int, direction: int, t: float, text: Union[str, bytes] = ""
    ) -> None:
        self._whole, self._t, self._after_data = self._at, t, False
        super().event(kind, conn, direction, t, text)
        self._ended(True)

    def resumed(self, conn: int, direction: int, t: float, lost: int) -> None:
        self._whole, self._t, self._after_data = self._at, t, False
        super().resumed(conn, direction, t, lost)
        self._ended(True)

    def _fill_up(self, exc: OSError, rest: bytes) -> None:
        """A write found the spool's file system full (else ``exc`` is raised): what this call
        wrote goes back out of the spool, and with ``rest`` (what it had yet to write) waits
        for the pipe (`_ended`)."""
        if exc.errno not in FILLED or self.piped:
            raise exc
        if self._carried is None:
            written = self._at - self._whole
            self._carried = bytearray(_read_back(self.fd, written, self._whole))
            os.ftruncate(self.fd, self._whole)
            os.lseek(self.fd, self._whole, os.SEEK_SET)
            self._at = self._whole
        self._carried += rest

    def _ended(self, result: bool) -> bool:
        """After a call: if the spool filled up during it, go on through the pipe, its first
        record the spool's last (`SPOOL_FULL`), which says where the spool's whole records end
        (the reader, reading as the spool grew, may have read part of the record cut off:
        `SpoolRecords._leave_filled`). Not in the spool: the reader may be past that point."""
        carried, self._carried = self._carried, None
        if carried is None:
            return result
        end = str(self._whole - self._records_start).encode()
        full = encode(Record(Kind.SPOOL_FULL, 0, 0, self._t, end))
        carried[:0] = full
        self.handed += len(full)
        # The doorbell's bytes before the first record in the pipe; no ``SETTLED`` into the
        # spool (full, or past its end): the pipe's ``SPOOL_FULL`` releases a held chunk.
        self._after_data = False
        self.ring()
        self.piped = True
        self.unrung = False
        self.fd = self.doorbell
        self.backlog = self.piped_backlog
        self._wait(memoryview(bytes(carried)))
        self.flush()
        on_full, self.on_full = self.on_full, None
        if on_full is not None:
            on_full("its file system is full")
        return result

    @property
    def pipe_fd(self) -> int:
        return self.doorbell

    def ring(self) -> None:
        """One byte on the doorbell when records were written since the last: the observing
        process, waiting at the spool's end, reads on. A full doorbell has bytes for it
        already; a broken one belongs to a process whose death its watch sees."""
        if not self.unrung or self.doorbell < 0 or self.piped:
            return
        if self._after_data:
            # Rung between tasks, never inside a forwarding step: the write the last chunk
            # was handed on before is done, or waits for room (`Kind.SETTLED`).
            self.event(Kind.SETTLED, 0, 0, self._t)
            if self.piped:
                return  # the spool filled up with it: the pipe's records need no ring
        self.unrung = False
        with contextlib.suppress(OSError):
            os.write(self.doorbell, b"\0")
        if self.on_full is not None and self.limit is not None and self.handed > self.limit:
            on_full, self.on_full = self.on_full, None
            on_full("")

    def close(self) -> None:
        """Close the doorbell (the observing process reads the spool to its end, then ends).
        The spool's descriptor is its `SpoolFile`'s to close."""
        self.on_full = None  # the end: nothing more to hand on, whatever its size
        self.ring()
        self.doorbell = _closed(self.doorbell)
        self.fd = -1

    def _write_data(self, header: bytes, data: Union[bytes, memoryview]) -> bool:
        if self.piped:
            return super()._write_data(header, data)
        if self.gone:
            return False
        if self._carried is not None:  # the spool filled up earlier in this call
            self._carried += header + bytes(data)
            return True
        try:
            written = os.writev(self.fd, (header, data))
        except OSError as exc:
            self._fill_up(exc, header + bytes(data))
            return True
        self._at += written
        if written < len(header) + len(data):  # interrupted, or the disk filled up
            rest = (memoryview(header + bytes(data)))[written:]
            self._write_some(rest)
        self.unrung = True
        return True

    def _write_some(self, view: memoryview) -> int:
        if self.piped:
            return super()._write_some(view)
        if self.gone:
            return 0
        done = 0
        while done < len(view):
            if self._carried is not None:
                self._carried += view[done:]
                return len(view)
            try:
                written = os.write(self.fd, view[done:])
            except OSError as exc:
                self._fill_up(exc, bytes(view[done:]))
                return len(view)
            if not written:
                raise OSError("the spool took no bytes")
            done += written
            self._at += written
        self.unrung = True
        return done

    def _splice_some(self, source: int, size: int) -> int:
        if self.piped:
            return super()._splice_some(source, size)
        moved = 0
        while moved < size and not self.gone:
            if self._carried is not None:
                self._carried += kernel_pipes.drain(source, size - moved)
                return size
            try:
                step = kernel_pipes.splice(source, self.fd, size - moved)
            except OSError as exc:
                self._fill_up(exc, kernel_pipes.drain(source, size - moved))
                return size
            if not step:
                raise OSError("the spool took no bytes")
            moved += step
            self._at += step
        self.unrung = True
        return moved
