"""What a view says on stderr once it has read a recording to its end, one line each: where
the observing process restarted, where the spool was full (`spool_full_words`), where lines
were lost or are out of order (their ``seq``, their ``t``), requests the reader let go past
what it holds at once, where observation stopped, and that the recording was cut short (an
incomplete last line, no ``session-end`` line where the header promises one, connections
never closed) or is still being written. Text only: `show`, `stats`, `check`, `export` print
the lines, `query` prints those its worker processes made, `diff` those of each trace (read
with its rows, `analysis.request_rows`, each naming its trace), and the TUI shows
`order_notes`."""

from __future__ import annotations

import os
import shlex
from typing import Optional, Union

from ..recording.seq_watch import SeqJump, SeqWatch
from ..recording.spool_left import SPOOL_SUFFIX
from ..recording.time_watch import TimeStep, TimeWatch
from ..recording.unheld_exchanges import UnheldExchanges
from ..terminal import format_size, safe_text
from .spool_full import spool_full_words
from .trace import FlowReader

__all__ = [
    "RESTARTS_NOTED",
    "order_notes",
    "reading_notes",
    "stopped_words",
    "unfinished_reasons",
]

RESTARTS_NOTED = 20
"""Restarts named one by one; one more line counts the rest."""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _named(path: str, role: Optional[str]) -> str:
    """The recording as a note names it: its file, after its role when a command reads
    several (``trace B, b.jsonl``, as the command's errors name it)."""
    return f"{role}, {safe_text(path)}" if role else safe_text(path)


def order_notes(
    path: str,
    seq: SeqWatch,
    times: TimeWatch,
    role: Optional[str] = None,
    unheld: Optional[UnheldExchanges] = None,
) -> list[str]:
    """The notes of a recording's lines out of order, as far as read: the first place their
    numbering breaks, then the first place their times go back (each with how many other
    places do), then the first exchange line naming frames the lines before it do not hold
    (``unheld``), unless lines were lost before it (the numbering's note covers it).
    ``role`` names the recording before its file (`reading_notes`)."""
    name = _named(path, role)
    notes = []
    unpaired = unheld.first if unheld is not None else None
    if unpaired is not None and seq.first is not None and seq.first.line <= unpaired.line:
        unpaired = None  # lines lost before it: the numbering's note says so, and why
    if unheld is not None and unpaired is not None:
        elsewhere = unheld.count - 1
        others = f" (and {_plural(elsewhere, 'other exchange line')})" if elsewhere else ""
        notes.append(
            f"note: {name}: line {unpaired.line}: {unpaired.describe()}{others}; an answer it "
            "names that the file holds is a row of its own"
        )
    found: list[tuple[Union[SeqJump, TimeStep, None], int]] = [
        (seq.first, seq.count),
        (times.first, times.count),
    ]
    for first, count in found:
        if first is not None:
            elsewhere = count - 1
            others = f" and {_plural(elsewhere, 'other place')}" if elsewhere else ""
            notes.append(
                f"note: {name}: line {first.line}: {first.describe()}{others}; "
                "flows near it may be wrong"
            )
    return notes


def reading_notes(reader: FlowReader, role: Optional[str] = None) -> list[str]:
    """The notes of a recording read to its end: one line per restart of the observing
    process (up to `RESTARTS_NOTED`, then one that counts the rest), where the spool was full
    and the session went on without it, the first place the lines' numbering breaks and the
    first place their times go back (`order_notes`), then where observation stopped when it
    did, else why the file was cut short when it was (what the proxy had not flushed yet,
    about `TRAILS_BY`, is missing), or that it is still being written, when its writer was
    alive as it was read to its end. A file that ends with its ``session-end`` line is whole:
    its connections left open say nothing. ``role`` names the recording before its file, for
    a command that reads several (``trace B``)."""
    path = _named(reader.path, role)
    notes = []
    for restart in reader.restarts[:RESTARTS_NOTED]:
        notes.append(
            f"note: {path}: observation restarted at {restart.t:.3f} s "
            f"({safe_text(restart.detail)}); what was forwarded while no observing process "
            "recorded it is not in this recording"
        )
    more = reader.restart_count - RESTARTS_NOTED
    last = reader.last_restart
    if more > 0 and last is not None:
        notes.append(
            f"note: {path}: and {_plural(more, 'more restart')} of the observing process, "
            f"the last at {last.t:.3f} s"
        )
    full = reader.spool_full
    if full is not None:
        notes.append(f"note: {path}: at {full.t:.3f} s {spool_full_words(full)}")
    notes += order_notes(reader.path, reader.seq, reader.times, role, reader.unheld)
    held = reader.held
    if held.let_go:
        notes.append(
            f"note: {path}: {_plural(held.let_go, 'request')} waiting for an answer let go by "
            f"this reader, past its limit of {format_size(held.limit)} held at once (rows of "
            "status evicted; an answer read after one is a row of its own)"
        )
    stopped = reader.stopped
    if stopped is not None:
        # Connections are left open and lines may be cut by design: say what happened instead.
        notes.append(
            f"note: {path}: observation stopped at {stopped.t:.3f} s: "
            f"{safe_text(stopped.detail)}; what was forwarded after it is not in this recording"
        )
        return notes
    if reader.ended is not None:  # the session ended in order: the file is whole
        if reader.truncated_tail:
            notes.append(
                f"note: {path}: it ends with an incomplete line after the session's end: "
                "read up to the last complete line"
            )
        return notes
    why = unfinished_reasons(reader)
    if why:
        notes.append(_unfinished_note(path, reader.being_written_at_end, why, reader.path))
    return notes


def unfinished_reasons(reader: FlowReader) -> list[str]:
    """Why the recording read to its end does not end as a finished session's (an incomplete
    last line, no ``session-end`` line where its header promises one, connections never
    closed), none when it does: it ends with its ``session-end`` line, or where observation
    stopped (the gap of the rest of the session, said as such)."""
    if reader.stopped is not None or reader.ended is not None:
        return []
    why = []
    if reader.truncated_tail:
        why.append("it ends with an incomplete line: read up to the last complete line")
    if reader.header.promises_session_end and reader.read_to_end:
        why.append("no session-end line")
    unclosed = reader.unclosed
    if unclosed:
        why.append(f"{_plural(unclosed, 'connection')} never closed")
    return why


def _unfinished_note(path: str, writing: Optional[bool], why: list[str], file: str) -> str:
    """The note of a recording that does not end as a finished session's does (``why``):
    still being written when it was read (``writing``: `FlowReader.being_written_at_end`),
    or left by a proxy that stopped without closing it, or either when that cannot be told
    (a file whose writer held no lock). With a spool beside it (``file``'s, in use or left
    by a kill) the recording trails the wire by what the spool holds, seconds under load,
    not `TRAILS_BY`."""
    from ..live.recorder import TRAILS_BY  # here: the live side imports trio

    spool = file + SPOOL_SUFFIX
    if os.path.lexists(spool):
        trail = f"what its spool ({safe_text(spool)}) holds"
        rebuild = (
            f"; after a kill -9, golem-proxy recover {shlex.quote(safe_text(file))} rebuilds it"
        )
        if writing:
            return (
                f"note: {path}: still being written (the proxy is recording through a spool); "
                f"read as far as it is written, it may trail the wire by {trail}"
            )
        said = "; ".join(why)
        stopped = stopped_words(writing)
        return f"note: {path}: {stopped}; it may trail the wire by {trail} ({said}){rebuild}"
    trail = f"{round(TRAILS_BY * 1000)} ms"
    if writing:
        # Nothing is wrong with it: it ends where the writer has got to.
        return (
            f"note: {path}: still being written (the proxy is recording); read as far as it "
            f"is written, the last {trail} may not be in it yet"
        )
    said = "; ".join(why)
    return f"note: {path}: {stopped_words(writing)}; the last {trail} may be missing ({said})"


def stopped_words(writing: Optional[bool]) -> str:
    """What a recording that does not end as a finished session's says of its writer, when
    that writer is not known to be writing it (``writing``: False, gone; None, either)."""
    stopped = "the proxy stopped without closing this recording"
    return stopped + " or is still writing it" if writing is None else stopped
