"""Files we read and write, made safe for shared directories and untrusted input.

Reading: a recording (or a source file) is opened only if it is a regular file, checked on the
open descriptor (``O_NONBLOCK`` first, so a FIFO or a device named ``x.jsonl`` is refused at
once instead of blocking the reader forever): `golem_core.regular_files`, shared with the
method catalogue's loader.

Writing: everything we create (recordings, exports, reports, copies) is readable by its owner
only (0600) and never follows a symlink at its own path; an existing file is replaced only when
asked, and only when it is a regular file the user owns, so a file planted by someone else in a
shared (sticky) directory is never written into.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO, Optional

from golem_core.regular_files import NotARegularFile, file_kind, open_regular

from .schema import RecordingError
from .spool_left import say_spool_left

__all__ = [
    "NotARegularFile",
    "check_replaceable",
    "discard_beside",
    "open_beside",
    "open_private",
    "open_recording",
    "open_regular",
    "private_temp_file",
    "put_in_place",
    "read_side",
    "replacing",
    "write_private",
]


def open_recording(path: str) -> IO[bytes]:
    """Open ``path`` for reading if it is a regular file (a symlink to one is fine).

    Raises RecordingError naming the file when it is a FIFO, a device, a socket or a
    directory, without ever blocking on it; OSError as the OS reports otherwise. A spool left
    beside it by a killed session is said on stderr (`say_spool_left`)."""
    try:
        stream = open_regular(path)
    except NotARegularFile as exc:
        raise RecordingError(f"is {exc.kind}, not a recording file", path=path) from None
    # Every reader opens it here: a spool left beside it by a killed session is said at once.
    say_spool_left(os.fspath(path), stream.fileno())  # callers hand a Path at times
    return stream


def _refuse_foreign(fd: int, path: str) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EPERM, f"refusing to overwrite {path}: {file_kind(info.st_mode)}", path)
    if info.st_uid != os.geteuid():
        raise OSError(errno.EPERM, f"refusing to overwrite {path}: owned by another user", path)


def open_private(path: str, *, overwrite: bool = False) -> IO[bytes]:
    """Create ``path`` for writing, readable by its owner only (mode 0600).

    A symlink at ``path`` is never followed. Without ``overwrite`` the file must not exist
    (FileExistsError); with it, an existing file is truncated only when it is a regular file
    the user owns (OSError EPERM otherwise: a file planted by someone else is never written
    into). Other OSErrors as they come."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600)
    except FileExistsError:
        if not overwrite:
            raise
        fd = _open_existing(path, nofollow)
    except OSError as exc:
        raise _symlink_error(exc, path) from None
    os.fchmod(fd, 0o600)  # the umask cannot widen it, but an existing file kept its mode
    return os.fdopen(fd, "wb")


def open_beside(path: str, *, overwrite: bool = False) -> tuple[IO[bytes], Optional[str]]:
    """Create what is to become ``path``, as `open_private` does, without touching a file
    already there: with ``overwrite`` and something at ``path``, the new file is a private
    (0600) temporary file in the same directory, whose path is returned second, and the old
    file stays whole until `put_in_place` renames the new one over it (a recording given to
    ``--overwrite`` is lost only to a session that started). Otherwise the file is ``path``
    itself (second: None). Raises OSError as `open_private` does (EPERM for a file that is
    not the user's to replace)."""
    if not overwrite or not os.path.lexists(path):
        return open_private(path, overwrite=overwrite), None
    check_replaceable(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    return os.fdopen(fd, "wb"), temp


def read_side(path: str, write_fd: int) -> int:
    """A descriptor reading ``path``, the very file ``write_fd`` writes (opened without
    following a symlink, and checked to be the same file: one renamed in between is refused).
    Raises OSError."""
    read_fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    written, read = os.fstat(write_fd), os.fstat(read_fd)
    if (written.st_dev, written.st_ino) != (read.st_dev, read.st_ino):
        os.close(read_fd)
        raise OSError(f"{path}: replaced while it was being opened")
    return read_fd


def put_in_place(temp: str, path: str) -> None:
    """Rename ``temp`` (from `open_beside`) over ``path``: what was there is gone from then
    on, what is open of either stays open. Refused (OSError) when ``path`` became something
    that is not the user's to replace meanwhile (`check_replaceable`)."""
    check_replaceable(path)
    os.replace(temp, path)


def discard_beside(temp: str) -> None:
    """Remove ``temp`` (from `open_beside`), never put in place: the file it was to replace
    stays as it was."""
    with contextlib.suppress(OSError):
        os.unlink(temp)


def _open_existing(path: str, nofollow: int) -> int:
    # O_NONBLOCK: a FIFO planted at the path fails (ENXIO) or is refused below, never blocks.
    try:
        fd = os.open(path, os.O_WRONLY | nofollow | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _symlink_error(exc, path) from None
    try:
        _refuse_foreign(fd, path)
        os.ftruncate(fd, 0)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _symlink_error(exc: OSError, path: str) -> OSError:
    if exc.errno == errno.ELOOP:
        return OSError(exc.errno, f"refusing to write through symlink {path}", path)
    return exc


def check_replaceable(path: str) -> None:
    """Refuse (OSError) to replace ``path`` unless it is absent or a regular file the user
    owns: never a symlink, a device, or a file planted by someone else."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise OSError(errno.ELOOP, f"refusing to write through symlink {path}", path)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EPERM, f"refusing to overwrite {path}: {file_kind(info.st_mode)}", path)
    if info.st_uid != os.geteuid():
        raise OSError(errno.EPERM, f"refusing to overwrite {path}: owned by another user", path)


@contextlib.contextmanager
def replacing(path: str, *, overwrite: bool = False) -> Iterator[IO[bytes]]:
    """A private (0600) file to write what goes to ``path``, put in place whole when the
    block ends without an error (renamed from a temporary file in the same directory), and
    removed otherwise. Without ``overwrite`` an existing ``path`` is left alone
    (FileExistsError); with it, only a regular file the user owns is replaced (OSError
    EPERM otherwise). Raises OSError."""
    if overwrite:
        check_replaceable(path)
    else:
        try:
            os.lstat(path)  # an error on the way (a part that is not a directory) names it
        except FileNotFoundError:
            pass
        else:
            raise FileExistsError(errno.EEXIST, "already exists", path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream
        if overwrite:
            os.replace(temp, path)
        else:
            os.link(temp, path)  # fails rather than replace a file created meanwhile
            os.unlink(temp)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_private(path: str, data: bytes, *, overwrite: bool = False) -> None:
    """Write ``data`` to ``path`` whole or not at all, readable by its owner only (see
    `replacing`). Raises OSError."""
    with replacing(path, overwrite=overwrite) as stream:
        stream.write(data)


def private_temp_file(prefix: str, suffix: str) -> tuple[IO[bytes], str]:
    """A new file with an unpredictable name in a directory only the user can enter
    (``$TMPDIR/golem-proxy-UID``, created 0700; refused and replaced by a fresh private
    directory when someone else owns it or can write to it). Returns the open file and its
    path."""
    base = os.path.join(tempfile.gettempdir(), f"golem-proxy-{os.geteuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(base, 0o700)
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        base = tempfile.mkdtemp(prefix="golem-proxy-")
    fd, path = tempfile.mkstemp(dir=base, prefix=prefix, suffix=suffix)
    return os.fdopen(fd, "wb"), path
