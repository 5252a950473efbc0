"""A dead observing process replaced (docs/architecture.md, "A dead observing process is
replaced"), for `ObservingProcess` (observer_process.py): a *standby* started ahead while
restarts are left, so that its interpreter's start is not a gap in the recording, and at a
death the take-over: the recording cut at the dead one's last whole line and continued with a
line saying when and why observation stopped, the new process given what the dead one learned
to hide, and the link resumed so that it takes every open connection up at its next frame."""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import socket
from typing import Callable, Optional

import trio

from ..recording.shared_file import RecordingFile, cut_unfinished_line, restart_recording
from ..terminal import counted
from .control_reader import ControlReader, HeldEchoes
from .link_gone import said
from .log_output import say
from .observer_launch import ObserverSetup, ObserverStartError, Spawned, launch, spawn, take_over
from .observer_link import ObserverLink
from .spool import SpoolFile

__all__ = ["STANDBY_SETTLED", "Restarts"]

STANDBY_SETTLED = 1.0
"""Seconds a standby must have waited before it died for another to be started in its place
(one that dies sooner would only die again: the restart then starts a process itself)."""


class Restarts:
    """Mixed into `ObservingProcess`, whose process, link and recording a restart replaces and
    goes on with."""

    process: trio.Process
    link: ObserverLink
    control: socket.socket
    record: Optional[RecordingFile]
    now: Callable[[], float]
    setup: Optional[ObserverSetup]
    stdout: Optional[int]
    restarts_left: int
    restarted: int
    echoes: HeldEchoes
    _replacing: Optional[str]
    _finishing: bool
    _given_up: Optional[str]
    _standby: Optional[Spawned]
    _control_reader: ControlReader
    _close_pipe: Callable[[], None]
    _give_terminal_back: Callable[[], None]
    spool: Optional[SpoolFile]
    observation_stopped: Callable[[str], None]

    async def _keep_standby(self) -> None:
        """With restarts left, start the process that will replace this one if it dies: its
        interpreter's start and imports (~0.25 s) then happen now, not while what crosses is
        a gap in the recording; it waits for its setup, idle (~30 MiB)."""
        if self.restarts_left <= 0 or self._standby is not None or self._finishing:
            return
        tui = self.setup is not None and self.setup.tui
        with contextlib.suppress(ObserverStartError):  # else one is started at the restart
            self._standby = await spawn(self.record, self.stdout, tui=tui)

    async def _watch_standby(self) -> None:
        """Until cancelled: a standby that dies while it waits (a ``pkill`` of every observing
        process, the kernel's OOM killer) is replaced, once it had waited `STANDBY_SETTLED`."""
        while (standby := self._standby) is not None:
            waited_from = trio.current_time()
            await standby.process.wait()
            if self._standby is not standby:
                return
            self._standby = None
            await standby.discard()
            if trio.current_time() - waited_from < STANDBY_SETTLED:
                return
            await self._keep_standby()

    async def _discard_standby(self) -> None:
        standby, self._standby = self._standby, None
        if standby is not None:
            await standby.discard()

    async def _restart(self, why: str) -> bool:
        """Replace the dead observing process (see the module docstring). False when the new
        one did not start (the session's observation then stops)."""
        self.link.stop()
        stopped_at = self.now()
        self.restarts_left -= 1
        self.restarted += 1
        say(f"observation stopped ({why}); forwarding goes on; restarting it")
        self._replacing = why
        self._close_pipe()
        # What it told of and no read took yet: a value it learned just before it died.
        self._control_reader.drain(self.control)
        self.control.close()
        recorded_up_to = -1
        if self.record is not None and not self.record.closed:
            # Now, before a new process reads the recording back (its in-flight requests, the
            # TUI's rows): it ends with the dead one's last whole line (restart_recording cuts
            # it too, and says so if it cannot).
            with contextlib.suppress(OSError):
                recorded_up_to = cut_unfinished_line(self.record)
        assert self.setup is not None and self.link.connections is not None
        setup = dataclasses.replace(
            self.setup,
            continues_recording=self.record is not None,
            restarted_because=why,
            recorded_up_to=recorded_up_to,
            taking_over=self.link.connections.known() if self.record is not None else (),
            echoes=self.echoes.values(),
        )
        standby, self._standby = self._standby, None
        try:
            spool_fd = -1
            if self.spool is not None:
                # A spool of its own, from the RESUME record on: what the dead one did not
                # read is a gap, as without a spool.
                try:
                    self.spool.renew()
                    self.spool.begin(pickle.dumps(setup, pickle.HIGHEST_PROTOCOL))
                except OSError as exc:
                    raise ObserverStartError(f"its spool could not be made: {exc}") from None
                spool_fd = self.spool.read_fd
            spawned = None
            if standby is not None:
                with contextlib.suppress(ObserverStartError):  # it died waiting: start another
                    await take_over(standby, setup, spool_fd)
                    spawned = standby
            if spawned is None:
                self._give_terminal_back()  # a standby that failed may have drawn its TUI
                spawned = await launch(setup, self.record, self.stdout, spool_fd)
            if self.spool is not None:
                self.spool.close_read()
        except ObserverStartError as exc:
            self._give_terminal_back()
            self._replacing = None
            self.observation_stopped(f"{why}; it could not be restarted: {exc}")
            return False
        followed = self.link.connections
        assert followed is not None
        # From here to the link's resume, nothing waits: what crosses is either counted as
        # unobserved so far, or handed on to the new process.
        taken_up = len(followed)
        detail = (
            f"{why} at {stopped_at:.3f} s; a new observing process took over at "
            f"{self.now():.3f} s: {said(followed.gone)}; "
            f"{counted(taken_up, 'open connection')} taken up again at the next frame"
        )
        seq = 0
        if self.record is not None and not self.record.closed:
            try:
                seq = restart_recording(self.record, stopped_at, detail)
            except OSError as exc:
                await spawned.discard()
                self._give_terminal_back()  # before a line the new TUI's screen would take along
                say(f"the recording could not be continued ({exc})")
                self.record.close()
                self._replacing = None
                self.observation_stopped(f"{why}; the recording could not be continued")
                return False
        self.process, self.control = spawned.process, spawned.control
        self._control_reader = ControlReader(self.echoes)
        self._given_up = None
        self._replacing = None
        if self.spool is not None and self.record is not None and not self.record.closed:
            # After this process's own line: the new one writes from here.
            with contextlib.suppress(OSError):  # then `recover` cannot take this spool up
                self.spool.mark_recorded(self.record.write_fd)
        self.link.resume(spawned.write_fd, seq)
        if not setup.tui:  # the TUI says it above its table; a line here would cross its screen
            say(
                f"observation restarted: {counted(taken_up, 'open connection')} taken up at "
                "the next frame; what crossed meanwhile is a gap in the recording"
            )
        return True
