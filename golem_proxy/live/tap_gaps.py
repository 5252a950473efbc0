"""How the tap says what it did not observe: each gap it reports (`ObservationLost`), published
by one connection's `GapPublisher` and worded by the ``detail`` functions, one for each kind
of gap, so that the tap (tap.py) keeps to deciding when, as it hands each whole frame to its
`FramePublisher` (tap_frames.py)."""

from __future__ import annotations

from typing import Callable, Optional

from golem_core.pairing import Pending

from ..events import Direction, Event, FrameSeen, GapReason, ObservationLost, Where
from ..frame_runs import FrameRuns, frame_runs
from ..terminal import counted
from .tap_limits import FrameDigest, ObserveLimits

__all__ = [
    "CUT_BY_END",
    "CUT_BY_LOSS",
    "GapPublisher",
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


class GapPublisher:
    """Publishes one connection's gaps through ``publish``. The requests let go past the
    pending limits are gathered and said in one gap a direction (`evicted`, `say_evicted`);
    bytes lost that were not sent on either wait for the gap that counts them (`unsent`,
    `lost`)."""

    def __init__(
        self, conn: int, route: str, publish: Callable[[Event], None], limits: ObserveLimits
    ) -> None:
        self.conn = conn
        self.route = route
        self.publish = publish
        self.limits = limits
        self._evicting: dict[Direction, tuple[list[int], float]] = {}
        """Requests let go and not said yet: their frame indexes, in the order let go, and
        since when."""
        self._unsent: dict[Direction, tuple[int, str]] = {}
        """Of the bytes lost since the last report (`ConnectionTap.lose`), those never sent
        on, and why."""

    def evicted(self, direction: Direction, evicted: list[Pending[FrameSeen]], t: float) -> None:
        """Requests let go past the pending limits: said in one gap for what decoding lets go
        until the direction's bytes run out (`say_evicted`), not one per request: a client
        pipelining past the limit has one let go with each request it adds."""
        if evicted:
            numbers, _since = self._evicting.setdefault(direction, ([], t))
            numbers.extend(pending.context.index for pending in evicted)

    def say_evicted(self, direction: Direction) -> None:
        """The gap names the requests let go (`ObservationLost.frames`): a reader lets the same
        go, where the oldest it holds may not be (one set aside, sent again with the id of an
        answer the proxy missed, or lines that went unwritten)."""
        if direction not in self._evicting:
            return
        numbers, t = self._evicting.pop(direction)
        self.gap(
            direction,
            t,
            GapReason.EVICTED,
            len(numbers),
            detail=evicted_detail(numbers, self.limits),
            frames=frame_runs(numbers),
        )

    def unsent(self, direction: Direction, size: int, why: str) -> None:
        """``size`` of the bytes of ``direction`` lost were not sent on either (``why``): the
        next gap of lost bytes says so (`lost`)."""
        self._unsent[direction] = (self._unsent.get(direction, (0, ""))[0] + size, why)

    def lost(self, direction: Direction, t: float, lost: int, since: float) -> None:
        """``lost`` bytes of ``direction`` forwarded and never decoded, from ``since``."""
        unsent, why = self._unsent.pop(direction, (0, ""))
        detail = lost_detail(self.conn, direction, lost, since, unsent, why)
        self.gap(direction, t, GapReason.BEHIND, lost, detail)

    def restarted(self, direction: Direction, lost: int, t: float, unrecorded: int) -> None:
        """After a restart, ``direction`` goes on at a frame boundary (`ConnectionTap.resumed`)."""
        detail = restarted_detail(self.conn, direction, lost, unrecorded)
        self.gap(direction, t, GapReason.RESTARTED, lost, detail)

    def unobserved(
        self,
        direction: Direction,
        digest: FrameDigest,
        t: float,
        cost: int = 0,
        why: str = "",
        cut: str = "",
        answers: Optional[FrameSeen] = None,
    ) -> None:
        """A frame not observed: too large to hold (its digest made as it streamed) or, with
        ``cost``, whole but too costly to parse (``why``: its bytes never reached their
        receiver). With ``cut``, only its first bytes were digested (`digest_detail`). With
        ``answers``, the request it answers (`tap_gap_answer`)."""
        self.gap(
            direction,
            t,
            GapReason.FRAME_TOO_LARGE,
            digest.size,
            detail=digest_detail(digest, self.limits, cost, why, cut),
            digest=f"sha256:{digest.hash.hexdigest()}",
            header=digest.header,
            answers=None if answers is None else answers.index,
        )

    def gap(
        self,
        direction: Direction,
        t: float,
        reason: GapReason,
        size: int,
        detail: str,
        digest: str = "",
        header: bytes = b"",
        frames: Optional[FrameRuns] = None,
        answers: Optional[int] = None,
    ) -> None:
        self.publish(
            ObservationLost(
                **Where(conn=self.conn, route=self.route, direction=direction, t=t),
                reason=reason,
                size=size,
                detail=detail,
                digest=digest,
                header=header,
                frames=frames,
                answers=answers,
            )
        )


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
