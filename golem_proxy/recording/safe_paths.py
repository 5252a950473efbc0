"""Where a recording may be written: ``--record-dir DIR`` confines ``--record`` to DIR.

The rule (docs/reliability.md): with a directory, the recording path is taken relative to it,
and once ``..`` and every symlink are resolved it must still lie inside the directory's own
resolved path; anything else is refused before a file is created. The file itself is opened
with ``O_NOFOLLOW`` in every case (`recording.open_private`).

Without ``--record``, the directory gets a name of its own for each session,
``session-YYYYmmdd-HHMMSS.jsonl``, taken by creating the file exclusively (`reserve_session_file`):
an MCP client starts its servers together, or restarts one within the second, and two
wrappers with one ``--record-dir`` then want the same name. The second takes
``session-…-2.jsonl`` (then ``-3``, …) instead of failing, and never replaces the first's.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import stat
from collections.abc import Iterator
from typing import Optional

__all__ = [
    "RecordPathError",
    "check_record_target",
    "removed_unless_started",
    "reserve_session_file",
    "resolve_record_path",
]

MAX_SUFFIX = 10_000
"""Names tried in one second before giving up (``-2`` to ``-10000``): far more sessions than
start in a second, and a bound on the loop."""


class RecordPathError(ValueError):
    """A recording path that would be written outside ``--record-dir``, or that cannot be
    created at all (`check_record_target`); the message is one line."""


def resolve_record_path(path: Optional[str], directory: Optional[str]) -> Optional[str]:
    """The path to record to, or None for no recording. Without ``path``, a name of the
    directory's own, its file created empty here (`reserve_session_file`): the session
    writes it, replacing nothing. Raises RecordPathError, or OSError from creating it."""
    if directory is None:
        return path
    root = os.path.realpath(directory)
    if not os.path.isdir(root):
        raise RecordPathError(f"--record-dir {directory}: not a directory")
    if path is None:
        return reserve_session_file(root)
    # realpath resolves symlinks of every existing component, and `..` after them.
    target = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([root, target]) != root or target == root:
        raise RecordPathError(f"--record {path}: resolves to {target}, outside --record-dir {root}")
    return target


def reserve_session_file(directory: str) -> str:
    """Create ``directory/session-YYYYmmdd-HHMMSS.jsonl`` empty (0600) and return its path;
    when that name is taken, by a file or anything else, ``…-2.jsonl``, ``…-3.jsonl`` and so
    on. Each is created with ``O_EXCL``, so of two processes asking at once each gets a file
    of its own, and nothing there is opened or replaced. Raises RecordPathError when
    `MAX_SUFFIX` names are taken, OSError when the directory refuses a file."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for suffix in range(1, MAX_SUFFIX + 1):
        name = f"session-{stamp}.jsonl" if suffix == 1 else f"session-{stamp}-{suffix}.jsonl"
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        return path
    raise RecordPathError(
        f"--record-dir {directory}: session-{stamp}.jsonl and {MAX_SUFFIX - 1} more are taken"
    )


@contextlib.contextmanager
def removed_unless_started(reserved: Optional[str]) -> Iterator[None]:
    """Run the session that records to ``reserved``, a file `reserve_session_file` made (None:
    a path the user named, left alone). When the session ends with nothing written there (it
    never started: a port in use, a refused option), the empty file is removed, so a failed
    start leaves no empty recording behind; one with anything in it stays.

    Removed however the session ended, not only when it raised: the TUI of one process says
    why it could not start on its screen and ends with an exit code. A session that started
    wrote its header before it said so (`ProxySession.run`), so an empty file is one that
    never started."""
    try:
        yield
    finally:
        if reserved is not None:
            _remove_if_empty(reserved)


def _remove_if_empty(path: str) -> None:
    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and info.st_size == 0:
            os.unlink(path)
    except OSError:
        pass  # gone already, or not ours to remove: either way nothing to tidy


def check_record_target(
    path: str,
    *,
    overwrite: bool = False,
    option: str = "--record",
    if_exists: str = "pass --overwrite to replace it",
) -> None:
    """Refuse, before anything starts, a recording path that cannot be created, saying why:
    a directory (``option`` takes a file name), a directory that does not exist, or, unless
    ``overwrite``, a file that exists (``if_exists`` says what to do). Raises RecordPathError."""
    if os.path.isdir(path):
        example = os.path.join(path, "session.jsonl")
        raise RecordPathError(
            f"{path}: is a directory ({option} takes a file name, e.g. {example})"
        )
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        if os.path.lexists(parent):
            raise RecordPathError(f"{path}: {parent} is not a directory")
        raise RecordPathError(f"{path}: the directory {parent} does not exist")
    if os.path.lexists(path) and not overwrite:
        raise RecordPathError(f"{path}: already exists ({if_exists})")
