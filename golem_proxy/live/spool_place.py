"""Where a spool's bytes go (``--observer-spool``, spool.py): on a memory file system when
there is one, with a link beside the recording (``REC.spool``) to find them by.

Why not beside the recording: every byte forwarded is written to the spool, and a file on a
disk makes the kernel write it back; on a virtual disk that writes back at ~350 MB/s, 16 MiB
answers then went at 0.40x the bare relay's speed, against 0.85x with the spool on tmpfs
(docs/reliability.md, "A `kill -9` with the spool"). A memory file system keeps the bytes
across a ``kill -9`` of the proxy, which is what the spool is for; it does not keep them
across a restart of the machine (then `golem-proxy recover` says the spool is gone).

The place: ``$GOLEM_PROXY_SPOOL_DIR`` when set (``beside``: the recording's directory);
else ``$XDG_RUNTIME_DIR`` when it is a directory of this user's; else ``/dev/shm`` when it is
a directory; either only with room for ``--spool-limit``; else beside the recording. The file
there is created as ``mkstemp`` creates one (O_EXCL, mode 0600, a name no one can guess), and
the link beside the recording is made without replacing anything (``--overwrite`` removes an
old one first).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from typing import IO, Optional

from ..recording.files import open_private

__all__ = [
    "BESIDE",
    "SPOOL_DIR_ENV",
    "OpenedSpool",
    "SpoolGone",
    "create_spool",
    "identity",
    "open_spool",
    "remove_dangling",
    "remove_spool",
    "spool_dir",
]

SPOOL_DIR_ENV = "GOLEM_PROXY_SPOOL_DIR"
BESIDE = "beside"
"""``$GOLEM_PROXY_SPOOL_DIR`` for a spool beside its recording, on the recording's file system."""
_SHM = "/dev/shm"


def spool_dir(need: int = 0) -> Optional[str]:
    """The directory spools' bytes go to, or None: beside the recording (see the module
    docstring). A memory file system with less room than ``need`` bytes (a container's
    64 MiB ``/dev/shm``) is passed over: a spool that fills it would stop observation."""
    chosen = os.environ.get(SPOOL_DIR_ENV)
    if chosen is not None:
        return None if chosen in ("", BESIDE) else chosen
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and _own_directory(runtime) and _room(runtime) >= need:
        return runtime
    return _SHM if os.path.isdir(_SHM) and _room(_SHM) >= need else None


def _room(path: str) -> int:
    try:
        found = os.statvfs(path)
    except OSError:
        return 0
    return found.f_bavail * found.f_frsize


def _own_directory(path: str) -> bool:
    try:
        found = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid()


def create_spool(
    link: str, *, overwrite: bool = False, need: int = 0
) -> tuple[IO[bytes], Optional[str]]:
    """Create the spool found at ``link`` (``REC.spool``), to hold up to ``need`` bytes: the
    file open for writing, and where its bytes are when not at ``link`` itself (None:
    ``link`` is the file). Raises OSError (``link`` there already, without ``overwrite``)."""
    place = spool_dir(need)
    if place is None:
        return open_private(link, overwrite=overwrite), None
    if overwrite:
        remove_spool(link)
    try:
        fd, data = tempfile.mkstemp(prefix="golem-proxy-", suffix=".spool", dir=place)
    except OSError as exc:
        if os.environ.get(SPOOL_DIR_ENV) is None:
            raise
        # The place the user chose: name it, not the file name made up in it.
        raise OSError(
            f"{SPOOL_DIR_ENV}={place}: no spool can be made there ({exc.strerror or exc})"
        ) from None
    try:
        os.symlink(data, link)
    except BaseException:
        os.close(fd)
        os.unlink(data)
        raise
    return os.fdopen(fd, "wb"), data


@dataclass(frozen=True)
class OpenedSpool:
    """A spool found at ``link`` and open for reading (`open_spool`), and what was opened:
    `remove` takes away only that, whatever the names lead to by then."""

    fd: int
    link: str
    data: Optional[str]
    """Where its bytes are when ``link`` is a link to them; None: ``link`` is the file."""
    link_id: tuple[int, int]
    data_id: tuple[int, int]

    def remove(self) -> None:
        """Remove the file read and the link to it, each only while its name still leads to
        what was opened (device and inode): a name swapped meanwhile keeps what it names."""
        if self.data is not None and identity(self.data) == self.data_id:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.data)
        # A link made anew may take the inode of the one removed: its target tells them apart.
        if identity(self.link) == self.link_id and _target(self.link) == self.data:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.link)


class SpoolGone(OSError):
    """``link`` is a link of this user's to a file that is no more (``strerror`` says so,
    ``filename`` is that file)."""


def open_spool(link: str) -> OpenedSpool:
    """The spool found at ``link`` open for reading: the file itself, or the one the link
    names. Trusted only as far as it is this user's: the link, the file, and no one else may
    write the file (a spool's records are pickles) or swap it in its directory. Raises
    FileNotFoundError (none there), SpoolGone, OSError with a reason (refused)."""
    found = os.lstat(link)
    _refuse_foreign(link, found, "link" if stat.S_ISLNK(found.st_mode) else "spool")
    data: Optional[str] = None
    path = link
    if stat.S_ISLNK(found.st_mode):
        data = path = os.readlink(link)
        if not os.path.isabs(data):
            raise OSError(f"{link} links to {data!r}, not a spool a proxy made")
        try:
            named = os.lstat(data)
        except FileNotFoundError:
            raise SpoolGone(
                errno.ENOENT,
                f"{link} links to {data}, which is gone (a memory file system is emptied when "
                "the machine restarts): nothing to recover",
                data,
            ) from None
        if not stat.S_ISREG(named.st_mode):
            raise OSError(f"{link} links to {data}, {_kind(named.st_mode)}, not a spool")
        _refuse_open_directory(link, os.path.dirname(data))
    elif not stat.S_ISREG(found.st_mode):
        raise OSError(f"{link} is {_kind(found.st_mode)}, not a spool")
    # O_NONBLOCK: a FIFO put in its place meanwhile opens at once (refused below), never
    # waits for a writer; O_NOFOLLOW: nor is a link put there followed.
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | nofollow)
    except OSError as exc:
        raise OSError(f"{path}: {exc.strerror}: not opened as a spool") from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise OSError(f"{path} is {_kind(opened.st_mode)}, not a spool")
        _refuse_foreign(path, opened, "spool")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    link_id = (found.st_dev, found.st_ino)
    return OpenedSpool(fd, link, data, link_id, (opened.st_dev, opened.st_ino))


def _refuse_foreign(path: str, found: os.stat_result, what: str) -> None:
    """Refuse a spool or link another user owns, or a spool others may write: its pickles
    would be theirs to craft (a link's own mode means nothing: its owner is what counts)."""
    if found.st_uid != os.geteuid():
        raise OSError(f"{path}: a {what} owned by another user (uid {found.st_uid}): not read")
    if what == "spool" and found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise OSError(
            f"{path}: a spool others may write (mode {stat.S_IMODE(found.st_mode):o}; a proxy "
            "makes it 0600): not read"
        )


def _refuse_open_directory(link: str, directory: str) -> None:
    """A file in a directory anyone may write, without the sticky bit (/dev/shm has it), may
    be swapped by anyone: what it holds is not this user's to trust."""
    try:
        found = os.stat(directory)
    except OSError as exc:
        raise OSError(f"{link} links into {directory}: {exc.strerror}") from None
    if found.st_mode & stat.S_IWOTH and not found.st_mode & stat.S_ISVTX:
        raise OSError(
            f"{link} links into {directory}, which anyone may write and which has no sticky "
            "bit (anyone may swap the file): not read"
        )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def identity(path: str) -> Optional[tuple[int, int]]:
    """The device and inode ``path`` names itself (a link: the link), None when none."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _target(path: str) -> Optional[str]:
    try:
        return os.readlink(path)
    except OSError:
        return None


def remove_dangling(link: str, data: str) -> bool:
    """Remove ``link`` when it is still a link of this user's to ``data``, which is gone;
    True when it was removed."""
    try:
        found = os.lstat(link)
        if not stat.S_ISLNK(found.st_mode) or found.st_uid != os.geteuid():
            return False
        if os.readlink(link) != data or os.path.lexists(data):
            return False
        os.unlink(link)
    except OSError:
        return False
    return True


def remove_spool(link: str, data: Optional[str] = None) -> None:
    """Remove the spool at ``link``: the file there, or the link and the file it names
    (``data`` when known). A link's file is removed only when it is one a proxy made (named
    as `create_spool` names them, a regular file of this user's): a link put there by hand
    never costs the file it names."""
    if data is None and os.path.islink(link):
        data = os.readlink(link)
    if data is not None and not _made_here(data):
        data = None
    for path in (data, link):
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def _made_here(data: str) -> bool:
    name = os.path.basename(data)
    if not (os.path.isabs(data) and name.startswith("golem-proxy-") and name.endswith(".spool")):
        return False
    try:
        found = os.lstat(data)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid()
