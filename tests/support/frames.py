"""One `FrameSeen` built by hand, as the tap would publish it, for tests that need a single
frame rather than a whole session (`sessions.SessionBuilder`, `trace_builder.TapSimulator`)."""

from __future__ import annotations

from typing import Optional

from golem_core.messages import Role
from golem_core.profiles import Profile
from golem_proxy.events import Direction, FrameSeen


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
