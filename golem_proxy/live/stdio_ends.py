"""How the MCP hop of `golem-proxy mcp` ended (stdio_relay.py): what the drain waits for, a
stop asked by a signal (`SignalStop`), and the words its close line and the frames never
delivered say it in."""

from __future__ import annotations

import contextlib
import signal
import sys
from dataclasses import dataclass
from typing import Optional

import trio

from .stdio_child import PipedChild

__all__ = [
    "DRAIN_LIMIT",
    "DRAIN_TIMEOUT",
    "SIGNAL_GRACE",
    "STOP_DRAIN",
    "UNDELIVERED_AFTER_EXIT",
    "UNDELIVERED_AT_STOP",
    "UNDELIVERED_PAST_LIMIT",
    "HopEnds",
    "SignalStop",
    "say",
    "signal_name",
]

DRAIN_TIMEOUT = 2.0
"""How long the child's output may go without a byte moving once it exited, before it is
given up (a grandchild that inherited its pipes could hold them open for ever, and a client
may stop reading)."""
DRAIN_LIMIT = 30.0
"""The longest the child's output goes on once it exited, however it moves (a grandchild that
writes for ever, to a client that reads)."""
UNDELIVERED_AFTER_EXIT = "client took nothing after the server exited"
"""Why the child's last bytes were not delivered, when the drain gave up on the client."""
UNDELIVERED_PAST_LIMIT = "output went on past the drain's limit after the server exited"
"""Why, when the drain gave up at `DRAIN_LIMIT`."""
UNDELIVERED_AT_STOP = "the wrapper was stopped"
"""Why, when the drain gave up at `STOP_DRAIN` (the wrapper was stopped by a signal)."""
SIGNAL_GRACE = 0.75
"""Once a signal stops the wrapper (passed on to the server's process group), how long the
server may take to exit before its group is killed. A client that signals waits only so long
(the Python MCP SDK kills the wrapper's group 2 s after its SIGTERM), and the recording must
be ended within that: this, `STOP_DRAIN` and the GOLEM routes' `CUT_GRACE` leave it about
0.8 s."""
STOP_DRAIN = 0.25
"""Once a signal stopped the wrapper, how long the server's output may go without a byte
moving after it exited (else `DRAIN_TIMEOUT`) before it is given up: a process it started
that ignores the signal may hold its pipes."""


@dataclass
class HopEnds:
    """How the hop ended, for the close line."""

    client_closed: bool = False
    client_gone: bool = False
    """Our stdout failed (the client stopped reading and closed it): the child's output is
    still drained and observed, no longer forwarded."""
    given_up: str = ""
    """Why the drain gave up the child's output, once it did (`UNDELIVERED_AFTER_EXIT`,
    `UNDELIVERED_PAST_LIMIT`)."""
    undelivered: int = 0
    """Bytes of the child's output read and never delivered to the client."""
    stopped_by: Optional[int] = None
    """The signal that stopped the wrapper, passed on to the child's group (`SignalStop`)."""
    killed: str = ""
    """Why the wrapper killed the child after that signal, once it did."""

    def give_up(self, *, past_limit: bool) -> None:
        """The drain gives the child's output up: at `DRAIN_LIMIT` (``past_limit``), or once
        idle too long."""
        if past_limit:
            self.given_up = UNDELIVERED_PAST_LIMIT
        elif self.stopped_by is not None:
            self.given_up = UNDELIVERED_AT_STOP
        else:
            self.given_up = UNDELIVERED_AFTER_EXIT

    def undelivered_why(self) -> str:
        """Why the child's output from now on is not delivered, as a frame says it."""
        return "client gone" if self.client_gone else self.given_up or "connection ended"

    def close_reason(self, returncode: Optional[int]) -> tuple[str, bool]:
        """The close line's reason, and whether the hop ended abnormally; says on stderr how
        much of the child's output was not delivered (when that was not said as it
        happened)."""
        if returncode is None:
            reason = "the child is still running"
        elif returncode == -signal.SIGKILL and self.killed:
            reason = f"the child was killed (SIGKILL): {self.killed}"
        elif returncode < 0 and -returncode == self.stopped_by:
            name = signal_name(self.stopped_by)
            reason = f"the child was killed by signal {-returncode} ({name}, passed on)"
        elif returncode < 0:
            reason = f"the child was killed by signal {-returncode}"
        else:
            reason = f"the child exited with status {returncode}"
        if self.client_closed:
            reason = f"the client closed stdin; {reason}"
        if self.undelivered:
            if self.client_gone:
                why = "the client stopped reading"
            elif self.given_up == UNDELIVERED_PAST_LIMIT:
                why = (
                    f"its output went on for {DRAIN_LIMIT:g} s after it exited (a process it "
                    "started may hold its pipes)"
                )
            elif self.given_up == UNDELIVERED_AT_STOP:
                why = (
                    f"the wrapper was stopped by {signal_name(self.stopped_by)}, and nothing "
                    f"moved for {STOP_DRAIN:g} s after the server exited"
                )
            elif self.given_up:
                why = f"the client took nothing for {DRAIN_TIMEOUT:g} s after the server exited"
            else:
                why = "the relay stopped"
            reason = f"{reason}; {self.undelivered} bytes of its output not delivered: {why}"
            if not self.client_gone:  # (a client that stopped reading was said at once)
                say(f"{self.undelivered} bytes of the server's output not delivered ({why})")
        abnormal = returncode != 0 or self.client_gone or bool(self.undelivered)
        return reason, abnormal


class SignalStop:
    """A signal asked the wrapper to stop (the MCP client, the user): it is passed on to the
    server's process group, which reaches the server and what it started as the signal would
    without us. The server gets `SIGNAL_GRACE` to exit (`enforce`), then its group is killed;
    a second signal kills it at once. Its output is then drained for `drain_idle`."""

    def __init__(self, ends: HopEnds) -> None:
        self.ends = ends
        self.asked = trio.Event()
        self.process: Optional[PipedChild] = None

    @property
    def drain_idle(self) -> float:
        """How long the server's output may go without a byte moving after it exited."""
        return DRAIN_TIMEOUT if self.ends.stopped_by is None else STOP_DRAIN

    def ask(self, signum: int) -> None:
        """Stop the server with ``signum`` (a second time: kill its group now)."""
        if self.ends.stopped_by is None:
            self.ends.stopped_by = signum
            self.asked.set()
            self._signal(signum)
        else:
            self._kill(f"a second {signal_name(signum)} came")

    async def enforce(self, process: PipedChild) -> None:
        """Until cancelled: once asked to stop, kill the server's group if the server did not
        exit within `SIGNAL_GRACE`."""
        self.process = process
        await self.asked.wait()
        with trio.move_on_after(SIGNAL_GRACE):
            await process.wait()
            return
        name = signal_name(self.ends.stopped_by)
        self._kill(f"it did not exit within {SIGNAL_GRACE:g} s of the {name} passed on")

    def _kill(self, why: str) -> None:
        if self.process is not None and self.process.returncode is None:
            self.ends.killed = why
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
                self.process.signal_group(signum)


def signal_name(signum: Optional[int]) -> str:
    """``SIGTERM`` for 15."""
    try:
        return signal.Signals(signum or 0).name
    except ValueError:
        return f"signal {signum}"


def say(text: str) -> None:
    """One line on stderr, ``golem-proxy: `` first."""
    try:
        sys.stderr.write(f"golem-proxy: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
