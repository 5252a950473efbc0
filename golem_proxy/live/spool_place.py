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
import os
import stat
import tempfile
from typing import IO, Optional

from ..recording.files import open_private

__all__ = ["BESIDE", "SPOOL_DIR_ENV", "create_spool", "open_spool", "remove_spool", "spool_dir"]

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


def open_spool(link: str) -> int:
    """A descriptor reading the spool found at ``link``: the file itself, or the one the link
    a proxy made there names (a regular file, no further link followed). Raises
    FileNotFoundError (none there), OSError with a reason (a link to nothing any more: a
    memory file system is emptied when the machine restarts)."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    if not os.path.islink(link):
        return os.open(link, os.O_RDONLY | nofollow)
    data = os.readlink(link)
    if not os.path.isabs(data):
        raise OSError(f"{link} links to {data!r}, not a spool a proxy made")
    try:
        fd = os.open(data, os.O_RDONLY | nofollow)
    except FileNotFoundError:
        raise OSError(
            f"{link} links to {data}, which is gone (a memory file system is emptied when "
            "the machine restarts): nothing to recover"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{link} links to {data}, which is not a regular file")
    return fd


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
