"""A child with its stdio piped that does not outlive this process, however it dies: the MCP
server of `golem-proxy mcp` (and of `mcp-verify`). A client restarting a server kills the
wrapper with SIGKILL, and a server that does not exit when its stdin ends (it ignores the end,
is busy in a long tool call, or its own children hold the pipe) would run on, holding its
connection to Rhino. So would the real server behind a launcher that runs it as a child of its
own rather than exec it (``uv run``, a shell script).

Two ties, each covering what the other cannot:

* **The server itself** (Linux): it asks for SIGKILL at its parent's death
  (``PR_SET_PDEATHSIG``) between fork and exec, then checks that its parent is still the one
  that forked it (the parent may have died before the request). Its "parent" is the thread
  that forked it, not the process: trio's `open_process` forks from a worker thread of its
  thread cache, which exits after 10 idle seconds and would take the server with it. So the
  child is forked here, from the thread that runs trio (in the CLI the main thread, which
  lives as long as the process), by a plain `subprocess.Popen`, and made usable from trio by
  hand: its pipes as FdStreams, its exit awaited on a pidfd.
* **Everything it started** (Linux and macOS): the server leads a process group of its own,
  which its children join, and a guard (a `/bin/sh` of a few lines, in a group of its own too,
  so that a signal to ours does not reach it) waits on a pipe only this process writes to. The
  kernel closes the pipe when this process dies, however it dies; the guard then kills the
  server's group with SIGKILL. When we stop in order the guard is told so (`release`) and
  exits without a kill: what the server left running after an orderly end runs on, as it
  would without us. A process that left the group (a daemon, ``setsid``) is out of reach.

SIGKILL, not SIGTERM: there is no one left to follow a SIGTERM the server ignores or is slow
to act on with a SIGKILL, and the wrapper dies this way only when it could not stop the
server in order (a SIGTERM or SIGINT sent to the wrapper is passed on to the server's group,
which gets a moment to act on it before it is killed: stdio_ends.py; the client closing stdin
gives it time to exit, then SIGTERM, then SIGKILL).

The fork runs a Python function in the child (``preexec_fn``, Linux), which a threaded process
may do only if it takes no lock another thread could hold: it calls prctl and getppid,
prepared before the fork, and nothing else. It costs the fast ``vfork`` path: about 3 ms of
fork for the wrapper instead of 0.1, once per server, and the guard about 1 ms more.
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

_GUARD = (
    "trap '' HUP INT QUIT TERM TSTP\n"
    "exec 3<&0\n"  # a background list's stdin is /dev/null, so the pipe is passed as fd 3
    "(\n"
    "  IFS= read -r said <&3 || :\n"
    '  [ "$said" = done ] || kill -s KILL -- "-$1" 2>/dev/null\n'
    ") >/dev/null 2>&1 &\n"
)
"""The guard's script, ``$1`` the server's process group. The guard proper is a subshell left
in the background, so that it is nobody's child here to reap: a line ``done`` on its stdin
lets it go, anything else (the end of its stdin when we die) kills the group. It ignores the
signals a terminal or a client's stop sends, which are for the wrapper to pass on."""

_RELEASED = b"done\n"


class TiedChild:
    """A child started by `start_tied`: what its callers use of a trio.Process (its pid, its
    pipes, its exit status, `wait` and `send_signal`)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: trio.lowlevel.FdStream,
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream,
        guard: Optional[int],
    ) -> None:
        self._popen = popen
        self._guard = guard
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

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to its process group: to it and what it started, as a signal to the
        client's group (a terminal's Ctrl-C, an MCP client's stop) reaches them without us.
        Raises ProcessLookupError once the group is empty."""
        os.killpg(self.pid, sig)

    def release(self) -> None:
        """We are done with it in order: its group is no longer killed when we die. Call it
        once the child exited, or was stopped as well as it could be."""
        guard, self._guard = self._guard, None
        if guard is not None:
            with contextlib.suppress(OSError):  # the guard is gone: nothing to release
                os.write(guard, _RELEASED)  # a few bytes into an empty pipe: never blocks
            os.close(guard)

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            trio.lowlevel.notify_closing(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


def start_tied(argv: Sequence[str], env: Mapping[str, str]) -> TiedChild:
    """Start ``argv`` with its stdin, stdout and stderr piped, in a process group of its own
    killed when this process dies (Linux: the child itself also when the calling thread ends,
    that is the thread running trio returns). Call it from the thread that runs trio, and
    `TiedChild.release` it once done with it in order. Raises OSError when it cannot be
    started."""
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
            process_group=0,
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
    return TiedChild(popen, stdin, stdout, stderr, _guard_group(popen.pid))


def _guard_group(group: int) -> Optional[int]:
    """Start the guard of process group ``group``; returns the pipe's end that keeps it
    waiting (None when no guard could be started: the group is then tied by nothing but the
    server's own tie)."""
    read_end, write_end = os.pipe()
    try:
        # The shell exits as soon as it has put the guard in the background (about 1 ms).
        subprocess.run(
            ["/bin/sh", "-c", _GUARD, "golem-proxy-guard", str(group)],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={},
            process_group=0,
            check=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    return write_end


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
