"""How the MCP hop of `golem-proxy mcp` ended (stdio_relay.py): what the drain waits for, the
signals golem-proxy sends the server and why (`SignalStop`), and the words its close line and
the frames never delivered say it in."""

from __future__ import annotations

import contextlib
import signal
from dataclasses import dataclass, field
from typing import Optional

import trio

from .log_output import say
from .stdio_child import PipedChild

__all__ = [
    "DRAIN_LIMIT",
    "DRAIN_TIMEOUT",
    "PASSED_ON",
    "STOPPED_FIRST",
    "STOP_DRAIN",
    "UNDELIVERED_AFTER_EXIT",
    "UNDELIVERED_AT_STOP",
    "UNDELIVERED_PAST_LIMIT",
    "HopEnds",
    "SignalStop",
    "say",
    "signal_name",
    "stdin_overdue",
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
STOP_DRAIN = 0.25
"""Once a signal stopped the wrapper, how long the server's output may go without a byte
moving after it exited (else `DRAIN_TIMEOUT`) before it is given up: a process it started
that ignores the signal may hold its pipes."""
PASSED_ON = "passed on"
"""Why golem-proxy sent the server a signal that stopped the wrapper: to pass it on."""
STOPPED_FIRST = "golem-proxy stopped before it"
"""Why golem-proxy killed a server still running when the relay stopped (it never leaves it
running)."""


def stdin_overdue(seconds: float, signum: int) -> str:
    """Why golem-proxy sent ``signum`` once the client closed the server's stdin: the server
    had not exited ``seconds`` (``--exit-timeout``) after that (SIGTERM), nor after the
    SIGTERM (SIGKILL)."""
    why = f"it did not exit within {seconds:g} s (--exit-timeout) of the end of its stdin"
    return why if signum == signal.SIGTERM else f"{why}, nor {seconds:g} s after the SIGTERM"


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
    stderr_unwritten: int = 0
    """Bytes of the child's stderr read and recorded, never written to ours (its reader
    took nothing until the drain gave up: `StderrSink`)."""
    stopped_by: Optional[int] = None
    """The signal that stopped the wrapper, passed on to the child's group (`SignalStop`)."""
    signalled: dict[int, str] = field(default_factory=dict)
    """Each signal golem-proxy sent the child while it ran, with why (`PASSED_ON`, or the
    words after ``killed (SIGKILL):``), the first of each number: a child killed by one of
    these was killed by golem-proxy, by any other from outside (the close line says which)."""
    exited_first: bool = False
    """The child had exited when the client's close of stdin was read."""
    output_ended: bool = False
    """The child's stdout ended (it closed it, or died)."""
    output_ended_first: bool = False
    """The child's stdout had ended when the client's close of stdin was read: a killed
    child's output ends a moment before it can be seen to have exited."""

    def client_closes(self, exited: bool) -> None:
        """The client's close of stdin was read; ``exited``: the child had exited by then."""
        self.client_closed = True
        self.exited_first = exited
        self.output_ended_first = self.output_ended

    def sent(self, signum: int, why: str) -> None:
        """golem-proxy sends the running child ``signum``, ``why`` (`signalled`)."""
        self.signalled.setdefault(signum, why)

    def give_up(self, *, past_limit: bool) -> None:
        """The drain gives the child's output up: at `DRAIN_LIMIT` (``past_limit``), or once
        idle too long."""
        if past_limit:
            self.given_up = UNDELIVERED_PAST_LIMIT
        elif self.stopped_by is not None:
            self.given_up = UNDELIVERED_AT_STOP
        else:
            self.given_up = UNDELIVERED_AFTER_EXIT

    def output_cut(self, returncode: Optional[int], ended: bool) -> str:
        """How golem-proxy itself ended the server's output, not the server: it stopped
        reading before the end (``ended``: it read the end), or the server died of a signal
        golem-proxy sent it (`signalled`). ``the proxy's stop`` once a signal stopped the
        wrapper, else ``the proxy's close`` (its close line says why); "" when the server
        ended it. A line cut there is no framing error of the server's (`ConnectionTap.cut`)."""
        killed = returncode is not None and returncode < 0 and -returncode in self.signalled
        if ended and not killed:
            return ""
        return "the proxy's stop" if self.stopped_by is not None else "the proxy's close"

    def undelivered_why(self) -> str:
        """Why the child's output from now on is not delivered, as a frame says it."""
        return "client gone" if self.client_gone else self.given_up or "connection ended"

    def close_reason(self, returncode: Optional[int]) -> tuple[str, bool]:
        """The close line's reason, and whether the hop ended abnormally; says on stderr how
        much of the child's output was not delivered (when that was not said as it
        happened)."""
        reason = self._death(returncode)
        if self.client_closed:
            # Which came first: a client that closed stdin once the server died (it saw the
            # output end) did not cause the death, and one whose close the server outlived
            # did not see it.
            if self.exited_first and returncode is not None:
                reason = f"{reason}; then the client closed stdin"
            elif self.output_ended_first:
                reason = f"the child's output ended, then the client closed stdin; {reason}"
            else:
                reason = f"the client closed stdin; {reason}"
        if self.undelivered:
            why = "the client stopped reading" if self.client_gone else self._given_up_why()
            reason = f"{reason}; {self.undelivered} bytes of its output not delivered: {why}"
            if not self.client_gone:  # (a client that stopped reading was said at once)
                say(f"{self.undelivered} bytes of the server's output not delivered ({why})")
        if self.stderr_unwritten:
            # Its stderr's reader is not the protocol's: the hop did not end abnormally for it.
            why = self._given_up_why()
            reason = f"{reason}; {self.stderr_unwritten} bytes of its stderr not written: {why}"
            say(f"{self.stderr_unwritten} bytes of the server's stderr not written ({why})")
        abnormal = returncode != 0 or self.client_gone or bool(self.undelivered)
        return reason, abnormal

    def _given_up_why(self) -> str:
        """Why the drain gave up the child's output (what it had not delivered)."""
        if self.given_up == UNDELIVERED_PAST_LIMIT:
            return (
                f"its output went on for {DRAIN_LIMIT:g} s after it exited (a process it "
                "started may hold its pipes)"
            )
        if self.given_up == UNDELIVERED_AT_STOP:
            return (
                f"the wrapper was stopped by {signal_name(self.stopped_by)}, and nothing "
                f"moved for {STOP_DRAIN:g} s after the server exited"
            )
        if self.given_up:
            return f"the client took nothing for {DRAIN_TIMEOUT:g} s after the server exited"
        return "the relay stopped"

    def _death(self, returncode: Optional[int]) -> str:
        """How the child ended, and who sent the signal that killed it."""
        if returncode is None:
            return "the child is still running"
        if returncode >= 0:
            return f"the child exited with status {returncode}"
        signum = -returncode
        name = signal_name(signum)
        why = self.signalled.get(signum)
        if why == PASSED_ON:
            return f"the child was killed by signal {signum} ({name}, passed on)"
        if why:
            return f"the child was killed ({name}): {why}"
        named = f" ({name})" if name.startswith("SIG") else ""
        return f"the child was killed by signal {signum}{named}, which golem-proxy did not send"


class SignalStop:
    """Every signal golem-proxy sends the server, each noted with why (`HopEnds.signalled`:
    the close line tells a server killed by golem-proxy from one killed from outside).

    A signal that asked the wrapper to stop (the MCP client, the user) is passed on to the
    server's process group, which reaches the server and what it started as the signal would
    without us. The server gets ``--exit-timeout`` to exit (`enforce`: as long as when the
    client closes its stdin; a server that saves its state on SIGTERM must not lose it to
    us), then its group is killed;
    a second signal kills it at once. Its output is then drained for `drain_idle`. Once the
    client closed the server's stdin, the server gets ``--exit-timeout`` to exit, then
    SIGTERM, then SIGKILL (`outwait`)."""

    def __init__(self, ends: HopEnds, grace: float) -> None:
        self.ends = ends
        self.grace = grace
        """``--exit-timeout``: how long the server may take to exit after a signal passed on
        (an MCP client that kills the wrapper's group sooner, the Python MCP SDK 2 s after its
        SIGTERM, finds the recording cut, not the server's shutdown)."""
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
            self.send(signum, PASSED_ON, group=True)
        else:
            self.send(signal.SIGKILL, f"a second {signal_name(signum)} came", group=True)

    async def enforce(self, process: PipedChild) -> None:
        """Until cancelled: once asked to stop, kill the server's group if the server did not
        exit within `grace`."""
        self.process = process
        await self.asked.wait()
        with trio.move_on_after(self.grace):
            await process.wait()
            return
        name = signal_name(self.ends.stopped_by)
        why = f"it did not exit within {self.grace:g} s (--exit-timeout) of the {name} passed on"
        self.send(signal.SIGKILL, why, group=True)

    async def outwait(self, process: PipedChild, exit_timeout: float) -> None:
        """The client closed the server's stdin: give it ``exit_timeout`` to exit, then
        SIGTERM, then ``exit_timeout`` more, then SIGKILL."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            with trio.move_on_after(exit_timeout):
                await process.wait()
                return
            self.send(signum, stdin_overdue(exit_timeout, signum))

    def send(self, signum: int, why: str, *, group: bool = False) -> None:
        """Send the server ``signum`` (``group``: to its process group, what it started too),
        noted with ``why`` while the server runs. Once it exited, nothing is sent but to its
        group (what it started may still hold its pipes)."""
        process = self.process
        if process is None:
            return
        if process.returncode is None:
            self.ends.sent(signum, why)
        elif not group:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):  # it (its group) is gone
            if group:
                process.signal_group(signum)
            else:
                process.send_signal(signum)


def signal_name(signum: Optional[int]) -> str:
    """``SIGTERM`` for 15."""
    try:
        return signal.Signals(signum or 0).name
    except ValueError:
        return f"signal {signum}"
