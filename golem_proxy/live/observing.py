"""The observing process of ``proxy --observer child-process``: everything after forwarding.

Started by the forwarding process (observer_process.py) as ``python -m
golem_proxy.live.observing PIPE CONTROL RECORD RECORD_READ``: it reads the session's setup
from the CONTROL socket, answers ``ready``, then reads handoff records (handoff.py) from PIPE
until end of file and does with them what the proxy does in one process: the same taps
(decoding, pairing, checks, redaction) behind the same `Observer`, the same hub, recorder, log
and closing summary (session.py). Only the source of the events differs: `HandoffSource`
(handoff_source.py) instead of the relay. RECORD is the recording's descriptor, opened by the
forwarding process (``-1``: no recording); RECORD_READ one to read it back with (a process that
takes over from one that died looks up where the connections it takes over stand in it).

After each batch of records it acknowledges, on the CONTROL socket, how far the recording
is written (handoff_source.py): the forwarding process holds its relay when the recording
trails the wire by more than its limit (observer_link.py). With ``--redact`` it also tells, on
that socket, each value its rules replaced when it first learns it: the forwarding process
keeps them and hands them to the process that replaces this one (control_reader.py).

Ctrl-C is the forwarding process's to handle (this process runs in a process group of its own
and ignores SIGINT besides): the session ends when the forwarding process closes the pipe, or
dies, and decoding what is left takes at most the drain timeout.
"""

from __future__ import annotations

import functools
import os
import pickle
import signal
import socket
import struct
import sys
from collections.abc import Sequence
from typing import Callable, Optional

import trio
from rich.console import Console

from golem_core.profiles import get_profile

from .acknowledger import Acknowledger
from .handoff_source import HandoffSource
from .heap import keep_freed_memory
from .hub import EventHub
from .layer_taps import LayerTaps
from .log_output import CLOSE_TIMEOUT, MCP_CLOSE_TIMEOUT, TerminalOutput, print_closing
from .observer_launch import SPOOL_FD, TUI_AHEAD, ObserverSetup
from .proxy_options import new_tap
from .session import ProxySession, SessionConfig

__all__ = [
    "main",
    "observe",
    "session_config",
]

UNENDED = "the proxy stopped without ending the session (killed?)"
"""Why the recording ends cut short, when the forwarding process never ended the session."""
LENGTH = struct.Struct("!I")
"""The setup's length before it, on the control socket."""


SPOOL_NICE = 10
"""How much lower this process runs when it reads a spool (`ObserverSetup.spool`)."""
SWITCH_INTERVAL = 0.001
"""The interpreter's thread switch interval in this process (Python's default is 5 ms). The
decoding thread, the recorder's writer thread (whose writes the acknowledgements wait for)
and, with ``--tui``, the TUI's thread share it; at 5 ms a thread that gave the interpreter
up for a system call waited up to the whole interval to get it back, once per write: under
1 MiB of zero-length frames (tens of thousands of lines a 64 KiB record) the writer wrote the
first 1,024 frames' lines and then nothing for 5 s, and the stall watchdog stopped
observation, while at 1 ms it was recorded whole (34,000 frames/s). With the TUI drawing, at
~3,000 exchanges/s: sequential round trips 0.72x the relay's instead of 0.63x, p99 1.8x
instead of 2.3x."""
HEAP_ALLOCATIONS_BELOW = 32 * 1024 * 1024
"""Allocations this process's heap serves (`keep_freed_memory`; glibc's greatest): a 16 MiB
frame joined whole fits. Each 16 MiB answer is read, joined and written, and with glibc's
defaults each was a fresh mapping faulted in whole (~2,700 page faults per answer; ~115 kept:
59 against 55 ms of this process's CPU per answer); the observer gives the memory back once
idle (observer.py)."""


def receive_setup(control: socket.socket) -> ObserverSetup:
    """The setup the forwarding process sends first: a length, then the pickled setup.
    Raises EOFError when the forwarding process went away before sending it."""
    size = LENGTH.unpack(_receive_exactly(control, LENGTH.size))[0]
    setup = pickle.loads(_receive_exactly(control, size))
    if not isinstance(setup, ObserverSetup):
        raise TypeError(f"not an observer setup: {type(setup).__name__}")
    return setup


def receive_spool(control: socket.socket) -> int:
    """The spool's descriptor, which follows the setup when it says so (`SPOOL_FD`). Raises
    EOFError when it does not come."""
    message, fds, _, _ = socket.recv_fds(control, 1, 1)
    if message != SPOOL_FD or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise EOFError("no spool came with the setup")
    return fds[0]


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the forwarding process went away")
        data += chunk
    return bytes(data)


async def observe(
    config: SessionConfig,
    setup: ObserverSetup,
    pipe_fd: int,
    control: socket.socket,
    prepare: Callable[[ProxySession], None] = lambda session: None,
    record_read_fd: int = -1,
    on_ready: Callable[[], None] = lambda: None,
    spool_fd: int = -1,
    recovered: Optional[str] = None,
    on_broken: Callable[[str], None] = lambda why: None,
) -> str:
    """Run the session from the handoff until the pipe ends (``prepare`` sees it before it
    runs: the TUI attaches its sink there; ``on_ready`` is called once the forwarding process
    is told it is ready); returns its closing line. ``recovered`` (`golem-proxy recover`): the
    session-end line says it, and ends the recording also when the records end without one;
    ``on_broken`` is then told where and why they stopped early, at one that does not read."""
    profile = config.profile
    handoffs: list[HandoffSource] = []

    def ended(t: float, reason: str) -> None:
        session.stop(reason if recovered is None else f"{reason}; {recovered}", t=t)

    def unended(t: float) -> None:
        assert recovered is not None
        broken = handoffs[0].broken
        if broken is not None:
            on_broken(broken)
        session.stop(recovered if broken is None else f"{recovered}; {broken}", t=t)

    def source(hub: EventHub) -> HandoffSource:
        acknowledger = Acknowledger(control)
        handoff = HandoffSource(
            hub,
            pipe_fd,
            setup.bound,
            profile,
            setup.options,
            acknowledger,
            lambda: session.recorder,
            LayerTaps(setup.layers) if setup.layers else new_tap,
            record_read_fd,
            setup.taking_over,
            on_end=ended,
            # The requests in flight it takes up count for the closing line, as if seen here.
            held_again=lambda requests: session.tally.held_again(requests),
            ack_at_once=acknowledger.at_once,
            spool_fd=spool_fd,
            on_unended=None if recovered is None else unended,
        )
        if handoff.redactor is not None:
            # Before any frame: what the processes before learned is hidden from the first one
            # (a restart); what this one learns, the forwarding process keeps for the next.
            handoff.redactor.echoes.remember(setup.echoes)
            handoff.redactor.echoes.on_new = acknowledger.learned
        handoffs.append(handoff)
        return handoff

    session = ProxySession(config, source)
    prepare(session)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        control.sendall(b"ready\n")
        on_ready()
    # The pipe ended without the session's end (`Kind.SESSION_END`): the forwarding process
    # died (a SIGKILL) or failed, and the recording stops where it did, unended.
    return session.summary(cut_short=UNENDED)


def session_config(
    setup: ObserverSetup, record_fd: int, console: Optional[Console] = None
) -> SessionConfig:
    """The session as the forwarding process described it (``record_fd`` -1: no recording)."""
    return SessionConfig(
        routes=[bound.route for bound in setup.bound],
        profile=get_profile(setup.profile),
        options=setup.options,
        record_path=setup.record_path,
        console=console,
        verbosity=setup.verbosity,
        layers=setup.layers,
        record_fd=record_fd if record_fd >= 0 else None,
        header=setup.header,
        continues_recording=setup.continues_recording,
        took_over=bool(setup.restarted_because),
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Observe one session (see the module docstring); returns the exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Not niced (but reading a spool, below): the relay waits for this process when the
    # recording trails the wire (observer_link.py), so a lower priority slows forwarding too
    # (kill -9 lag at load 5: median 35 ms, worst 119 ms niced by 10; 17 and 27 ms not niced).
    args = list(argv or sys.argv[1:])
    pipe_fd, control_fd, record_fd, record_read_fd = (int(arg) for arg in args[:4])
    if args[4:] == [TUI_AHEAD]:
        # Started to run the TUI (maybe as a standby): Textual's imports (~0.3 s) happen
        # before the setup comes, not in a take-over's gap.
        import golem_proxy.tui.observing_process  # noqa: F401
    keep_freed_memory(HEAP_ALLOCATIONS_BELOW)
    sys.setswitchinterval(SWITCH_INTERVAL)
    control = socket.socket(fileno=control_fd)
    try:
        setup = receive_setup(control)
        spool_fd = receive_spool(control) if setup.spool else -1
    except EOFError:
        return 1
    if setup.spool:
        # Nothing waits for this process now (spool.py): it may leave the cores to forwarding
        # under load, and catch up once the load is gone.
        os.nice(SPOOL_NICE)
    if setup.tui:  # this process owns the terminal: the TUI shows what the log would
        from ..tui.observing_process import observe_with_tui

        config = session_config(setup, record_fd)
        return observe_with_tui(config, setup, pipe_fd, control, record_read_fd, spool_fd)
    output = TerminalOutput(sys.stdout, max_lines=setup.log_buffer)
    config = session_config(setup, record_fd, output.console())
    try:
        summary = trio.run(
            functools.partial(observe, record_read_fd=record_read_fd, spool_fd=spool_fd),
            config,
            setup,
            pipe_fd,
            control,
        )
    finally:
        # (`golem-proxy mcp`'s session has layers: its log is on its client's stderr.)
        output.close(MCP_CLOSE_TIMEOUT if setup.layers else CLOSE_TIMEOUT)
    # Where the log went, maybe `golem-proxy mcp`'s stderr: a client that never reads it must
    # not keep this process (and the session's end) waiting.
    print_closing(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
