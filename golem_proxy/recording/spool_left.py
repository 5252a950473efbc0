"""A spool left beside a recording (``proxy --observer-spool``, live/spool.py): the session
was killed while its recording trailed the wire, and the spool holds what the proxy forwarded
after the recording's last line. Every reader of a recording says so, once, where it opens it
(`open_recording`), with the command that rebuilds the recording: ``golem-proxy recover``."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Optional

from .writer_lock import writer_holds_lock

__all__ = ["SPOOL_SUFFIX", "quiet_about", "say_spool_left", "spool_left_note"]

SPOOL_SUFFIX = ".spool"
"""The spool's name: the recording's, then this."""

_said: set[str] = set()
"""The recordings whose spool was told of (a command may open one several times)."""


def spool_left_note(path: str, fd: int) -> Optional[str]:
    """The line telling of the spool beside the recording ``path`` (open on ``fd``) when its
    writer is gone (a link to nothing said as such); None when there is none, or while a
    proxy still writes it (its spool is in use, and removed at the session's end)."""
    spool = path + SPOOL_SUFFIX
    if not os.path.lexists(spool) or writer_holds_lock(fd) is not False:
        return None
    if not os.path.exists(spool):  # a link to bytes gone with the machine's restart
        return (
            f"note: {spool} links to {os.readlink(spool)}, which is gone (a memory file system "
            "is emptied when the machine restarts): nothing to recover; golem-proxy recover "
            f"{shlex.quote(path)} removes the link"
        )
    return (
        f"note: {spool} holds what the proxy forwarded after the recording's last line (it was "
        f"killed): golem-proxy recover {shlex.quote(path)}"
    )


def say_spool_left(path: str, fd: int) -> None:
    """Say `spool_left_note` on stderr, once a recording."""
    if path in _said:
        return
    note = spool_left_note(path, fd)
    if note is not None:
        _said.add(path)
        sys.stderr.write(note + "\n")
        sys.stderr.flush()


def quiet_about(path: str) -> None:
    """Say nothing of ``path``'s spool (the command at work on it: ``recover``)."""
    _said.add(path)
