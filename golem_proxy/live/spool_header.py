"""The spool's header (spool.py): what `golem-proxy recover` needs to decode a spool left by a
killed session as its observing process would have, with the same code.

A spool is what one observing process was fed: the session's first process's spool starts at
the session's start; a replacement's, with the ``RESUME`` record it was fed (a restart renews
the spool). Before its records, the spool holds::

    MAGIC  (16 bytes)
    the size the recording had when that process started writing it  (8 bytes, big-endian;
        `UNKNOWN` until the forwarding process knows it: a restart appends its own line first)
    the setup's length  (4 bytes, big-endian)
    the process's setup (`ObserverSetup`, pickled: routes, profile, options, redaction)

The forwarding process writes it whole before the observing process starts (`write_header`),
then the recording's size in place once it is known (`mark_recorded`); the observing process
reads its records from after it (`records_start`).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Optional

__all__ = ["MAGIC", "UNKNOWN", "SpoolHeader", "mark_recorded", "read_header", "write_header"]

MAGIC = b"golem-spool v1\n\0"
FIXED = struct.Struct("!16sQI")
UNKNOWN = (1 << 64) - 1
"""The recording's size not written yet (the process was never fed a record)."""
_SIZE_AT = len(MAGIC)


@dataclass(frozen=True)
class SpoolHeader:
    recorded: Optional[int]
    """The recording's size when the process started writing it; None: not known (killed
    before that process was fed anything)."""
    setup: bytes
    """The pickled `ObserverSetup` the process was started with."""
    records_start: int
    """Where the handoff records begin in the spool."""


def write_header(fd: int, setup: bytes) -> None:
    """Write the header at the spool's start (``fd`` is at offset 0; the records follow at its
    offset after this). Raises OSError."""
    data = memoryview(FIXED.pack(MAGIC, UNKNOWN, len(setup)) + setup)
    while data:
        data = data[os.write(fd, data) :]


def mark_recorded(fd: int, size: int) -> None:
    """Write, in place, the recording's size when the process starts writing it. Raises
    OSError."""
    os.pwrite(fd, struct.pack("!Q", size), _SIZE_AT)


def read_header(fd: int) -> SpoolHeader:
    """The header of the spool open on ``fd`` (read with ``pread``: the offset stays). Raises
    ValueError when it is not a spool's, OSError."""
    fixed = os.pread(fd, FIXED.size, 0)
    if len(fixed) < FIXED.size:
        raise ValueError("too short for a spool's header")
    magic, recorded, length = FIXED.unpack(fixed)
    if magic != MAGIC:
        raise ValueError("not a spool (no spool header)")
    setup = os.pread(fd, length, FIXED.size)
    if len(setup) < length:
        raise ValueError("its header is cut short")
    return SpoolHeader(None if recorded == UNKNOWN else recorded, setup, FIXED.size + length)
