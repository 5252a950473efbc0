"""Whose the spool is at the moments it could go (``--observer-spool``, spool.py), for
`ObservingProcess` (observer_process.py): a spool goes only once the recording holds all it
held. A spool full (``--spool-limit``) stays until the observing process acknowledged its
last record (`Kind.SPOOL_FULL`): until then a ``kill -9`` leaves it to ``golem-proxy
recover``. At the session's end, one the observing process did not read to its end (it was
killed, it died, it was given up on, the user left) stays beside the recording, and the
session's last line says that ``golem-proxy recover`` rebuilds the rest."""

from __future__ import annotations

import dataclasses
import socket
from typing import Optional

import trio

from .log_output import say
from .observer_launch import ObserverSetup
from .observer_link import ObserverLink
from .spool import SPOOL_SUFFIX, SpoolFile

__all__ = ["FULL_LOOK_EVERY", "SpoolKeeping"]

FULL_LOOK_EVERY = 0.1
"""Seconds between looks at the acknowledgements while a full spool waits to be read."""


class SpoolKeeping:
    """Mixed into `ObservingProcess`: its spool, and the full one that waits to be read."""

    link: ObserverLink
    setup: Optional[ObserverSetup]
    control: socket.socket
    spool: Optional[SpoolFile]
    full_spool: Optional[tuple[SpoolFile, int]] = None
    """A spool that reached ``--spool-limit`` and the offset its last record ends at: it goes
    once the acknowledgements pass that offset (`drop_read_full_spool`)."""
    spool_left: Optional[str] = None
    """The recording whose spool was left beside it, holding what it lacks (`keep_or_remove`)."""
    spool_recorded = False
    """The observing process read the spool to its end and exited: it may go."""
    spool_filled: trio.Event
    """Set when the spool is full (`spool_full`)."""

    def spool_full(self, why: str = "") -> None:
        """The spool reached ``--spool-limit`` (``why``: something else filled it, such as its
        file system): the session goes on as without ``--observer-spool`` (the records through
        the pipe, the relay waiting for the recording as without a spool once it holds what
        the spool held: `Ledger.drain`); the spool, no longer a whole session, goes once the
        recording holds all it held."""
        if self.spool is None or self.setup is None:
            return
        self.link.leave_spool()
        self.full_spool = (self.spool, self.link.writer.handed)
        self.spool_filled.set()
        self.spool = None
        self.setup = dataclasses.replace(self.setup, spool=False)  # for a restart
        limit = self.setup.options.spool_limit / (1024 * 1024)
        cause = why or f"--spool-limit {limit:g} MiB"
        say(
            f"the spool is full ({cause}): the session goes on as without --observer-spool: "
            "forwarding does not wait while the recording catches up with what the spool held "
            "(a kill -9 meanwhile leaves the spool to golem-proxy recover and loses what was "
            "forwarded since), then waits for the recording again (a kill -9 loses at most "
            "~100 ms of lines)"
        )

    async def drop_read_full_spool(self) -> None:
        """Until cancelled (the observing process died: then the full spool stays): once the
        spool is full, remove it when the acknowledgements passed its last record."""
        await self.spool_filled.wait()
        while self.full_spool is not None:
            spool, end = self.full_spool
            if self.link.acked >= end:
                self.full_spool = None
                spool.remove()
                return
            await trio.sleep(FULL_LOOK_EVERY)

    def _full_spool_unread(self) -> None:
        """The observing process that was to read the full spool is gone (or the session
        ends): it stays unless that process acknowledged its last record or read it to its
        end (a new one reads the pipe from where the dead one stopped, never the spool)."""
        if self.full_spool is not None:
            spool, end = self.full_spool
            self.full_spool = None
            if self.spool_recorded or self.link.acked >= end:
                spool.remove()
            else:
                self._leave(spool)

    def keep_or_remove(self) -> None:
        """At the end: remove a spool the recording holds all of; leave one it does not."""
        self._full_spool_unread()
        if self.spool is None:
            return
        if self.spool_recorded or self.link.acked >= self.link.writer.handed:
            self.spool.remove()
        else:
            self._leave(self.spool)
        self.spool = None

    def _leave(self, spool: SpoolFile) -> None:
        spool.close()
        self.spool_left = spool.path[: -len(SPOOL_SUFFIX)]

    def left_line(self) -> str:
        """The session's last words when a spool was left (empty: none was)."""
        if self.spool_left is None:
            return ""
        return (
            f"the recording lacks what the spool beside it holds: golem-proxy recover "
            f"{self.spool_left} rebuilds the rest"
        )
