"""`query --cache DIR`: the flow-table rows of each recording kept in a folder, so asking the
same fleet again reads only the recordings that changed.

A recording's rows are one file named by a digest of what they depend on: the path as given
and the absolute one (the ``trace`` column names it), the file's device, inode, size and
modification time, the golem-proxy version and the table's columns. A recording that
changes (it is appended to, or
replaced) gets a new name, so a stale file is never read; old files stay until the folder is
emptied. Rows of a recording that changed while it was read, or that is still being
written (`OpenedRecording.being_written`), are used once and not kept.
What a view notes of the recording once read (`reading_notes`: a file cut short) is kept
beside its rows (``.notes.json``), so that a query from the cache says it too, with the length
of its longest row (the engine's buffers are sized by it). The rows of its ``server_stderr``
table (`stderr_table`), when its server wrote any, are kept beside them too
(``.stderr.jsonl``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from stat import S_ISREG
from typing import Optional

from golem_core import __version__
from golem_core.regular_files import read_regular

from ..analysis.reading_notes import reading_notes
from ..analysis.trace import open_flows
from ..recording.files import open_private
from .flow_table import MAX_ROW, SMALLEST_BUFFER, column_spec, flow_rows, trace_name, write_rows
from .stderr_table import LONGEST, StderrRows

__all__ = ["RowFile", "cached_row_file", "cached_rows", "prepare_cache", "rows_into_cache"]

READING = 9
"""What the readers make of a recording, beyond the version: raised where they read the same
file into other rows (2: requests the proxy let go are ``evicted``, no longer
``unanswered``; 3: those the proxy's gap names, not its oldest; 5: NaN and the infinities
named as strings, ``"NaN"``, as `show --json` names them; 6: requests an ``end`` line names
are ``unanswered (upstream closed)``; 7: a failure whose code reads as a success is
``error (code OK)``, not ``OK``, requests still waiting where the file ends are
``pending (recording ended)``, and the ``trace`` column is the absolute path and the
header's digest, `flow_table.trace_name`; 8: a failure whose code is a bare number is
``error (code 0)``, not ``0``) or keep other things beside
them (4: the notes file says how long the longest row is when it is `SMALLEST_BUFFER` or
more, and a file without one has none that long), so that rows cached before are not taken
for current; 9: the ``server_stderr`` rows are kept beside them (a file cached before has
none)."""
_SUFFIX = ".rows.jsonl"
_NOTES = ".notes.json"
_STDERR = ".stderr.jsonl"
_NOTES_MAX = 1024 * 1024
"""What is said of a recording's rows is its few reading notes and a number: a file larger
than this is not one we wrote."""
_USER = os.geteuid() if hasattr(os, "geteuid") else 0


@dataclass(frozen=True)
class RowFile:
    """A file of rows for the flow table; ``scratch`` when it serves this query only and is
    removed after it (a cached file stays)."""

    path: str
    scratch: bool
    recordings: tuple[str, ...] = ()
    """The recordings whose rows it holds (an engine's error about the file names them)."""
    notes: tuple[str, ...] = ()
    """What reading its recordings noted (`reading_notes`), to be said once the query runs."""
    longest: int = MAX_ROW
    """Its longest row's bytes, when known (`flow_table.rows_relation` sizes buffers by it)."""
    stderr: Optional[str] = None
    """The file of the same recordings' ``server_stderr`` rows, when their servers wrote
    any (`stderr_table`)."""
    stderr_longest: int = MAX_ROW
    """The longest of those rows' bytes, when known."""


def prepare_cache(directory: str) -> None:
    """Make the cache folder (private, 0700) when it does not exist. Raises OSError, also
    when ``directory`` is something other than a folder."""
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", directory)
    os.makedirs(directory, mode=0o700, exist_ok=True)


def _identity(stat: os.stat_result) -> tuple[int, int, int, int]:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _name(recording: str, stat: os.stat_result) -> str:
    key = "\0".join(
        [__version__, str(READING), column_spec(), recording, os.path.realpath(recording)]
        + [str(part) for part in _identity(stat)]
    )
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest() + _SUFFIX


def cached_rows(directory: str, recording: str) -> Optional[str]:
    """The file of ``recording``'s rows in ``directory`` when it is there, current and a
    plain file of this user's, else None (also when the recording cannot be looked at:
    reading it says why)."""
    try:
        stat = os.stat(recording)
    except (OSError, ValueError):
        return None
    path = os.path.join(directory, _name(recording, stat))
    try:
        found = os.lstat(path)
    except OSError:
        return None
    # Only a plain file this user wrote: a link or a file planted by someone else is no rows.
    if not S_ISREG(found.st_mode) or found.st_uid != _USER:
        return None
    return path


def _notes_path(rows: str) -> str:
    return rows[: -len(_SUFFIX)] + _NOTES


def _stderr_path(rows: str) -> str:
    return rows[: -len(_SUFFIX)] + _STDERR


def cached_row_file(rows: str, recording: str) -> RowFile:
    """The cached ``rows`` of ``recording`` with what is kept beside them: the notes (none
    when there are none, or they cannot be read) and the longest row (none kept: shorter than
    `SMALLEST_BUFFER`; `MAX_ROW` when what is kept cannot be read)."""
    found: object = ()
    longest = MAX_ROW
    try:
        # Only a regular file, and one of a sane size: a FIFO put there would block the query.
        found = json.loads(read_regular(_notes_path(rows), _NOTES_MAX).decode("utf-8"))
    except FileNotFoundError:  # nothing said of it: no row as long as the engine's default
        longest = 0
    except (OSError, ValueError):  # FileTooLarge and NotARegularFile included
        pass
    if isinstance(found, dict):
        kept = found.get("longest")
        if type(kept) is int and 0 <= kept <= MAX_ROW:
            longest = kept
        found = found.get("notes")
    notes = (
        tuple(note for note in found if isinstance(note, str)) if isinstance(found, list) else ()
    )
    stderr: Optional[str] = _stderr_path(rows)
    try:
        kept_stderr = os.lstat(_stderr_path(rows))
    except OSError:
        stderr = None  # its server wrote nothing
    else:
        # As the rows: only a plain file of this user's.
        if not S_ISREG(kept_stderr.st_mode) or kept_stderr.st_uid != _USER:
            stderr = None
    return RowFile(
        rows,
        scratch=False,
        recordings=(recording,),
        notes=notes,
        longest=longest,
        stderr=stderr,
        stderr_longest=LONGEST,
    )


def rows_into_cache(recordings: Sequence[str], directory: str) -> list[RowFile]:
    """Read each of ``recordings`` and write its rows to its file in ``directory`` (under a
    temporary name, renamed once whole and only when the recording did not change while it
    was read), its ``server_stderr`` rows beside them. Raises TraceError and OSError."""
    done = []
    for recording in recordings:
        with open_flows(recording) as trace:
            before = os.fstat(trace.fileno())  # the file being read, not one renamed over it
            final = os.path.join(directory, _name(recording, before))
            partial = f"{final}.{os.getpid()}.part"
            partial_stderr = f"{_stderr_path(final)}.{os.getpid()}.part"
            try:
                with open_private(partial) as stream, open_private(partial_stderr) as errors:
                    lines = StderrRows(trace_name(trace), errors)
                    trace.tracker.on_output = lines.add
                    longest = write_rows(flow_rows(trace), stream).longest
                    stderr = lines.finish()
                after = os.stat(recording)
                notes = tuple(reading_notes(trace))
                # A file still being written is not kept either: its note says so, and
                # would be found again once its writer is gone.
                current = _identity(before) == _identity(after) and not trace.being_written_at_end
                if current and (notes or longest >= SMALLEST_BUFFER):
                    # Before the rows are in place: a file found has what is said of it
                    # beside it (a failure to write it leaves no rows behind either).
                    kept = {"notes": list(notes), "longest": longest}
                    with open_private(_notes_path(final), overwrite=True) as stream:
                        stream.write(json.dumps(kept).encode("utf-8"))
            except BaseException:
                for path in (partial, partial_stderr):
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                raise
        stderr_path: Optional[str] = partial_stderr
        if not stderr.rows:
            os.unlink(partial_stderr)
            stderr_path = None
        elif current:  # before the rows: rows found have theirs beside them
            stderr_path = _stderr_path(final)
            os.replace(partial_stderr, stderr_path)
        if current:
            os.replace(partial, final)
        path = final if current else partial  # changed while read: used once, not kept
        done.append(
            RowFile(
                path,
                scratch=not current,
                recordings=(recording,),
                notes=notes,
                longest=longest,
                stderr=stderr_path,
                stderr_longest=stderr.longest,
            )
        )
    return done
