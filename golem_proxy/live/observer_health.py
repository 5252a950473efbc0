"""Noticing, from the forwarding process, an observing process (``--observer child-process``)
that is broken but runs on.

The control socket carries the child's acknowledgements (`ACK`: the pipe offset up to which
the recording is written), which keep the recording within the link's trail limit
(observer_link.py), and the values its redaction learned (control_reader.py). A child that
acknowledges more than was handed on, sends a learned value no healthy child sends, or closes
its end of the pipe or the control socket and runs on, is stopped (`HealthWatch.broken`), and
the session goes on as when it dies (observer_process.py). One that repeats an acknowledgement
is read less often, so that a flood of them does not take the relay's core.
"""

from __future__ import annotations

import select
import socket
from typing import Callable

import trio

from .control_reader import ControlReader
from .observer_launch import EXIT_GRACE
from .observer_link import ObserverLink

__all__ = ["ACK_READ", "REPEATED_PAUSE", "HealthWatch"]

ACK_READ = 64 * 1024
"""Bytes of acknowledgements read at once (only the greatest counts)."""
VALUES_A_PAUSE = 64
"""Values read for one `REPEATED_PAUSE` when nothing moves on: a read holding more waits as
many pauses longer (a flood of 64 KiB of tiny values each read took 0.15 CPU-seconds a
second of the forwarding process's)."""
REPEATED_PAUSE = 0.01
"""Seconds the acknowledgements wait after a read that moved nothing on (the observing
process repeats itself): a flood of them costs the forwarding process a read per pause."""


class HealthWatch:
    """Watches one running observing process: its acknowledgements (`read_acknowledgements`)
    and its end of the handoff pipe (`watch_pipe`), run in the nursery that waits for it."""

    def __init__(
        self,
        process: trio.Process,
        control: socket.socket,
        link: ObserverLink,
        broken: Callable[[str], None],
        reader: ControlReader,
    ) -> None:
        self.process = process
        self.control = control
        self.link = link
        self.reader = reader
        """Parses what the control socket carries (it outlives this watch: what is left on the
        socket of a process that died is read at the restart, `ControlReader.drain`)."""
        self.broken = broken
        """Stops the process as one that misbehaves, saying why (`ObservingProcess._broken`)."""

    async def read_acknowledgements(self) -> None:
        """Until cancelled: take the observing process's acknowledgements to the link, and
        the values it learned to ``reader``'s `HeldEchoes`. One that acknowledges more than was
        handed on, or sends a learned value no healthy process sends, stops it (it is broken);
        a control socket closed while it runs on does too (`_stop_unless_exiting`)."""
        control = trio.socket.from_stdlib_socket(self.control)
        spare = True  # one read that moves nothing may follow a move without a pause
        while True:
            try:
                data = await control.recv(ACK_READ)
            except OSError:
                data = b""
            if not data:
                await self._stop_unless_exiting("the observing process closed the control socket")
                return
            read = self.reader.feed(data)
            if read.broken is not None:
                self.broken(read.broken)
                return
            moved = False
            if read.ack is not None:
                offset, rate = read.ack
                handed = self.link.writer.handed
                if offset > handed:
                    self.broken(
                        "the observing process acknowledged more than was handed on "
                        f"({offset} bytes of {handed})"
                    )
                    return
                moved = offset > self.link.acked
                self.link.acknowledged(offset, rate)
            if moved:
                spare = True
            elif spare and read.ack is None:
                # Values told just before the acknowledgement that follows them (or the part
                # of a long one a read split): read on at once, once.
                spare = False
            else:
                # Nothing moved on (a healthy process never repeats itself, and tells a value
                # as it becomes its newest, before an acknowledgement): a flood of
                # acknowledgements or of values, new ones too, must not take the relay's core;
                # a read of thousands of values waits the longer for them.
                spare = False
                await trio.sleep(REPEATED_PAUSE * max(1.0, read.values / VALUES_A_PAUSE))

    @staticmethod
    async def discard_control(control_socket: socket.socket, reader: ControlReader) -> None:
        """Until cancelled or the socket ends: read the control socket of a process that is
        finishing (nothing holds the relay any more), keeping the values it tells of. One that
        floods it, or breaks its rules, is read a read per `REPEATED_PAUSE` or not at all."""
        control = trio.socket.from_stdlib_socket(control_socket)
        while True:
            try:
                data = await control.recv(ACK_READ)
            except OSError:
                return
            if not data or reader.feed(data).broken is not None:
                return
            await trio.sleep(REPEATED_PAUSE)

    async def watch_pipe(self) -> None:
        """Until cancelled: notice the observing process closing its end of the handoff pipe
        while it runs on (then `_stop_unless_exiting`): the write end reports an error, which
        an epoll of its own reports (whatever it is asked for) by being readable."""
        try:
            errors = select.epoll()
        except OSError:  # out of descriptors: its death is still noticed when it exits
            return
        with errors:
            errors.register(self.link.writer.pipe_fd, 0)
            await trio.lowlevel.wait_readable(errors.fileno())
        await self._stop_unless_exiting("the observing process closed the handoff pipe")

    async def _stop_unless_exiting(self, why: str) -> None:
        """The observing process closed a descriptor it needs: unless it is exiting
        (`ObservingProcess.watch` then cancels this and says how it ended), stop it after
        `EXIT_GRACE`, saying ``why``."""
        await trio.sleep(EXIT_GRACE)
        if self.process.poll() is None:  # else it exited meanwhile: `watch` says how
            self.broken(why)
