"""Where a recording may be written: ``--record-dir DIR`` confines ``--record`` to DIR.

The rule (docs/reliability.md): with a directory, the recording path is taken relative to it,
and once ``..`` and every symlink are resolved it must still lie inside the directory's own
resolved path; anything else is refused before a file is created. The file itself is opened
with ``O_NOFOLLOW`` in every case (`recording.open_private`).
"""

from __future__ import annotations

import datetime
import os
from typing import Optional

__all__ = ["RecordPathError", "check_record_target", "resolve_record_path"]


class RecordPathError(ValueError):
    """A recording path that would be written outside ``--record-dir``, or that cannot be
    created at all (`check_record_target`); the message is one line."""


def resolve_record_path(path: Optional[str], directory: Optional[str]) -> Optional[str]:
    """The path to record to, or None for no recording. Raises RecordPathError."""
    if directory is None:
        return path
    root = os.path.realpath(directory)
    if not os.path.isdir(root):
        raise RecordPathError(f"--record-dir {directory}: not a directory")
    if path is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = f"session-{stamp}.jsonl"
    # realpath resolves symlinks of every existing component, and `..` after them.
    target = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([root, target]) != root or target == root:
        raise RecordPathError(f"--record {path}: resolves to {target}, outside --record-dir {root}")
    return target


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
