"""The forwarding process's side of ``--observer child-process``: starting the observing process
(observing.py), handing it the session through an `ObserverLink`, and what happens when it
stops.

The child is ``python -m golem_proxy.live.observing``, started by observer_launch.py, in a
process group of its own (a Ctrl-C is the forwarding process's: it drains, then closes the
pipe, and the child finishes).

The control socket then carries the child's acknowledgements, which keep the recording within
the link's trail limit (observer_link.py). A child that stops acknowledging while the relay
waits for it is killed, and the session goes on as when it dies; so is one that is broken
without dying (observer_health.py).

When the child dies while the session runs, forwarding goes on, and one line on stderr says so.
A new child takes its place, at most ``restarts`` times (docs/architecture.md, "A dead
observing process is replaced"; observer_restart.py): a *standby* started ahead, or one started
then. While it
sets up the link counts what crosses; once it is ready the recording gets a line saying when
and why observation stopped (`golem_proxy.recording.shared_file` writes it), and the link takes
every open connection up at its next frame (link_resume.py); the new process hides from its
first frame the values the processes before it learned to hide (``--redact``,
control_reader.py). Past the restarts, or when one fails, the recording gets a last line saying
observation stopped there. With ``--tui`` the
terminal is given back as it was before the TUI (terminal_modes.py) whenever the process that
drew it is gone without giving it back.
"""

from __future__ import annotations

import contextlib
import math
import pickle
import socket
from typing import Callable, Optional

import trio

from golem_core.profiles import get_profile

from ..events import SessionEnded
from ..recording.shared_file import (
    RecordingFile,
    end_recording,
    end_session,
    ends_with_session_end,
)
from .control_reader import ControlReader, HeldEchoes
from .heap import TRIM_IDLE, TrimPacing, keep_freed_memory, return_memory_to_the_system
from .link_resume import OpenConnections
from .log_output import say
from .observer_health import HealthWatch
from .observer_launch import (
    ObserverSetup,
    Spawned,
    exit_reason,
    framings,
    launch,
)
from .observer_link import BACKLOG, ObserverLink
from .observer_restart import Restarts
from .recorded_gaps import recorded_gaps
from .spool import SPOOL_STALL, SpoolFile, SpoolWriter
from .spool_end import SpoolProgress, wait_while_recording
from .spool_keeping import SpoolKeeping
from .terminal_modes import SavedTerminal

__all__ = ["ObservingProcess"]

STOP_GRACE = 5.0
"""After the drain timeouts, how long the observing process may take to exit before it is
killed."""
HEAP_ALLOCATIONS_BELOW = 4 * 1024 * 1024
"""Allocations the forwarding process's heap serves (`keep_freed_memory`; above: a mapping
each): the reads (`RECV_SIZE_BULK`) fit. A 16 MiB answer waits here, in 1 MiB reads, for room
in the pipe; with glibc's defaults each answer's pages were faulted in again (~2,300 page
faults per answer, a quarter of this process's CPU for it: 20 against 15 ms)."""
TRIM_AFTER = 64 * 1024 * 1024
"""Handed on since the last trim before an idle spell (`TrimPacing`) gives freed memory back
(the in-process observer's rule, observer.py, counted in bytes handed on)."""


class ObservingProcess(Restarts, SpoolKeeping):
    """One observing process and the link to it. `start`, then run `watch` in a nursery
    while the relay serves, then `finish`."""

    def __init__(
        self,
        process: trio.Process,
        link: ObserverLink,
        control: socket.socket,
        record: Optional[RecordingFile],
        now: Callable[[], float],
        setup: Optional[ObserverSetup] = None,
        stdout: Optional[int] = None,
    ) -> None:
        self.process = process
        self.link = link
        self.control = control
        self.record = record
        self.now = now
        self.setup = setup
        self.stdout = stdout
        self.stopped_reason: Optional[str] = None
        """Why observation stopped while forwarding went on, if it did."""
        self.restarts_left = 0
        """How many more times a dead observing process is replaced (`follow_for_restarts`)."""
        self.restarted = 0
        self._replacing: Optional[str] = None
        """Why the observing process died, while a new one starts in its place."""
        self._finishing = False
        self._given_up: Optional[str] = None
        self._standby: Optional[Spawned] = None
        """With restarts left, the process that takes over when this one dies, started ahead
        (`_keep_standby`)."""
        self.terminal: Optional[SavedTerminal] = None
        """With the TUI: the terminal's modes before it started, given back when it dies."""
        self.echoes = HeldEchoes()
        """With ``--redact``: the values the observing processes learned to hide, handed to
        the one that replaces a dead one (`ObserverSetup.echoes`)."""
        self.holds_fins = False
        """The profile's idle FINs are held (`Profile.clients_read_past_answers` False): the
        link follows the frames for whether a request waits (idle_fin.py), even once no
        restart will come."""
        self._control_reader = ControlReader(self.echoes)
        self.spool: Optional[SpoolFile] = None
        """With ``--observer-spool``: the file the records go through (spool.py)."""
        self.spool_filled = trio.Event()
        self.leaving = trio.Event()
        """Set when the user asks again to stop while the end waits for the recording: the
        wait ends, and what the spool holds is left to ``golem-proxy recover``."""
        link.on_give_up = self._give_up
        link.on_learned = self.echoes.add_all

    @classmethod
    async def start(
        cls,
        setup: ObserverSetup,
        record: Optional[RecordingFile],
        now: Callable[[], float],
        stdout: Optional[int] = None,
        spool: Optional[SpoolFile] = None,
    ) -> ObservingProcess:
        """Start the observing process and wait until it is ready; its log goes to ``stdout``
        (a descriptor; None: ours); with ``spool``, the records go through it (spool.py; the
        caller removes it if this fails). A process that dies is replaced up to
        ``setup.options.observer_restarts`` times. Raises ObserverStartError."""
        keep_freed_memory(HEAP_ALLOCATIONS_BELOW)
        terminal = SavedTerminal.take() if setup.tui else None
        try:
            if spool is not None:
                # What `golem-proxy recover` decodes the spool with, should the session be
                # killed: the setup, and where the recording stands as this process starts.
                spool.begin(pickle.dumps(setup, pickle.HIGHEST_PROTOCOL))
                if record is not None:
                    spool.mark_recorded(record.write_fd)
            spawned = await launch(setup, record, stdout, -1 if spool is None else spool.read_fd)
        except BaseException:
            if terminal is not None:  # it may have drawn its TUI before it failed
                terminal.give_back()
            raise
        if spool is None:
            link = ObserverLink(spawned.write_fd, now, hold_limit=setup.options.observer_hold)
        else:
            spool.close_read()
            link = ObserverLink(
                spawned.write_fd,
                now,
                hold_limit=setup.options.observer_hold,
                stall_limit=SPOOL_STALL,
                # The spool's descriptor of the moment: a restart renews it.
                make_writer=lambda doorbell: SpoolWriter(
                    spool.write_fd,
                    doorbell,
                    setup.options.spool_limit,
                    lambda why: observing.spool_full(why),
                    BACKLOG,
                ),
                budget=setup.options.spool_limit,
            )
        link.marks_arrivals = bool(setup.layers)  # an MCP hop: its tool calls are decided so
        observing = cls(spawned.process, link, spawned.control, record, now, setup, stdout)
        observing.terminal = terminal
        observing.spool = spool
        observing.holds_fins = not get_profile(setup.profile).clients_read_past_answers
        restarts = setup.options.observer_restarts
        if restarts > 0:
            observing.restarts_left = restarts
        if restarts > 0 or math.isfinite(link.hold_limit) or observing.holds_fins:
            # Followed for a restart to take the connections up, for a connection that sheds:
            # where its stream ends, which the observing side may not see (`Kind.CUT`), and
            # for whether a request waits when the upstream closes (idle_fin.py).
            link.connections = OpenConnections(framings(setup), get_profile(setup.profile).framing)
        return observing

    async def watch(self) -> None:
        """Until cancelled: hand on what waited for room in the pipe, and notice the observing
        process dying: then start another (`restarts_left`), or `observation_stopped`."""
        while True:
            await self._keep_standby()
            code = await self._watch_process()
            self._full_spool_unread()  # a process that takes over reads the pipe, not it
            if self._finishing:
                await self._discard_standby()  # one started as the session ended
                return
            why = exit_reason(code)
            if self._given_up is not None:
                why = f"{self._given_up}, and was stopped"
            self._give_terminal_back()
            if self.restarts_left > 0 and await self._restart(why):
                continue
            await self._discard_standby()
            self.observation_stopped(why)
            return

    def _give_terminal_back(self) -> None:
        """The observing process that ran the TUI is gone: the terminal as before it."""
        if self.terminal is not None:
            self.terminal.give_back()

    async def _watch_process(self) -> int:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.link.keep_flushing)
            health = HealthWatch(
                self.process, self.control, self.link, self._broken, self._control_reader
            )
            nursery.start_soon(health.read_acknowledgements)
            nursery.start_soon(self.link.watch_stall)
            nursery.start_soon(health.watch_pipe)
            nursery.start_soon(self._give_memory_back)
            nursery.start_soon(self._watch_standby)
            nursery.start_soon(self.drop_read_full_spool)
            code = await self.process.wait()
            nursery.cancel_scope.cancel()
        return code

    async def _give_memory_back(self) -> None:
        """Until cancelled: once `TRIM_AFTER` bytes were handed on, nothing was for `TRIM_IDLE`
        and the last burst is as far back as `TrimPacing` asks, give the freed heap back
        (`KEEP_FREED` kept it meanwhile), so that a burst's or an attack's peak does not stay
        resident."""
        writer = self.link.writer
        pacing = TrimPacing(large=TRIM_AFTER // 8)
        trimmed_at = handed = writer.handed
        quiet_since = trio.current_time()
        while True:
            await trio.sleep(TRIM_IDLE / 2)
            now = trio.current_time()
            if writer.handed != handed:
                handed = writer.handed
                quiet_since = now
                pacing.worked(handed, now)
            elif (
                now - quiet_since >= TRIM_IDLE
                and not pacing.wait_left(now)
                and handed - trimmed_at >= TRIM_AFTER
            ):
                trimmed_at = handed
                return_memory_to_the_system()
                pacing.trimmed(now)

    def _broken(self, why: str) -> None:
        """The observing process misbehaves: stop it as one that stopped acknowledging is."""
        self.link.stop()
        self._give_up(why)

    def _give_up(self, why: str) -> None:
        """The link gave up (the observing process stopped acknowledging, or handing on
        failed), or the process is broken: stop it; `watch` says why once it is gone (the
        recording is ended only then, when nothing else writes it). The first reason stays."""
        if self._given_up is None:
            self._given_up = why
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()

    def observation_stopped(self, why: str, *, forwarding: bool = True) -> None:
        """The observing process is gone (while forwarding goes on, unless ``forwarding`` is
        False: at the end): say so once on stderr and end the recording with a line saying so."""
        if self.stopped_reason is not None:
            return
        self.stopped_reason = why
        self.link.stop()
        if self.holds_fins and self.link.connections is not None:
            # Still followed, at the cost a restart's wait pays: whether a request waits when
            # the upstream closes (idle_fin.py), so that an idle client's end is held as ever.
            self.link.connections.stopped_for_good()
        else:
            self.link.connections = None  # no process will take them up: stop following them
        goes_on = "; forwarding goes on" if forwarding else ""
        say(f"observation stopped ({why}){goes_on}")
        if self.record is not None and not self.record.closed:
            try:
                end_recording(self.record, self.now(), why)
            except OSError as exc:
                say(f"the recording could not be ended ({exc})")

    async def finish(self, handing_on: float, deciding: float, ended: Optional[str] = None) -> None:
        """At the end of the session (the relay drained): hand on what waits (at most
        ``handing_on`` seconds), close the pipe so that the observing process decodes what is
        left and writes its closing lines, and wait for it to exit (``deciding`` seconds plus
        `STOP_GRACE`; then it is killed and the recording ended here).

        ``ended``: the session ended in order, and why. The observing process is told last
        (`ObserverLink.end_session`) and ends the recording with its ``session-end`` line;
        when observation stopped before (or stops now), this process writes that line after
        the ``observation-stopped`` one. Without it (the session did not end in order) no
        such line is written: the recording reads as cut short."""
        self._finishing = True
        await self._discard_standby()
        if self._replacing is not None:  # the session ends before a new one took over
            self._give_terminal_back()  # which may have drawn its TUI before it was stopped
            self.observation_stopped(
                f"{self._replacing}; the session ended while a new observing process started",
                forwarding=False,
            )
            self._close(ended)
            return
        progress = SpoolProgress(self.link.acked) if self.spool is not None else None
        async with trio.open_nursery() as nursery:
            if self.control.fileno() >= 0:
                # Nothing else reads the control socket now: a process that tells of values
                # it learns while it decodes what is left must not block on a full socket.
                # (Stopped before the socket is closed, which a read must never wait on.)
                if progress is not None:
                    nursery.start_soon(progress.read, self.control, self._control_reader)
                else:
                    nursery.start_soon(
                        HealthWatch.discard_control, self.control, self._control_reader
                    )
            await self._finish_process(handing_on, deciding, ended, progress)
            nursery.cancel_scope.cancel()
        self._close(ended)

    async def _finish_process(
        self,
        handing_on: float,
        deciding: float,
        ended: Optional[str],
        progress: Optional[SpoolProgress] = None,
    ) -> None:
        handed = self.link.writer.handed
        if not self.link.gone:
            if ended is not None:
                self.link.end_session(ended)
            await self.link.flush_within(handing_on)
            handed = self.link.writer.handed
        self._close_pipe()
        code: Optional[int] = None
        patience = max(SPOOL_STALL, deciding + STOP_GRACE)
        if progress is not None:
            # However far it trails, as long as it moves on (a niced process on a busy machine
            # may go a while without the CPU: `SPOOL_STALL`): the spool holds every record.
            code = await wait_while_recording(
                self.process, progress, handed, patience, self.leaving
            )
        else:
            with trio.move_on_after(deciding + STOP_GRACE):
                code = await self.process.wait()
        if code is not None:
            # Exited once it read the spool to its end (or after it ended the recording):
            # the recording holds what the spool held.
            self.spool_recorded = code == 0 or self._ended_in_order()
            if code != 0:
                self._give_terminal_back()
                if self._ended_in_order():
                    # It recorded the whole session, then failed (its summary, its TUI): the
                    # recording is whole, and no line after its end may say otherwise.
                    say(f"{exit_reason(code)} after it ended the recording")
                else:
                    self.observation_stopped(exit_reason(code), forwarding=False)
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        with trio.CancelScope(shield=True):
            await self.process.wait()
        self._give_terminal_back()
        if self.leaving.is_set():
            why = "the session was stopped again while the observing process recorded the rest"
        elif progress is not None:
            why = f"the observing process recorded nothing for {patience:g} s and was killed"
        else:
            why = "the observing process did not finish in time and was killed"
        self.observation_stopped(why, forwarding=False)

    async def kill(self) -> None:
        """Kill the observing process and wait for it (a start that failed: the recording is
        its owner's to close)."""
        self._finishing = True
        await self._discard_standby()
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        with trio.CancelScope(shield=True):
            await self.process.wait()
        self._give_terminal_back()
        self._close_pipe()
        self.control.close()
        if self.spool is not None:
            self.spool.remove()

    def _ended_in_order(self) -> bool:
        """The recording ends with the observing process's ``session-end`` line."""
        if self.record is None or self.record.closed:
            return False
        try:
            return ends_with_session_end(self.record)
        except OSError:
            return False

    def _close_pipe(self) -> None:
        self.link.stop()
        self.link.writer.close()

    def _close(self, ended: Optional[str] = None) -> None:
        """Close what this process holds; when the session ended in order (``ended``) after
        observation stopped, end the recording with the ``session-end`` line first (no
        observing process writes it any more; the counts are that process's, not known
        here, but for the gaps in what was observed, read back: `recorded_gaps`)."""
        self.control.close()
        self.keep_or_remove()
        if self.record is None:
            return
        if ended is not None and self.stopped_reason is not None and not self.record.closed:
            try:
                gaps = recorded_gaps(self.record.read_fd)
                end_session(self.record, SessionEnded(t=self.now(), reason=ended, unobserved=gaps))
            except OSError as exc:
                say(f"the recording could not be ended ({exc})")
        self.record.close()
