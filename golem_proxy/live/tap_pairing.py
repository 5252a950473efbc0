"""The tap's pairing decision for one connection: which request a response answers, or that it
answers none (an orphan), or that it most likely answers a request it could not keep (too
large to observe, lost in a gap, or let go past the pending limits).
Decided here once, before the response's `FrameSeen` is published, which carries it
(``answers``, ``orphan``); no view pairs again."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.messages import Message, method_of
from golem_core.pairing import Correlator, Pending
from golem_core.profiles import Profile

from ..events import Direction, FrameSeen
from ..json_cost import message_holds
from .tap_limits import PENDING_OVERHEAD, ObserveLimits

__all__ = ["EVICTED_IDS", "Answered", "ConnectionPairing", "frame_method"]

EVICTED_IDS = 65_536
"""Ids of requests let go past the pending limits remembered per direction, so that their late
answers are known as theirs and not taken for orphans; past that many, only a count (the next
answers that pair with nothing are theirs, as for a request too large to observe)."""


@dataclass(frozen=True)
class Answered:
    """What a response answers: ``request`` (its frame), or a request it cannot be paired
    with (``unseen``: one too large to observe, lost in a gap, or let go past the pending
    limits), or nothing (an orphan). ``reply`` False: it is no reply at all (`Profile.is_reply`:
    an MCP server's stray line), so it answers nothing and is no orphan."""

    request: Optional[FrameSeen]
    unseen: bool = False
    reply: bool = True

    @property
    def orphan(self) -> bool:
        return self.request is None and not self.unseen and self.reply


NOT_A_REPLY = Answered(None, reply=False)


def frame_method(message: Message, answered: Optional[str]) -> Optional[str]:
    """The method a frame is of, for the rules scoped by one (``--redact METHOD:``, ``--fault
    method=``): a response's is that of the request it answers (``answered``, as paired; None
    when it answers none), any other frame's its own: a request's, whichever peer sent it (a
    JSON-RPC server asking its client), a notification's."""
    return answered if answered is not None else method_of(message)


class ConnectionPairing:
    """Pairs one connection's responses with its requests, both ways: a client's id 1 and a
    server's id 1 (a JSON-RPC server asking its client something) are different requests, so
    there is one correlator per direction requests travel."""

    def __init__(self, profile: Profile, limits: ObserveLimits) -> None:
        self._profile = profile
        self._correlators: dict[Direction, Correlator[FrameSeen]] = {
            direction: Correlator(
                profile, max_pending=limits.pending, max_pending_bytes=limits.pending_bytes
            )
            for direction in Direction
        }
        # Frames too large to observe, per direction: the next unpaired answer is most likely
        # theirs, not an orphan.
        self._unseen = {Direction.C2S: 0, Direction.S2C: 0}
        # Bytes sent this way were not observed (a gap: the observer was behind, or shed): how
        # many requests they held is unknown, so answers that pair with nothing are theirs,
        # not orphans, until one pairs with a request sent after the gap (the index of the
        # last request held before it; None: no gap since).
        self._lost_after: dict[Direction, Optional[int]] = {
            Direction.C2S: None,
            Direction.S2C: None,
        }
        self._last_held = {Direction.C2S: -1, Direction.S2C: -1}
        # Bytes sent towards the asker were not observed: the answers to its requests held up
        # to this index may have been among them (-1: none).
        self._answers_lost_upto = {Direction.C2S: -1, Direction.S2C: -1}
        self._evicted: dict[Direction, dict[Any, int]] = {d: {} for d in Direction}
        """Ids of the requests let go (`hold`), or known only by their id (`take_over`), whose
        answers have not come, with how many."""

    def __len__(self) -> int:
        """Requests waiting for an answer, both ways."""
        return sum(len(correlator) for correlator in self._correlators.values())

    def awaited(self, asker: Direction) -> bool:
        """Whether requests sent ``asker`` may still wait for answers: some wait, or some were
        let go, too large to observe, or sent in bytes not observed, and their answers are
        not all known to have come."""
        return (
            len(self._correlators[asker]) > 0
            or self._unseen[asker] > 0
            or bool(self._evicted[asker])
            or self._lost_after[asker] is not None
        )

    def unanswerable(self, asker: Direction) -> tuple[int, ...]:
        """The frame numbers of the requests sent ``asker`` still waiting, oldest first, once
        the answering side ended its stream: those whose answers cannot have crossed unseen
        (sent after the last bytes towards ``asker`` that were not observed)."""
        seen_after = self._answers_lost_upto[asker]
        waiting = self._correlators[asker].outstanding()
        return tuple(p.context.index for p in waiting if p.context.index > seen_after)

    @property
    def pending_bytes(self) -> int:
        """What the requests waiting for an answer cost, both ways."""
        return sum(c.pending_bytes for c in self._correlators.values())

    def hold(
        self, direction: Direction, message: Message, frame: FrameSeen
    ) -> list[Pending[FrameSeen]]:
        """Keep a request sent ``direction`` until its answer; returns the requests let go
        to stay within the limits, oldest first (a notification is never held). Holding it
        costs its payload's bytes, its message's (`message_holds`: its strings' characters but
        those elided, and its structure) and `PENDING_OVERHEAD`; at most the pending
        byte limit, so that one request never stands for more than its connection may hold
        (the newest request is kept whatever it costs: an observer over its budget would
        shed the answer that lets it go)."""
        correlator = self._correlators[direction]
        answers_lost_upto = self._answers_lost_upto[direction]
        if answers_lost_upto >= 0:
            for stale in correlator.sharing_id(message):
                if stale.context.index <= answers_lost_upto:
                    # An id is unique among a client's outstanding requests: one that sends
                    # this id again had the older request's answer, in bytes not observed.
                    # Left waiting, it would take the new request's answer (first in, first
                    # out); it stays unanswered in the recording, after the gap.
                    correlator.withdraw(stale)
        self._last_held[direction] = frame.index
        payload = frame.payload
        cost = len(payload) + message_holds(payload, frame.elided) + PENDING_OVERHEAD
        if correlator.max_pending_bytes is not None:
            cost = min(cost, correlator.max_pending_bytes)
        evicted = correlator.add_request(message, frame, cost)
        for pending in evicted:
            self._late(direction, getattr(pending.message, "id", None))
        return evicted

    def _late(self, direction: Direction, ident: Any) -> None:
        """The answer to a request sent ``direction`` with id ``ident`` will be no orphan,
        though it cannot be paired (by id while `EVICTED_IDS` allow, else by count)."""
        key = _key(ident)
        ids = self._evicted[direction]
        if key is not None and (key in ids or len(ids) < EVICTED_IDS):
            ids[key] = ids.get(key, 0) + 1
        else:
            self._unseen[direction] += 1

    def answer(self, asker: Direction, message: Message) -> Answered:
        """What the response ``message`` to a request sent ``asker`` answers (and forget
        that request)."""
        correlator = self._correlators[asker]
        if not correlator.profile.is_reply(message):
            return NOT_A_REPLY
        if self._late_answer(asker, message):
            return Answered(None, unseen=True)
        pending = correlator.match_response(message)
        lost_after = self._lost_after[asker]
        if pending is not None:
            if lost_after is None:
                return Answered(pending.context)
            if pending.context.index > lost_after:
                self._lost_after[asker] = None
                return Answered(pending.context)
            if getattr(pending.message, "id", None) == getattr(message, "id", None):
                return Answered(pending.context)
            # Paired only for being the one request waiting (a GOLEM client's one at a time):
            # it was sent before the gap, whose bytes held its answer and this one's request.
            return Answered(None, unseen=True)
        if self._unseen[asker]:
            self._unseen[asker] -= 1
            return Answered(None, unseen=True)
        # A reply that names no request (GOLEM's null id) while requests wait whose answers
        # may have crossed unseen: it answers one of them, which one is not known (one of them
        # alone would have been paired with it).
        theirs = _id_key(message) is None and correlator.waiting_from_before_unseen()
        return Answered(None, unseen=theirs or lost_after is not None)

    def _late_answer(self, asker: Direction, message: Message) -> bool:
        """``message`` answers a request sent ``asker`` that was let go (by id, while
        `EVICTED_IDS` allow): late, no orphan, and no answer to the one request still waiting,
        which `Correlator.match_response` pairs with a reply whose id matches none waiting (a
        sequential client's, which never has one let go). A request waiting with the same id
        takes it, as the client would."""
        ids = self._evicted[asker]
        key = _id_key(message) if ids else None
        if key is None or key not in ids or self._correlators[asker].sharing_id(message):
            return False
        if ids[key] == 1:
            del ids[key]
        else:
            ids[key] -= 1
        return True

    def withheld(self, asker: Direction, index: int, ident: Any) -> None:
        """The request sent ``asker`` as frame ``index`` with id ``ident`` never reached its
        receiver: the proxy withheld it and answers it for no one (a server's own request: the
        client's answers come the other way). Nothing is waited for it any more, so no end of
        the receiver's stream names it (`unanswerable`). Nothing when that frame is not the
        request held last (it was let go, or was never decoded)."""
        if self._last_held[asker] != index:
            return
        correlator = self._correlators[asker]
        newest = correlator.outstanding()[-1:]
        for pending in newest:
            if pending.context.index == index and _key(ident) == _id_key(pending.message):
                correlator.withdraw(pending)

    def unseen_request(self, direction: Direction) -> None:
        """A request sent ``direction`` was too large to observe: its answer is no orphan."""
        self._unseen[direction] += 1

    def unobserved(self, direction: Direction) -> None:
        """A frame sent ``direction`` was too large to observe: a client's is a request (a
        server's too, when its server may ask), whose answer is no orphan; a server's is an
        answer (a client's too, then), which the requests waiting may have had."""
        servers_ask = self._profile.servers_send_requests
        if direction is Direction.C2S or servers_ask:
            self.unseen_request(direction)
        if direction is Direction.S2C or servers_ask:
            self.answers_lost(direction.reverse)

    def requests_lost(self, direction: Direction) -> None:
        """Bytes sent ``direction`` were forwarded but not observed: the answers to the
        requests among them are no orphans."""
        if self._lost_after[direction] is None:
            self._lost_after[direction] = self._last_held[direction]

    def answers_lost(self, asker: Direction) -> None:
        """Bytes sent towards ``asker`` were forwarded but not observed: they may have held
        the answers to the requests it sent so far (a reply that no id pairs goes to a
        request sent since, when one can take it: `Correlator.answers_unseen`)."""
        self._answers_lost_upto[asker] = self._last_held[asker]
        self._correlators[asker].answers_unseen()

    def take_over(
        self, recorded: Iterable[FrameSeen], unread: Iterable[tuple[Direction, Any]]
    ) -> None:
        """After a restart: hold again the requests the recording shows in flight (``recorded``,
        oldest first; those past the pending limits are let go as `hold` lets them go), know
        the answers to those it holds unread (their direction and id) as no orphans, and take
        answers to any other request sent before the restart for answers to requests the
        process that died was handed but did not record (`requests_lost`)."""
        for frame in recorded:
            if frame.expects_answer:
                self.hold(frame.direction, frame.message, frame)
        for direction, ident in unread:
            self._late(direction, ident)
        for direction in Direction:
            self.requests_lost(direction)
            self.answers_lost(direction)

    def clear(self) -> None:
        """Forget every waiting request (decoding of the connection stopped)."""
        for correlator in self._correlators.values():
            correlator.clear()


def _id_key(message: Message) -> Any:
    """A request's or response's id as a key (``1`` and ``"1"`` differ), or None when it has
    none that could be one (no id, or a malformed one such as a list)."""
    return _key(getattr(message, "id", None))


def _key(value: Any) -> Any:
    """An id as a key (see `_id_key`)."""
    if value is None or not isinstance(value, (str, int, float)):
        return None
    return (type(value).__name__, value)
