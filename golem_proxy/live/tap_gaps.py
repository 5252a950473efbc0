"""How the tap words what it did not observe: the ``detail`` of each kind of gap it reports
(`ObservationLost`), one function each, so that the tap (tap.py) keeps to deciding when."""

from __future__ import annotations

from typing import Optional

from ..events import Direction
from ..terminal import counted
from .tap_limits import FrameDigest, ObserveLimits

__all__ = [
    "CUT_BY_END",
    "CUT_BY_LOSS",
    "digest_detail",
    "evicted_detail",
    "lost_detail",
    "restarted_detail",
    "unobserved_detail",
]

CUT_BY_END = "the stream ended inside it"
"""Why only the first bytes of a frame too large to hold were digested: the stream ended."""
CUT_BY_LOSS = "the rest of it went unobserved (the gap that follows)"
"""… or the observer was behind: the rest of the frame is in the next ``behind`` gap."""


def restarted_detail(conn: int, direction: Direction, lost: int, unrecorded: int) -> str:
    """``lost`` bytes crossed while no observing process recorded them (``unrecorded``: at
    most that many more, handed to the one that died, may be missing too)."""
    more = (
        f"; up to {counted(unrecorded, 'byte')} more of the connection's were handed to the "
        "observing process that died and may not be recorded"
        if unrecorded
        else ""
    )
    return (
        f"observation restarted: {counted(lost, 'byte')} on conn #{conn}, "
        f"{direction.value}, forwarded unobserved{more}; decoding resumes at the next frame"
    )


def lost_detail(
    conn: int, direction: Direction, lost: int, since: float, unsent: int, why: str
) -> str:
    """``lost`` bytes forwarded but never decoded, from ``since``; ``unsent`` of them were
    not sent on either (``why``)."""
    if not unsent:
        fate = "forwarded, not decoded"
    elif unsent >= lost:
        fate = f"never sent on ({why}), not decoded"
    else:
        fate = f"forwarded, not decoded; {unsent} of them never sent on ({why})"
    return (
        f"observation lost: {lost} bytes on conn #{conn}, {direction.value} "
        f"(from {since:.3f} s; {fate})"
    )


def unobserved_detail(
    size: int,
    limits: ObserveLimits,
    cost: int = 0,
    why: str = "",
    cut: str = "",
    frame_size: Optional[int] = None,
    delivered: int = 0,
) -> str:
    """A ``size``-byte frame forwarded whole and not observed: over the frame limit or, with
    ``cost`` (what its parse would have held), over the parse limit; with ``why``, read
    but never delivered (only its first ``delivered`` bytes were). With ``cut``
    (`CUT_BY_END`, `CUT_BY_LOSS`), ``size`` bytes are only its first, of ``frame_size``
    when its header says it: never "whole"."""
    if cost:
        over = (
            f"whose parse would hold about {_size(cost)}, over the {_size(limits.parse)} "
            "observation limit,"
        )
    else:
        over = f"over the {limits.frame}-byte observation limit"
    read = "read" if cut else "read whole"
    if not why:
        fate = "forwarded" if cut else "forwarded whole"
    elif delivered:
        fate = f"{read}, only the first {delivered} bytes delivered ({why})"
    else:
        fate = f"{read}, never delivered ({why})"
    if cut:
        frame = "a frame" if frame_size is None else f"a {frame_size}-byte frame"
        return (
            f"the first {size} bytes of {frame} {over} were {fate}; {cut}; "
            "kept as their header, size and digest"
        )
    return f"a {size}-byte frame {over} was {fate}; kept as its header, size and digest"


def digest_detail(digest: FrameDigest, limits: ObserveLimits, cost: int, why: str, cut: str) -> str:
    """`unobserved_detail` of the frame ``digest`` was made of (as far as ``cut``)."""
    delivered = min(digest.delivered or 0, digest.size)
    return unobserved_detail(digest.size, limits, cost, why, cut, digest.frame_size, delivered)


def evicted_detail(numbers: list[int], limits: ObserveLimits) -> str:
    """The requests numbered ``numbers`` let go unanswered past the pending limits."""
    return (
        f"{counted(len(numbers), 'request')} unanswered (evicted) past the limit of "
        f"{limits.pending} waiting or {limits.pending_bytes} bytes, oldest frame #{numbers[0]}"
    )


def _size(count: int) -> str:
    """``count`` bytes in MiB, or in bytes below one."""
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count} bytes"
