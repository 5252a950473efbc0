"""The MCP server as a child of `golem-proxy mcp` (and of `mcp-verify`'s replay): started with
its stdio piped, killed with what it started when we die (tied_child.py), and the pipes read
and written without blocking the relay."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Optional, Protocol

import trio

from .tied_child import start_tied

__all__ = [
    "READ_SIZE",
    "ChildStartError",
    "PipedChild",
    "exit_status",
    "open_piped_child",
    "pipe_fd",
    "read_pipe",
    "read_pipe_now",
    "read_pipe_rest",
]

READ_SIZE = 65536


class ChildStartError(OSError):
    """The command could not be started (not found, not executable)."""


class PipedChild(Protocol):
    """What `open_piped_child`'s callers use of the child (a `TiedChild`)."""

    @property
    def pid(self) -> int: ...
    @property
    def stdin(self) -> Optional[trio.abc.SendStream]: ...
    @property
    def stdout(self) -> Optional[trio.abc.ReceiveStream]: ...
    @property
    def stderr(self) -> Optional[trio.abc.ReceiveStream]: ...
    @property
    def returncode(self) -> Optional[int]: ...
    async def wait(self) -> int: ...
    def send_signal(self, sig: int) -> None: ...
    def signal_group(self, sig: int) -> None: ...
    def release(self) -> None: ...


async def open_piped_child(argv: Sequence[str], env: Mapping[str, str]) -> PipedChild:
    """Start ``argv`` with its stdin, stdout and stderr piped; returns the process. It is
    killed with the processes it started when we die, however we die (call it from the thread
    that runs trio, which lives as long as the process in the CLI), unless `release`d first,
    once the caller is done with it in order.

    Raises ChildStartError with the reason in one line when it cannot be started."""
    await trio.lowlevel.checkpoint()  # a cancellation comes before the child, never after
    try:
        return start_tied(argv, env)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ChildStartError(f"cannot start {argv[0]!r} ({reason})") from None


def exit_status(returncode: int) -> int:
    """A child's status as a shell reports it: its exit code, or 128 + the signal number."""
    return 128 - returncode if returncode < 0 else returncode


def pipe_fd(stream: object) -> int:
    """The descriptor of one of the child's pipes (trio gives them as FdStreams on Unix)."""
    assert isinstance(stream, trio.lowlevel.FdStream)
    return stream.fileno()


async def read_pipe(fd: int) -> bytes:
    """A chunk from a non-blocking pipe (``b""`` at its end)."""
    while True:
        try:
            return os.read(fd, READ_SIZE)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(fd)
        except OSError:
            return b""


def read_pipe_now(fd: int, most: int = 16 * 1024 * 1024) -> bytes:
    """What the non-blocking pipe ``fd`` holds now, up to ``most`` bytes."""
    return read_pipe_rest(fd, most)[0]


def read_pipe_rest(fd: int, most: int = 16 * 1024 * 1024) -> tuple[bytes, bool]:
    """What the non-blocking pipe ``fd`` holds now, up to ``most`` bytes, and whether that
    reached its end (every writer closed it), or it may hold more later."""
    pieces: list[bytes] = []
    got = 0
    ended = False
    while got < most:
        try:
            chunk = os.read(fd, min(READ_SIZE, most - got))
        except BlockingIOError:  # nothing more now
            break
        except OSError:
            ended = True
            break
        if not chunk:
            ended = True
            break
        pieces.append(chunk)
        got += len(chunk)
    return b"".join(pieces), ended
