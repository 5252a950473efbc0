"""The connections a restart of the observing process leaves out of the recording, as the
forwarding side knows them (`OpenConnections`, link_resume.py): those that opened and closed
while no process observed, and those that opened and closed while the process that stopped
still had them handed on and never acknowledged any of it (a hung process: the watchdog
replaces it only after `link_trail.STALL_LIMIT`). The forwarding side counted what each
carried, so the restart's line says it (`said`): which connections, how many bytes each way,
and in how many whole frames when the framing counts them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from ..terminal import counted, format_size

__all__ = ["Gone", "said"]

SHOWN = 4
"""Connections named in the restart's line at most (the rest are counted)."""


@dataclass(frozen=True)
class Gone:
    """A connection that closed and is not in the recording (or only partly: ``tail``)."""

    conn: int
    route: str
    sizes: tuple[int, int]
    """Bytes forwarded each way (client to server, server to client)."""
    frames: tuple[Optional[int], Optional[int]]
    """Whole frames each way; None where the framing does not count them (lines)."""
    unacknowledged: int = 0
    """Bytes of it handed to the process that stopped and never acknowledged (0: none: it
    opened and closed while no process observed)."""
    tail: bool = False
    """Its start is in the recording; only its last ``unacknowledged`` bytes may not be."""


def said(gone: Sequence[Gone]) -> str:
    """What the restart's line says of ``gone``: ``1 connection opened and closed in between
    is not in this recording (#2 on main: 318 B in 3 frames → / 393 B in 3 frames ←, handed to
    the observing process that stopped, never acknowledged)``, then of the connections whose
    end only may be missing."""
    whole = [g for g in gone if not g.tail]
    text = f"{counted(len(whole), 'connection')} opened and closed in between "
    text += "is" if len(whole) == 1 else "are"
    text += " not in this recording"
    if whole:
        text += f" ({_listed(whole)})"
    tails = [g for g in gone if g.tail]
    if tails:
        size = format_size(sum(g.unacknowledged for g in tails))
        names = ", ".join(f"#{g.conn}" for g in tails[:SHOWN])
        more = f" and {len(tails) - SHOWN} more" if len(tails) > SHOWN else ""
        text += (
            f"; of {counted(len(tails), 'connection')} closed before ({names}{more}), up to "
            f"{size} handed to the observing process that stopped were never acknowledged "
            "and may not be recorded"
        )
    return text


def _listed(gone: Sequence[Gone]) -> str:
    parts = [_one(g) for g in gone[:SHOWN]]
    if len(gone) > SHOWN:
        rest = gone[SHOWN:]
        c2s, s2c = (sum(g.sizes[i] for g in rest) for i in (0, 1))
        parts.append(f"{len(rest)} more: {format_size(c2s)} → / {format_size(s2c)} ←")
    text = "; ".join(parts)
    if any(g.unacknowledged for g in gone):
        text += (
            ", handed to the observing process that stopped and never acknowledged"
            if len(gone) == 1
            else "; those handed to the observing process that stopped were never acknowledged"
        )
    return text


def _one(gone: Gone) -> str:
    ways = []
    for size, frames, arrow in zip(gone.sizes, gone.frames, "→←"):
        whole = f" in {counted(frames, 'frame')}" if frames else ""
        ways.append(f"{format_size(size)}{whole} {arrow}")
    return f"#{gone.conn} on {gone.route}: {' / '.join(ways)}"
