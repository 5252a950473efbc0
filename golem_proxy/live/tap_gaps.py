"""How the tap words what it did not observe: the ``detail`` of each kind of gap it reports
(`ObservationLost`), one function each, so that the tap (tap.py) keeps to deciding when."""

from __future__ import annotations

from ..events import Direction
from ..terminal import counted
from .tap_limits import ObserveLimits

__all__ = ["evicted_detail", "lost_detail", "restarted_detail", "unobserved_detail"]


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


def unobserved_detail(size: int, limits: ObserveLimits, cost: int = 0, why: str = "") -> str:
    """A ``size``-byte frame forwarded whole and not observed: over the frame limit or, with
    ``cost`` (what its parse would have held), over the parse limit; with ``why``, read
    whole but never delivered."""
    if cost:
        over = (
            f"whose parse would hold about {_size(cost)}, over the {_size(limits.parse)} "
            "observation limit,"
        )
    else:
        over = f"over the {limits.frame}-byte observation limit"
    fate = f"read whole, never delivered ({why})" if why else "forwarded whole"
    return f"a {size}-byte frame {over} was {fate}; kept as its header, size and digest"


def evicted_detail(numbers: list[int], limits: ObserveLimits) -> str:
    """The requests numbered ``numbers`` let go unanswered past the pending limits."""
    return (
        f"{counted(len(numbers), 'request')} unanswered (evicted) past the limit of "
        f"{limits.pending} waiting or {limits.pending_bytes} bytes, oldest frame #{numbers[0]}"
    )


def _size(count: int) -> str:
    """``count`` bytes in MiB, or in bytes below one."""
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count} bytes"
