"""Opening listeners and connections for `Address`es (TCP or Unix sockets), with the safety
rules that apply to every server golem-proxy runs: loopback unless asked, Unix socket files
0600 in a directory the user owns, stale socket files detected and replaced."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import struct
from dataclasses import dataclass
from typing import Optional

import trio

from .addresses import Address
from .shortage import SHORTAGES, shortage

# struct linger {int l_onoff; int l_linger;}: on, zero seconds → close sends RST.
_LINGER_RESET = struct.pack("ii", 1, 0)

__all__ = [
    "BoundSocket",
    "ListenError",
    "Listener",
    "bind_listener",
    "close_abortively",
    "connect",
    "connect_reason",
    "open_listener",
    "probe",
    "remove_unix_socket",
    "reset_when_closed",
]


class ListenError(OSError):
    """A listener could not be opened; the message says why, fit for the command line."""


@dataclass
class Listener:
    """An open listener and the address it is bound to (with the real port for port 0)."""

    listener: trio.SocketListener
    address: Address
    raw: socket.socket
    """The standard library's socket under ``listener``'s, the same descriptor: for a caller
    that must take a connection off the backlog and count it in one step (route_gate.py),
    which trio's own accept does not allow (it yields between the two)."""

    async def aclose(self) -> None:
        await self.listener.aclose()
        if self.address.is_unix:
            remove_unix_socket(self.address)


async def open_listener(
    address: Address, *, allow_public: bool = False, backlog: int = 128
) -> Listener:
    """Bind and listen on ``address``. Raises ListenError with a user-facing message."""
    bound = await bind_listener(address, allow_public=allow_public, backlog=backlog)
    return bound.listen()


@dataclass
class BoundSocket:
    """A listener's socket bound to its address (with the real port for port 0) that accepts
    nothing yet: a client connecting now is refused, as if nothing listened, rather than
    accepted and kept waiting until the server is ready. `listen` makes it a `Listener`."""

    sock: trio.socket.SocketType
    raw: socket.socket
    """The standard library's socket ``sock`` wraps (`Listener.raw`)."""
    address: Address
    backlog: int
    staging: Optional[str] = None
    """A Unix socket: the private name it is bound under, linked to its path once it listens
    (None: bound at its path itself)."""

    def listen(self) -> Listener:
        """Accept connections from now on. Raises ListenError (then the socket is closed)."""
        try:
            self.sock.listen(self.backlog)
            if self.staging is not None:
                assert self.address.path is not None
                # Fails rather than replace a socket bound there meanwhile.
                os.link(self.staging, self.address.path)
                self._drop_staging()
        except OSError as exc:
            self.close()
            raise ListenError(f"cannot listen on {self.address}: {exc.strerror or exc}") from exc
        return Listener(trio.SocketListener(self.sock), self.address, self.raw)

    def close(self) -> None:
        """Close it without ever listening (a session that failed to start)."""
        self.sock.close()
        self._drop_staging()
        if self.staging is None and self.address.is_unix:
            remove_unix_socket(self.address)

    def _drop_staging(self) -> None:
        if self.staging is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.staging)
            self.staging = None


async def bind_listener(
    address: Address, *, allow_public: bool = False, backlog: int = 128
) -> BoundSocket:
    """Bind a listener's socket to ``address`` without listening yet (`BoundSocket`). Raises
    ListenError with a user-facing message."""
    if not address.is_loopback() and not allow_public:
        raise ListenError(
            f"refusing to listen on non-loopback address {address} without --listen-public"
        )
    if address.is_unix:
        return await _bind_unix(address, backlog)
    raw = socket.socket(
        socket.AF_INET6 if ":" in address.host else socket.AF_INET, socket.SOCK_STREAM
    )
    sock = trio.socket.from_stdlib_socket(raw)
    try:
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
        await sock.bind((address.host, address.port))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {address}: {exc.strerror or exc}") from exc
    port = sock.getsockname()[1]
    return BoundSocket(sock, raw, Address(address.host, port), backlog)


_UNIX_PATH_MAX = 108  # sun_path, terminating NUL included (Linux)


async def _bind_unix(address: Address, backlog: int) -> BoundSocket:
    path = address.path
    assert path is not None
    directory = os.path.dirname(os.path.abspath(path))
    try:
        info = os.stat(directory)
    except OSError as exc:
        raise ListenError(f"cannot listen on {address}: {exc.strerror}") from exc
    # Another user who owns the directory, or may write to it, could replace the socket file
    # between bind and use; root is no exception (/tmp is root's but everyone writes there).
    if info.st_uid != os.geteuid():
        raise ListenError(f"refusing to create a socket in {directory}: not owned by you")
    if info.st_mode & 0o022:
        raise ListenError(
            f"refusing to create a socket in {directory}: others may write to it "
            f"(mode {stat.S_IMODE(info.st_mode):o})"
        )
    if os.path.lexists(path):
        await _replace_stale_socket(path)
    # bind() creates the socket file before listen() makes it accept: a client that waits for
    # the file to appear could connect in between and be refused. So the socket is bound
    # under a private name and linked into place once it listens (when that name fits).
    private = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.binding")
    staging = private if len(os.fsencode(private)) < _UNIX_PATH_MAX else None
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock = trio.socket.from_stdlib_socket(raw)
    old_umask = os.umask(0o177)  # the socket file is created 0600, never briefly wider
    try:
        await sock.bind(path if staging is None else staging)
        os.chmod(path if staging is None else staging, 0o600)
    except OSError as exc:
        sock.close()
        if staging is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging)
        raise ListenError(f"cannot listen on {address}: {exc.strerror or exc}") from exc
    finally:
        os.umask(old_umask)
    return BoundSocket(sock, raw, address, backlog, staging)


async def _replace_stale_socket(path: str) -> None:
    """Remove a socket file nobody listens on; refuse to touch anything else."""
    if not stat.S_ISSOCK(os.lstat(path).st_mode):
        raise ListenError(f"refusing to replace {path}: it exists and is not a socket")
    probe = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    try:
        await probe.connect(path)
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise ListenError(f"cannot check socket {path}: {exc.strerror}") from exc
        os.unlink(path)  # stale: a dead process left it behind
        return
    finally:
        probe.close()
    raise ListenError(f"{path} is in use by a running server")


def remove_unix_socket(address: Address) -> None:
    """Remove a Unix socket file we created (ignoring one already gone)."""
    if address.path is not None:
        try:
            if stat.S_ISSOCK(os.lstat(address.path).st_mode):
                os.unlink(address.path)
        except FileNotFoundError:
            pass


async def connect(address: Address) -> trio.SocketStream:
    """Connect to ``address``. Raises OSError (ConnectionRefusedError, …) as the OS reports."""
    if address.is_unix:
        assert address.path is not None
        return await trio.open_unix_socket(address.path)
    try:
        return await trio.open_tcp_stream(address.host, address.port)
    except OSError as exc:
        # trio's "all attempts to connect … failed" carries the OS's errors in its cause:
        # when every attempt failed the same way, that error is the one to raise.
        inner = getattr(exc.__cause__, "exceptions", None)
        if inner and all(isinstance(e, OSError) and e.errno == inner[0].errno for e in inner):
            raise inner[0] from None
        raise


async def probe(address: Address, timeout: float, *, silence_fails: bool = True) -> Optional[str]:
    """Connect to ``address`` and close at once: None when something accepts within
    ``timeout`` seconds, else why not (``connection refused``, ``no answer in 1 s``, …).
    Not ``silence_fails``: a connect not answered in time is None too (a full backlog is a
    listener still there); only a refusal, or another failure, says why."""
    with trio.move_on_after(timeout):
        try:
            stream = await connect(address)
        except OSError as exc:
            return connect_reason(exc)
        await stream.aclose()
        return None
    return f"no answer in {timeout:g} s" if silence_fails else None


def connect_reason(exc: OSError) -> str:
    """Why `connect` failed, in words ("connection refused"): trio's "all attempts to connect
    … failed" carries the real reason in its cause."""
    inner = getattr(exc.__cause__, "exceptions", None)
    if isinstance(inner, tuple) and len(inner) == 1 and isinstance(inner[0], OSError):
        exc = inner[0]
    if exc.errno in SHORTAGES:  # not the upstream's doing: this process ran short
        return shortage(exc)
    if exc.errno:
        return os.strerror(exc.errno)[0].lower() + os.strerror(exc.errno)[1:]
    text = str(exc) or type(exc).__name__
    return text[0].lower() + text[1:]


def close_abortively(stream: trio.SocketStream) -> None:
    """Close with a TCP reset (SO_LINGER 0), so the peer sees ECONNRESET as it would if the
    process behind us had died; a plain close would look like a clean EOF."""
    reset_when_closed(stream)
    stream.socket.close()


def reset_when_closed(stream: trio.SocketStream) -> None:
    """Make the stream's close, whoever makes it, a TCP reset (SO_LINGER 0): for a stream
    another task serves, which must close it itself (it may be about to use its descriptor)."""
    sock = stream.socket
    try:
        if sock.family in (trio.socket.AF_INET, trio.socket.AF_INET6):
            sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, _LINGER_RESET)
    except OSError:
        pass
