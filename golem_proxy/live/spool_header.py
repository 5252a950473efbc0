"""The spool's header (spool.py): what `golem-proxy recover` needs to decode a spool left by a
killed session as its observing process would have, with the same code.

A spool is what one observing process was fed: the session's first process's spool starts at
the session's start; a replacement's, with the ``RESUME`` record it was fed (a restart renews
the spool). Before its records, the spool holds::

    MAGIC  (16 bytes)
    the size the recording had when that process started writing it  (8 bytes, big-endian;
        `UNKNOWN` until the forwarding process knows it: a restart appends its own line first)
    the recording's inode number then  (8 bytes, big-endian; written with the size)
    the setup's length  (4 bytes, big-endian)
    the process's setup (`ObserverSetup`, pickled: routes, profile, options, redaction)

The forwarding process writes it whole before the observing process starts (`write_header`),
then the recording's size in place once it is known (`mark_recorded`); the observing process
reads its records from after it (`records_start`).

The inode, with the ``started_at`` of the setup's header, ties a spool to the recording it was
made beside: `golem-proxy recover` decodes a spool onto no other file (a copy of the recording
has another inode; another session's recording another ``started_at``). A spool of the first
version (``MAGIC_V1``: no inode) is read as before, the inode not known.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Optional

__all__ = [
    "MAGIC",
    "MAGIC_V1",
    "UNKNOWN",
    "SpoolHeader",
    "mark_recorded",
    "read_header",
    "write_header",
]

MAGIC = b"golem-spool v2\n\0"
MAGIC_V1 = b"golem-spool v1\n\0"
FIXED = struct.Struct("!16sQQI")
FIXED_V1 = struct.Struct("!16sQI")
_MARK = struct.Struct("!QQ")
UNKNOWN = (1 << 64) - 1
"""The recording's size not written yet (the process was never fed a record)."""
_SIZE_AT = len(MAGIC)


@dataclass(frozen=True)
class SpoolHeader:
    recorded: Optional[int]
    """The recording's size when the process started writing it; None: not known (killed
    before that process was fed anything)."""
    inode: Optional[int]
    """The recording's inode number then; None: not known (as ``recorded``, or a spool of
    the first version)."""
    setup: bytes
    """The pickled `ObserverSetup` the process was started with."""
    records_start: int
    """Where the handoff records begin in the spool."""


def write_header(fd: int, setup: bytes) -> None:
    """Write the header at the spool's start (``fd`` is at offset 0; the records follow at its
    offset after this). Raises OSError."""
    data = memoryview(FIXED.pack(MAGIC, UNKNOWN, UNKNOWN, len(setup)) + setup)
    while data:
        data = data[os.write(fd, data) :]


def mark_recorded(fd: int, size: int, inode: int) -> None:
    """Write, in place, the recording's size and inode number when the process starts
    writing it (one write: a kill leaves both or neither). Raises OSError."""
    os.pwrite(fd, _MARK.pack(size, inode), _SIZE_AT)


def read_header(fd: int) -> SpoolHeader:
    """The header of the spool open on ``fd`` (read with ``pread``: the offset stays). Raises
    ValueError when it is not a spool's, OSError."""
    fixed = os.pread(fd, FIXED.size, 0)
    if fixed[: len(MAGIC)] == MAGIC_V1 and len(fixed) >= FIXED_V1.size:
        _, recorded, length = FIXED_V1.unpack_from(fixed)
        inode, start = UNKNOWN, FIXED_V1.size
    elif len(fixed) < FIXED.size:
        raise ValueError("too short for a spool's header")
    else:
        magic, recorded, inode, length = FIXED.unpack(fixed)
        if magic != MAGIC:
            raise ValueError("not a spool (no spool header)")
        start = FIXED.size
    setup = os.pread(fd, length, start)
    if len(setup) < length:
        raise ValueError("its header is cut short")
    return SpoolHeader(
        None if recorded == UNKNOWN else recorded,
        None if recorded == UNKNOWN or inode == UNKNOWN else inode,
        setup,
        start + length,
    )
