"""A child with its stdio piped that the kernel kills when this process dies (Linux): the MCP
server of `golem-proxy mcp` must not outlive the wrapper however it ends. A client restarting
a server kills the wrapper with SIGKILL, and a server that does not exit when its stdin ends
(it ignores the end, is busy in a long tool call, or its own children hold the pipe) would
run on, holding its connection to Rhino.

The child asks for SIGKILL at its parent's death (``PR_SET_PDEATHSIG``) between fork and exec,
then checks that its parent is still the one that forked it (the parent may have died before
the request). Its "parent" is the thread that forked it, not the process: trio's
`open_process` forks from a worker thread of its thread cache, which exits after 10 idle
seconds and would take the server with it. So the child is forked here, from the thread that
runs trio (in the CLI the main thread, which lives as long as the process), by a plain
`subprocess.Popen`, and made usable from trio by hand: its pipes as FdStreams, its exit
awaited on a pidfd.

SIGKILL, not SIGTERM: there is no one left to follow a SIGTERM the server ignores or is slow
to act on with a SIGKILL, and the wrapper dies this way only when it could not stop the
server in order (a SIGTERM or SIGINT sent to the wrapper is passed on to the server, which
decides; the client closing stdin gives it time to exit, then SIGTERM, then SIGKILL).

The fork runs a Python function in the child (``preexec_fn``), which a threaded process may
do only if it takes no lock another thread could hold: it calls prctl and getppid, prepared
before the fork, and nothing else. It costs the fast ``vfork`` path: about 3 ms of fork for
the wrapper instead of 0.1, once per server.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Callable, Optional

import trio

__all__ = ["TiedChild", "start_tied"]

_PR_SET_PDEATHSIG = 1


class TiedChild:
    """A child started by `start_tied`: what its callers use of a trio.Process (its pid, its
    pipes, its exit status, `wait` and `send_signal`)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: trio.lowlevel.FdStream,
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream,
    ) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self._wait_lock = trio.Lock()
        self._pidfd: Optional[int] = None
        with contextlib.suppress(OSError, AttributeError):  # a kernel before 5.3
            self._pidfd = os.pidfd_open(popen.pid)

    @property
    def returncode(self) -> Optional[int]:
        """Its exit status once it exited (``-N`` for signal N), else None."""
        code = self._popen.poll()
        if code is not None:
            self._close_pidfd()
        return code

    async def wait(self) -> int:
        """Wait until it exits; returns `returncode`."""
        async with self._wait_lock:
            if self._popen.poll() is None:
                if self._pidfd is not None:
                    # (`returncode` may close the pidfd meanwhile: the child was reaped.)
                    with contextlib.suppress(trio.ClosedResourceError):
                        await trio.lowlevel.wait_readable(self._pidfd)
                    self._popen.wait()  # at once: the pidfd is readable once it exited
                else:
                    await trio.to_thread.run_sync(self._popen.wait, abandon_on_cancel=True)
            self._close_pidfd()
        code = self._popen.returncode
        assert code is not None
        return code

    def send_signal(self, sig: int) -> None:
        """Send it ``sig`` (nothing once it was reaped)."""
        self._popen.send_signal(sig)

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            trio.lowlevel.notify_closing(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


def start_tied(argv: Sequence[str], env: Mapping[str, str]) -> TiedChild:
    """Start ``argv`` with its stdin, stdout and stderr piped, to be killed when the calling
    thread ends (the process dies, or the thread running trio returns). Call it from the
    thread that runs trio. Raises OSError when it cannot be started."""
    ours: list[int] = []
    theirs: list[int] = []
    try:
        for to_child in (True, False, False):
            read_end, write_end = os.pipe()
            ours.append(write_end if to_child else read_end)
            theirs.append(read_end if to_child else write_end)
        popen = subprocess.Popen(
            list(argv),
            stdin=theirs[0],
            stdout=theirs[1],
            stderr=theirs[2],
            env=env,
            preexec_fn=_dies_with(os.getpid()),
        )
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    stdin, stdout, stderr = (trio.lowlevel.FdStream(fd) for fd in ours)
    return TiedChild(popen, stdin, stdout, stderr)


def _dies_with(parent: int) -> Optional[Callable[[], None]]:
    """What the child runs before exec to be killed when ``parent`` dies (None when this libc
    has no prctl: the child then lives as it would without us)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    option, kill = ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL)

    def tie() -> None:
        prctl(option, kill)
        if os.getppid() != parent:  # it died before prctl: nothing would signal us
            os.kill(os.getpid(), signal.SIGKILL)

    return tie
