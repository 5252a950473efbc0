"""The end of a session whose records go through a spool (``--observer-spool``, spool.py):
the forwarding process waits for the observing process to decode the whole spool, however far
it trails, as long as it moves on, saying on stderr what is left when that takes a while; then
the spool is removed by its owner (spool_keeping.py), unless the wait ended first (nothing moved
on for `SPOOL_STALL`, or the user stopped the session again: `leave_on_another`): then it stays
for ``golem-proxy recover``."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from typing import Optional

import trio

from .control_reader import ControlReader
from .observer_health import ACK_READ

__all__ = ["SAY_AFTER", "SpoolProgress", "leave_on_another", "wait_while_recording"]

SAY_AFTER = 1.0
"""Seconds the wait lasts before stderr says what is left to record."""
LOOK_EVERY = 0.25
"""Seconds between looks at the progress while the wait lasts."""


class SpoolProgress:
    """The observing process's acknowledgements while it finishes the spool (`read`): how far
    it recorded."""

    def __init__(self, acked: int) -> None:
        self.acked = acked

    async def read(self, control_socket: socket.socket, reader: ControlReader) -> None:
        """Until cancelled or the socket ends: take the acknowledgements (and keep the values
        it tells of, as `HealthWatch.discard_control` does)."""
        control = trio.socket.from_stdlib_socket(control_socket)
        while True:
            try:
                data = await control.recv(ACK_READ)
            except OSError:
                return
            if not data:
                return
            read = reader.feed(data)
            if read.broken is not None:
                return
            if read.ack is not None:
                self.acked = max(self.acked, read.ack[0])


async def wait_while_recording(
    process: trio.Process,
    progress: SpoolProgress,
    handed: int,
    patience: float,
    leaving: Optional[trio.Event] = None,
) -> Optional[int]:
    """Wait for the observing process to exit while it records the spool's last ``handed -
    acked`` bytes; returns its exit status, or None once nothing moved on for ``patience``
    seconds or ``leaving`` is set (the user stopped the session again: a user can always
    leave; the caller stops the process, and the spool stays for ``golem-proxy recover``)."""
    started = moved_at = trio.current_time()
    last = progress.acked
    said = False
    while True:
        with trio.move_on_after(LOOK_EVERY):
            return await process.wait()
        if leaving is not None and leaving.is_set():
            return None
        now = trio.current_time()
        if progress.acked != last:
            last, moved_at = progress.acked, now
        elif now - moved_at >= patience:
            return None
        if not said and now - started >= SAY_AFTER and handed > last:
            said = True
            left = (handed - last) / (1024 * 1024)
            sys.stderr.write(
                f"golem-proxy: recording the last {left:.1f} MiB… (stop again to leave it "
                "to golem-proxy recover)\n"
            )
            sys.stderr.flush()


async def leave_on_another(signals: AsyncIterator[int], leaving: trio.Event) -> None:
    """Until cancelled: a stop signal while the end waits for the recording (Ctrl-C again)
    sets ``leaving``: the wait ends (`wait_while_recording`)."""
    async for _ in signals:
        sys.stderr.write("golem-proxy: stopping now: the rest stays in the spool\n")
        sys.stderr.flush()
        leaving.set()
