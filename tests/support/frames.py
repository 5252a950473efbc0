"""One `FrameSeen` built by hand, as the tap would publish it, for tests that need a single
frame rather than a whole session (`sessions.SessionBuilder`, `trace_builder.TapSimulator`);
and the gap the tap publishes in place of a frame too large to observe."""

from __future__ import annotations

from typing import Optional

from golem_core.messages import Role
from golem_core.profiles import Profile
from golem_proxy.events import Direction, FrameSeen, GapReason, ObservationLost


def frame_seen(
    profile: Profile,
    direction: Direction,
    index: int,
    payload: bytes,
    *,
    conn: int = 1,
    route: str = "main",
    t: float = 0.0,
    size: Optional[int] = None,
    redacted: tuple[str, ...] = (),
    expects_answer: bool = False,
    answers: Optional[int] = None,
    orphan: bool = False,
) -> FrameSeen:
    """The ``index``-th frame of its direction on ``conn``: ``payload`` parsed by ``profile`` as
    a request when it goes upstream (c2s), as a response when it comes back. ``size`` (the
    bytes on the wire) defaults to the payload's length; the pairing fields are the caller's."""
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    return FrameSeen(
        conn=conn,
        route=route,
        direction=direction,
        index=index,
        t=t,
        size=len(payload) if size is None else size,
        payload=payload,
        message=profile.parse(payload, role),
        redacted=redacted,
        expects_answer=expects_answer,
        answers=answers,
        orphan=orphan,
    )


def too_large_gap(
    *,
    conn: int = 1,
    t: float = 0.5,
    detail: str = "a 41943040-byte frame over the observation limit",
    digest: str = "sha256:" + "0" * 64,
) -> ObservationLost:
    """The gap the tap publishes in place of a 40 MiB response frame on ``conn`` of route
    "main": its size, ``detail``, the frame's ``digest`` and its first (header) bytes."""
    return ObservationLost(
        conn=conn,
        route="main",
        direction=Direction.S2C,
        t=t,
        reason=GapReason.FRAME_TOO_LARGE,
        size=40 << 20,
        detail=detail,
        digest=digest,
        header=b"\x02\x80\x00\x00",
    )
