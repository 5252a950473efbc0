"""Which waiting request a frame too large to observe answers, decided once, where its bytes
are decoded (the tap), and carried in its gap (`ObservationLost.answers`).

Such a frame is digested, not parsed (`tap_limits.FrameDigest`): its id is read from its first
and last bytes (`frame_ends.FrameEnds.reply_id`), and paired by the profile's own rule
(`tap_pairing.ConnectionPairing.answer`), as the frame would have been had it been observed.
The request it answers is then answered, though its answer was not observed: no view calls it
unanswered, and the MCP tool call it was stops being in flight (`attribution.ToolCallTracker`),
so that later GOLEM frames are not said to be of it. A frame whose ends show no id, or an id
no waiting request has, answers nothing known: its gap is as it always was.
"""

from __future__ import annotations

from typing import Optional

from golem_core.messages import Role
from golem_core.profiles import Profile

from ..events import Direction
from .frame_ends import NO_ID
from .tap_limits import FrameDigest
from .tap_pairing import Answered, ConnectionPairing

__all__ = ["gap_answers"]


def gap_answers(
    profile: Profile, pairing: ConnectionPairing, direction: Direction, digest: FrameDigest
) -> Optional[Answered]:
    """What the whole frame ``digest`` was made of, sent ``direction``, answers, paired as
    its answer would have been had it been observed (the request it answers is no longer
    waiting); None when its ends show it is no reply with an id (nothing is paired: the
    frame is said unobserved as before, `ConnectionPairing.unobserved`)."""
    if direction is Direction.C2S and not profile.servers_send_requests:
        return None  # a client's frame is a request: it answers nothing
    ident = digest.ends.reply_id()
    if ident is NO_ID:
        return None
    # The reply as the profile would type it, but for its bulk: pairing reads its id only.
    message = profile.parse_decoded(profile.success(ident, None), Role.RESPONSE)
    return pairing.answer(direction.reverse, message)
