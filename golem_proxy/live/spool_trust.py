"""Whether a spool found beside a recording is that recording's (`check_tied`), before
``golem-proxy recover`` decodes it onto it: a spool is tied to the recording it was made beside
by its header's ``started_at`` (in the spool's setup) and, where the recording has no whole
header line to say it, by the recording's inode, both written in the spool's header as the
session ran (spool_header.py). Another session's spool (a link swapped, a file copied in) is
refused, not decoded onto the wrong file; the same session's recording and spool copied or
moved elsewhere together are recovered there."""

from __future__ import annotations

import json
import os
from typing import Optional

from .observer_launch import ObserverSetup
from .spool_header import SpoolHeader
from .spool_pickle import safe_loads

__all__ = ["HEADER_READ", "check_tied"]

HEADER_READ = 1 << 16
"""Bytes of the recording read for its header line: a header is far shorter."""


def check_tied(header: SpoolHeader, record_fd: int) -> ObserverSetup:
    """The setup the spool's header holds, once the spool is known to be the recording's
    (open on ``record_fd``). Raises ValueError saying why not, in one line."""
    try:
        setup = safe_loads(header.setup)
    except Exception as exc:  # a pickle may fail in any way: none of it runs code here
        raise ValueError(f"its setup is not one a proxy wrote: {exc}") from None
    if not isinstance(setup, ObserverSetup):
        raise ValueError("its setup is not one a proxy wrote")
    ours = setup.header.started_at if setup.header is not None else None
    theirs = _started_at(record_fd)
    if ours is not None and theirs is not None and ours != theirs:
        raise ValueError(
            f"made for a session started at {ours}; this recording's started at {theirs}: "
            "not decoded onto it"
        )
    inode = os.fstat(record_fd).st_ino
    if header.inode is not None and header.inode != inode and (ours is None or theirs is None):
        # A recording copied or moved to another file system with its spool has another
        # inode: its header's start, the same, says it is that session's. Without one to
        # compare (a header the kill tore), the inode is all that ties them.
        raise ValueError(
            f"made beside another file (inode {header.inode}; this recording's is {inode}), "
            "and this recording has no whole header line to say it is that session's: not "
            "decoded onto it"
        )
    return setup


def _started_at(record_fd: int) -> Optional[str]:
    """The ``started_at`` of the recording's header line, None when it has no whole one."""
    first = os.pread(record_fd, HEADER_READ, 0).split(b"\n", 1)
    if len(first) < 2:
        return None
    try:
        found = json.loads(first[0])
    except ValueError:
        return None
    started = found.get("started_at") if isinstance(found, dict) else None
    return started if isinstance(started, str) else None
