"""The observing side of the spool (spool.py, ``--observer-spool``): `SpoolRecords` reads the
records the forwarding process writes to the spool, as `PipeRecords` reads them from a pipe,
waiting on the doorbell at the spool's end for now, and on into the pipe once the spool ended
full (`Kind.SPOOL_FULL`)."""

from __future__ import annotations

import os
from typing import Optional

from .handoff import HEADER, Kind
from .handoff_reader import PipeRecords, RecordReader
from .spool_header import read_header

__all__ = ["SpoolRecords"]


class SpoolRecords(PipeRecords):
    """Reads the spool into a `RecordReader` as `PipeRecords` reads a pipe: at the spool's end
    for now, it waits on the doorbell (`wait_fd`), and the spool ends when the doorbell does
    (the forwarding process closed it once it wrote the last record)."""

    def __init__(self, spool_fd: int, doorbell: int, reader: RecordReader) -> None:
        super().__init__(spool_fd, reader)
        # The records begin after the header, written whole before this process started.
        self.start = read_header(spool_fd).records_start
        """Where the records begin in the spool."""
        os.lseek(spool_fd, self.start, os.SEEK_SET)
        self.wait_fd = doorbell
        self._rung_out = False
        """The doorbell ended: what the spool holds now is all there will be."""
        self._left = False
        """The spool's last record was read (`Kind.SPOOL_FULL`): the records go on in the
        pipe, after the doorbell's bytes."""
        self._early = bytearray()
        """Records read from the pipe while emptying the doorbell, before the spool's last
        record was (they follow it)."""
        self._on_records = False
        """The pipe's doorbell bytes are behind: what it holds now is records."""

    @property
    def left(self) -> bool:
        """The spool ended full: the records go on in the pipe."""
        return self._left

    def leave(self) -> None:
        """The spool ended full (`Kind.SPOOL_FULL`): read on from the pipe."""
        self._left = True

    def read(self) -> tuple[int, bool]:
        """Read what the spool has next. Returns how many bytes were read (0: the session's
        records are all read) and whether they belong to a large frame's body. Raises
        BlockingIOError when the spool has nothing now (wait on `wait_fd`)."""
        if self._left:
            return self._read_pipe()
        got, bulk = super().read()
        if got:
            return got, bulk
        # At the end for now. The doorbell is emptied first, then the spool read again: a
        # record written after that read is rung after the emptying, so the wait sees it.
        if not self._rung_out:
            self._rung_out = self._empty_doorbell()
            got, bulk = super().read()
            if got:
                return got, bulk
        if self._early or self._on_records:
            self._leave_filled()
            return self._read_pipe()
        if self._rung_out:
            return 0, False
        raise BlockingIOError

    def _leave_filled(self) -> None:
        """Records in the pipe, the spool read to its end, without its last record: it filled
        its file system, and the ``SPOOL_FULL`` leading the pipe's records says where its
        whole records end (`SpoolWriter._ended`): what was read past that goes."""
        self._left = True
        early = self._early
        if len(early) < HEADER.size or early[0] != Kind.SPOOL_FULL:
            return
        length = HEADER.unpack_from(early)[4]
        end = bytes(early[HEADER.size : HEADER.size + length])
        if end.isdigit():
            self._whole, self._filled = None, 0  # a large record's body read in part
            self.reader.drop_past(int(end))

    def _empty_doorbell(self) -> bool:
        """Read the doorbell empty; True when it ended. Records behind its bytes (the spool
        ended full meanwhile) are kept for `_read_pipe`."""
        while True:
            try:
                rung: Optional[bytes] = os.read(self.wait_fd, 4096)
            except BlockingIOError:
                return False
            if not rung:
                return True
            self._early += self._past_doorbell(rung)

    def _past_doorbell(self, data: bytes) -> bytes:
        """``data`` read from the pipe without the doorbell's bytes before the first record
        (no record's first byte, its kind, is 0)."""
        if self._on_records:
            return data
        records = data.lstrip(b"\0")
        self._on_records = bool(records)
        return records

    def _read_pipe(self) -> tuple[int, bool]:
        """After the spool's last record: the pipe's records, as `PipeRecords` reads them."""
        if self._early:
            early, self._early = bytes(self._early), bytearray()
            self.reader.receive_data(early)
            return len(early), False
        if self._rung_out:
            return 0, False
        if self._on_records:
            self.fd = self.wait_fd
            return PipeRecords.read(self)
        chunk = os.read(self.wait_fd, 4096)  # BlockingIOError: nothing now
        if not chunk:
            return 0, False
        records = self._past_doorbell(chunk)
        if records:
            self.reader.receive_data(records)
        return len(chunk), False
