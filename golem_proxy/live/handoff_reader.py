"""The observing side of the handoff (handoff.py): records out of the bytes read from the pipe.

`RecordReader` is sans-IO: ``receive_data(bytes)``, then `next_record()` until it returns None.
`PipeRecords` reads the pipe into one the way that costs the observing process least: as much
as there is at a time, except while a large frame's body comes, when it reads each record's
header alone and then its data whole, in one read of its size. Read a megabyte at a time, most
of a body's records (up to 1 MiB each, observer_link.py) straddled two reads and their pieces
were joined: 11 MiB copied per 16 MiB answer, about half a millisecond of the observing
process's main thread (`bench/cpu_budget.py`, two runs each: 9.2 ms per answer before, 8.4 and
8.9 after).
"""

from __future__ import annotations

import collections
import os
from typing import Optional

from golem_core.decoders import Chunk

from .handoff import COUNT_KINDS, HEADER, HandoffError, Kind, Record

__all__ = [
    "MAX_DATA",
    "READ_SIZE",
    "READ_WHOLE_FROM",
    "VIEW_FROM",
    "PipeRecords",
    "RecordReader",
]

READ_SIZE = 1024 * 1024
"""The most one read of the pipe takes."""
MAX_DATA = 64 * 1024 * 1024
"""The largest record the reader accepts: a corrupt or hostile length is an error, not an
allocation."""


VIEW_FROM = 16 * 1024
"""Record data at least this large is a view of the bytes read (copying 16 MiB twice was a
tenth of the observing process's time per 16 MiB answer); smaller data is copied, which costs
less than a view the decoder would have to copy anyway."""
READ_WHOLE_FROM = 64 * 1024
"""Record data at least this large is read on its own, into a buffer of its size, when the
reader can (`RecordReader.data_ahead`). A large frame's body comes in records of 64 KiB (the
copy way) to 1 MiB (moved by the kernel); a smaller record between two of them would end the
way of reading them whole, and cost a join to start it again."""


class RecordReader:
    """Records from the bytes received so far (see the module docstring). The data of a large
    record is a view of the bytes received, not a copy (`VIEW_FROM`)."""

    def __init__(self, max_data: int = MAX_DATA) -> None:
        self.max_data = max_data
        self.offset = 0
        """Bytes of the whole records returned so far: where the writer's `handed` stood
        after the last of them."""
        self._chunks: collections.deque[Chunk] = collections.deque()
        self._pos = 0
        """Where the next record starts in the first chunk."""
        self._size = 0
        """Bytes received and not returned yet."""
        self._large_last = False
        """The last record returned had at least `READ_WHOLE_FROM` bytes of data and nothing
        was received after it: a large frame's body, whose next record is likely one too."""

    @property
    def waiting(self) -> int:
        """Bytes received and not returned yet."""
        return self._size

    def drop_past(self, offset: int) -> None:
        """Forget the bytes received past ``offset`` (where the writer's `handed` stood): the
        start of a record that never came whole there (a spool that filled up, spool.py)."""
        keep = offset - self.offset
        if keep >= self._size:
            return
        kept = bytes(self._peek(keep)) if keep > 0 else b""
        self._chunks.clear()
        self._pos = self._size = 0
        self._large_last = False
        self.receive_data(kept)

    def receive_data(self, data: Chunk) -> None:
        if data:
            self._chunks.append(data)
            self._size += len(data)

    def read_size(self, most: int) -> int:
        """How many bytes to read next, at most ``most``. While a large frame's body comes,
        reads end at the records' bounds: a record's header is read alone after a large
        record (`_large_last`), so that the next one's data can be read whole
        (`data_ahead`), and the rest of a large record partly here is read up to its end,
        so that the next read begins at a header. Otherwise as much as there is."""
        size = self._size
        if size < HEADER.size:
            return HEADER.size - size if self._large_last else most
        kind, _, _, _, length = self._header()
        if kind in COUNT_KINDS or length < READ_WHOLE_FROM or length > self.max_data:
            return most
        return max(1, min(most, HEADER.size + length - size))

    def data_ahead(self) -> int:
        """When what was received and not returned yet is exactly the header of a record with
        at least `READ_WHOLE_FROM` bytes of data: their number. The caller reads them into one
        buffer and hands it to `receive_data`, and the record's data is a view of it, not
        pieces of reads joined. 0 otherwise (read on as usual)."""
        if self._size != HEADER.size:
            return 0
        kind, _, _, _, length = self._header()
        if kind in COUNT_KINDS or not READ_WHOLE_FROM <= length <= self.max_data:
            return 0  # a bad length is `next_record`'s to say
        return int(length)

    def next_record(self) -> Optional[Record]:
        """The next whole record, or None until more bytes arrive.
        Raises HandoffError on an unknown kind or direction, or a length over ``max_data``."""
        if self._size < HEADER.size:
            return None
        kind_value, conn, direction, t, length = self._header()
        try:
            kind = Kind(kind_value)
        except ValueError:
            raise HandoffError(f"unknown record kind {kind_value}") from None
        if direction not in (0, 1):
            raise HandoffError(f"unknown direction {direction}")
        if kind in COUNT_KINDS:
            self._take(HEADER.size)
            self._large_last = False
            self.offset += HEADER.size
            return Record(kind, conn, direction, t, lost=length)
        if length > self.max_data:
            raise HandoffError(f"a record of {length} bytes (at most {self.max_data})")
        if self._size < HEADER.size + length:
            return None
        self._take(HEADER.size)
        data = self._take(length)
        self.offset += HEADER.size + length
        self._large_last = length >= READ_WHOLE_FROM and not self._size
        return Record(kind, conn, direction, t, data)

    def torn(self) -> Optional[Record]:
        """At the records' end for good (a killed session's spool): the last record, cut off
        by the kill, as far as it came, when it is a ``DATA`` record whose header is whole:
        its data is stream bytes in order, so the bytes there are are true as far as they go
        (those of a 1 MiB piece of a large answer the client may have read already). None:
        nothing waits, or what waits is not such a record (it goes). Everything waiting is
        consumed. Raises HandoffError as `next_record` does."""
        size = self._size
        if size < HEADER.size:
            return None
        kind, conn, direction, t, length = self._header()
        if kind != Kind.DATA:
            return None
        if direction not in (0, 1):
            raise HandoffError(f"unknown direction {direction}")
        if length > self.max_data:
            raise HandoffError(f"a record of {length} bytes (at most {self.max_data})")
        if size >= HEADER.size + length:
            return None  # whole: `next_record`'s (not torn)
        self._take(HEADER.size)
        data = bytes(self._take(size - HEADER.size))
        self.offset += size
        return Record(Kind.DATA, conn, direction, t, data)

    def _header(self) -> tuple[int, int, int, float, int]:
        """The next record's header's fields (its bytes are here)."""
        head, pos = self._chunks[0], self._pos
        if len(head) - pos >= HEADER.size:
            fields = HEADER.unpack_from(head, pos)
        else:  # the header spans chunks: join its few bytes
            fields = HEADER.unpack(bytes(self._peek(HEADER.size)))
        return fields  # type: ignore[return-value]

    def _peek(self, size: int) -> bytearray:
        """The first ``size`` bytes not returned yet (there are that many), copied."""
        found = bytearray()
        pos = self._pos
        for chunk in self._chunks:
            found += chunk[pos : pos + size - len(found)]
            pos = 0
            if len(found) == size:
                break
        return found

    def _take(self, size: int) -> Chunk:
        """Consume the next ``size`` bytes (there are that many): a view of a chunk when they
        are in one and there are at least `VIEW_FROM` of them, else a copy."""
        if not size:
            return b""
        head, pos = self._chunks[0], self._pos
        end = pos + size
        if end <= len(head):
            taken: Chunk = memoryview(head)[pos:end] if size >= VIEW_FROM else head[pos:end]
            self._pos = end
            if end == len(head):
                self._chunks.popleft()
                self._pos = 0
            self._size -= size
            return taken
        pieces: list[Chunk] = []
        left = size
        while left:
            head = self._chunks[0]
            step = min(left, len(head) - pos)
            pieces.append(memoryview(head)[pos : pos + step])
            left -= step
            pos += step
            if pos == len(head):
                self._chunks.popleft()
                pos = 0
        self._pos = pos
        self._size -= size
        return b"".join(pieces)


class PipeRecords:
    """Reads a handoff pipe into a `RecordReader` (see the module docstring)."""

    def __init__(self, fd: int, reader: RecordReader) -> None:
        self.fd = fd
        self.wait_fd = fd
        """What to wait on, readable, when `read` finds nothing now."""
        self.reader = reader
        self._whole: Optional[bytearray] = None
        """A large record's data being read whole, ``_filled`` bytes of it so far."""
        self._filled = 0

    def read(self) -> tuple[int, bool]:
        """Read what the pipe has next into the reader. Returns how many bytes were read (0:
        the pipe ended) and whether they belong to a large frame's body (read by records).
        Raises BlockingIOError when the pipe has nothing now."""
        reader = self.reader
        whole = self._whole
        if whole is None:
            ahead = reader.data_ahead()
            size = ahead or reader.read_size(READ_SIZE)
            # A header read alone after a large body may be a small record's, long after it:
            # not counted as the body's (the loop reading would not gather for it).
            rest_of_record = size < READ_SIZE and reader.waiting >= HEADER.size
            chunk = os.read(self.fd, size)
            if 0 < len(chunk) < ahead:
                # Rare (14 reads in 880 of a run of 16 MiB answers): the rest is read into a
                # buffer of the data's size. Not from the start: a new bytearray is zeroed,
                # which cost as much as the joins this saves.
                self._whole, self._filled = bytearray(ahead), len(chunk)
                self._whole[: len(chunk)] = chunk
                return len(chunk), True
            reader.receive_data(chunk)
            return len(chunk), bool(ahead) or rest_of_record
        with memoryview(whole) as view:
            got = os.readv(self.fd, [view[self._filled :]])
        self._filled += got
        if got and self._filled == len(whole):
            self._whole = None
            reader.receive_data(memoryview(whole))
        return got, True

    def ended(self) -> None:
        """The records ended for good inside a large record read whole (a spool a kill cut
        off): what came of it goes to the reader, as its bytes would have (`RecordReader.torn`
        takes them)."""
        whole, self._whole = self._whole, None
        if whole is not None:
            self.reader.receive_data(memoryview(whole)[: self._filled])
