"""Starting an observing process (``--observer child-process``): the command line, the
descriptors it is given, and the handshake on its control socket, until it says ``ready``.
`ObservingProcess` (observer_process.py) starts the first one and any that replaces it.

The child is ``python -m golem_proxy.live.observing`` (observing.py), in a process group of
its own unless it runs the TUI. It gets the handoff pipe's read end, a control socket (the
setup goes out on it pickled, ``ready`` comes back before any client is accepted) and the
recording's descriptors (the write end both processes share, and one to read it back at a
restart). The control socket then carries the child's acknowledgements (`ACK`), and with
``--redact`` each value its rules replaced that it had not learned before (`learned_message`),
which the forwarding process keeps for the process that replaces it (control_reader.py).
"""

from __future__ import annotations

import array
import contextlib
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Optional

import trio

from golem_core.framing import Framing
from golem_core.profiles import get_profile

from ..recording.format import Header, RouteInfo
from ..recording.shared_file import RecordingFile
from .kernel_pipes import PIPE_SIZE, resize
from .log import Verbosity
from .proxy_options import BoundRoute, ProxyOptions

__all__ = [
    "ACK",
    "EXIT_GRACE",
    "LEARNED",
    "LEARNED_MAX",
    "OBSERVING_MODULE",
    "PIPE_SIZE",
    "SPOOL_FD",
    "START_TIMEOUT",
    "TEST_MODULE",
    "TUI_AHEAD",
    "ObserverSetup",
    "ObserverStartError",
    "Spawned",
    "exit_reason",
    "framings",
    "launch",
    "learned_message",
    "spawn",
    "take_over",
]

ACK = struct.Struct("!QQ")
"""An acknowledgement on the control socket: the handoff offset up to which everything is
decoded and its lines written to the kernel (`golem_proxy.live.handoff_reader.RecordReader.offset`),
and the bytes a second of its own time the observing process got through lately (0: not known
yet), which sets how far the recording may trail in bytes (`ObserverLink.acknowledged`)."""
LEARNED = 2**64 - 1
"""In an `ACK`'s offset field (no offset is that large): not an acknowledgement, but a value the
observing process's redaction learned (`Echoes`), whose UTF-8 length is the second field and
whose bytes follow."""
LEARNED_MAX = 64 * 1024
"""Bytes of the longest value the observing process tells the forwarding one of: a rule that
names a bulk value (``result.image``) would send each image here, and the forwarding process
keeps the last `MAX_ECHOES` (4 MiB a value, 1 GiB); a value longer than this is hidden only by
the process that learned it."""
SPOOL_FD = b"S"
"""The byte the spool's descriptor comes with, after the setup (`ObserverSetup.spool`)."""
TUI_AHEAD = "tui"
"""The last argument of an observing process that will run the TUI: it imports it while it
waits for its setup."""
EXIT_GRACE = 1.0
"""Seconds an observing process that closed the handoff pipe or the control socket has to
exit (a dying process closes them first) before it is stopped as broken."""
START_TIMEOUT = 30.0
"""How long the observing process may take to say it is ready (an interpreter starting on a
busy machine)."""

OBSERVING_MODULE = "golem_proxy.live.observing"
TEST_MODULE = "GOLEM_PROXY_TEST_OBSERVING_MODULE"
"""An environment variable for the tests: a module of the test suite (``tests.``) run as the
observing process instead of `OBSERVING_MODULE` (a fake one that misbehaves,
tests/live/fake_observing.py). Anything else in it is refused, so a user cannot start another
program through it by mistake."""


def learned_message(value: str) -> bytes:
    """The control socket's message telling the forwarding process of ``value`` (`LEARNED`);
    empty when it is longer than `LEARNED_MAX`."""
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) > LEARNED_MAX:
        return b""
    return ACK.pack(LEARNED, len(raw)) + raw


class ObserverStartError(OSError):
    """The observing process did not start (or died before it was ready)."""


@dataclass(frozen=True)
class ObserverSetup:
    """What the observing process needs of the session, sent pickled on the control socket."""

    profile: str
    bound: tuple[BoundRoute, ...]
    options: ProxyOptions
    header: Optional[Header]
    record_path: Optional[str]
    verbosity: Verbosity
    log_buffer: int
    layers: tuple[RouteInfo, ...] = ()
    """Hops served outside the relay (`SessionConfig.layers`: the MCP stdio hop of
    ``golem-proxy mcp``), decoded with their own profile."""
    tui: bool = False
    """Run the TUI (``proxy --tui``): the observing process owns the terminal."""
    notes: tuple[str, ...] = ()
    """With ``tui``: what the TUI shows above the table (`live_notes`), made here, where the
    fault plan is (the options sent along leave it out)."""
    continues_recording: bool = False
    """A restart: the recording holds the header and the lines of the process before; this
    one appends to it (`golem_proxy.live.link_resume.Resumption` says from which line)."""
    taking_over: tuple[tuple[int, str], ...] = ()
    """A restart: the connections the process before knew (connection, route), which this one
    looks up in the recording before it says it is ready (`HandoffSource.bind`)."""
    restarted_because: str = ""
    """A restart: why the process before stopped (what the TUI says above its table)."""
    recorded_up_to: int = -1
    """A restart: where the dead process's last whole line ends in the recording (its torn
    line cut off), which the TUI reads back up to; -1: not known (nothing is read back)."""
    spool: bool = False
    """The records come through a spool (``--observer-spool``, spool.py): its descriptor
    follows the setup on the control socket (`SPOOL_FD`), the pipe is its doorbell."""
    echoes: tuple[str, ...] = field(default=(), repr=False)
    """A restart: the values the redaction of the processes before learned (`LEARNED`, kept
    by the forwarding process: control_reader.py), oldest first, which this one hides from
    its first frame on as if it had learned them itself. Secrets: never in a repr."""


@dataclass
class Spawned:
    """An observing process started, its control socket and the handoff pipe's write end:
    not set up yet until `take_over` (a standby waits so, its interpreter started and its
    modules imported, to replace one that dies)."""

    process: trio.Process
    control: socket.socket
    write_fd: int

    async def discard(self) -> None:
        """Kill it and close what leads to it (it holds nothing of the session's yet, or has
        failed)."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        with trio.CancelScope(shield=True):
            await self.process.wait()
        with contextlib.suppress(OSError):
            os.close(self.write_fd)
        self.control.close()


async def spawn(
    record: Optional[RecordingFile], stdout: Optional[int], *, tui: bool = False
) -> Spawned:
    """Start an observing process, which waits for its setup (`take_over`). Raises
    ObserverStartError (then nothing is left open)."""
    opened: list[int] = []
    sockets: list[socket.socket] = []
    try:
        read_fd, write_fd = os.pipe()
        opened += [read_fd, write_fd]
        resize(write_fd, PIPE_SIZE)
        ours, theirs = socket.socketpair()
        sockets += [ours, theirs]
        record_fd = -1 if record is None else record.write_fd
        record_read_fd = -1 if record is None else record.read_fd
        passed = [read_fd, theirs.fileno()]
        passed += [] if record is None else [record_fd, record_read_fd]
        group = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
        if tui:
            # The TUI reads the terminal, which only its foreground process group may do
            # (another group is stopped by SIGTTOU/SIGTTIN): it stays in ours. In raw mode a
            # Ctrl-C is a key for the TUI; otherwise the observing process ignores SIGINT.
            group = {}
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", _observing_module(), str(read_fd),
             str(theirs.fileno()), str(record_fd), str(record_read_fd),
             *([TUI_AHEAD] if tui else [])],
            pass_fds=passed,
            stdin=None if tui else subprocess.DEVNULL,
            stdout=stdout,
            **group,  # type: ignore[arg-type]
        )  # fmt: skip
    except BaseException as exc:
        # Out of descriptors, refused, or cancelled while starting: nothing is left open.
        for fd in opened:
            os.close(fd)
        for sock in sockets:
            sock.close()
        if isinstance(exc, OSError):
            raise ObserverStartError(f"the observing process did not start: {exc}") from None
        raise
    theirs.close()
    os.close(read_fd)
    return Spawned(process, ours, write_fd)


async def launch(
    setup: ObserverSetup,
    record: Optional[RecordingFile],
    stdout: Optional[int],
    spool_fd: int = -1,
) -> Spawned:
    """Start an observing process with ``setup`` and wait until it is ready. Raises
    ObserverStartError (then nothing is left open or running)."""
    spawned = await spawn(record, stdout, tui=setup.tui)
    await take_over(spawned, setup, spool_fd)
    return spawned


async def take_over(spawned: Spawned, setup: ObserverSetup, spool_fd: int = -1) -> None:
    """Send a spawned observing process ``setup`` (with ``setup.spool``, the spool's
    descriptor to read, ``spool_fd``, after it) and wait until it is ready. Raises
    ObserverStartError (then it is discarded)."""
    try:
        await _handshake(spawned.process, spawned.control, setup, spool_fd)
    except BaseException as exc:
        await spawned.discard()
        if isinstance(exc, OSError) and not isinstance(exc, ObserverStartError):
            raise ObserverStartError(f"the observing process did not start ({exc})") from None
        raise


async def _handshake(
    process: trio.Process, ours: socket.socket, setup: ObserverSetup, spool_fd: int
) -> None:
    data = pickle.dumps(setup, pickle.HIGHEST_PROTOCOL)
    control = trio.socket.from_stdlib_socket(ours)
    answer = chunk = b""
    with trio.move_on_after(START_TIMEOUT):
        # A send may take part of it (a setup holding redaction's values is hundreds of KB,
        # past a socket buffer): the rest is sent as the child reads.
        message = memoryview(struct.pack("!I", len(data)) + data)
        while message:
            message = message[await control.send(message) :]
        if setup.spool:
            # The descriptor itself, not a path to open again: the child reads the very file
            # this process writes, whatever the directory holds meanwhile.
            rights = array.array("i", [spool_fd])
            await control.sendmsg([SPOOL_FD], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        while not answer.endswith(b"\n"):
            chunk = await control.recv(64)
            if not chunk:
                break
            answer += chunk
    if answer != b"ready\n":
        if answer.endswith(b"\n") or not chunk:
            # It answered something else or closed the socket: dying, most likely; its
            # exit status says more than "no answer" (the reaping lags the close).
            with trio.move_on_after(EXIT_GRACE):
                await process.wait()
        code = process.poll()
        why = f"no answer in {START_TIMEOUT:g} s" if code is None else exit_reason(code)
        raise ObserverStartError(f"the observing process did not start ({why})")


def framings(setup: ObserverSetup) -> dict[str, Framing]:
    """Each route's framing: the session's profile's, an MCP hop's its own."""
    framing = get_profile(setup.profile).framing
    framings = {bound.route.name: framing for bound in setup.bound}
    for layer in setup.layers:
        framings[layer.name] = get_profile(layer.profile or setup.profile).framing
    return framings


def _observing_module() -> str:
    """`OBSERVING_MODULE`, or the test suite's module `TEST_MODULE` names. Raises
    ObserverStartError when it names something else."""
    module = os.environ.get(TEST_MODULE)
    if module is None:
        return OBSERVING_MODULE
    if not module.startswith("tests.") or not module.replace("_", "").replace(".", "").isalnum():
        raise ObserverStartError(f"{TEST_MODULE} names no module of the tests: {module!r}")
    return module


def exit_reason(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the observing process was killed by {name}"
    return f"the observing process exited with status {code}"
