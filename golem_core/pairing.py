"""Request/response correlation for one connection, sans-IO.

Responses are paired with requests by id (``1`` and ``"1"`` differ, as on the wire). A client
that sends an id again while a request with it is outstanding breaks a rule (`R_ID_IN_FLIGHT`,
or its profile's own, `Profile.unique_id_rule`: `reused_id` says which), and its answers cannot
be told apart: each answer with that id is placed with the oldest request still waiting with it
(first in, first out) and marked ambiguous, naming every request it may answer
(`Paired.one_of`), until all of them have had one. A reply without a usable id (GOLEM answers an
unparseable request with ``id: null``; Scrybe with ``id: 0``) goes to the oldest request that
could not be parsed. When a reply's id matches nothing but exactly one request is outstanding,
the two are paired anyway, so the contract check can report the id that was not echoed: the
sequential client of GOLEM or Scrybe takes it as its answer. Not where clients pair by id
(`Profile.replies_by_id`, MCP): there such a reply answers nothing. Once answers may have
crossed unseen (`answers_unseen`: bytes a proxy did not observe), the requests held until then
may have had theirs: a reply no id pairs goes to a request held since when one can take it, as
it would have without them.

Memory is bounded: a request the protocol never answers (a JSON-RPC notification) is not held,
and past ``max_pending`` outstanding requests (or ``max_pending_bytes`` of their sizes) the
oldest are evicted and handed back to the caller, who reports them as unanswered.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Generic, Optional, TypeVar

from .contract import Rule, Severity, Violation, violation
from .messages import Malformed, Message, Role
from .profiles import Profile

__all__ = [
    "IDS_REMEMBERED",
    "RULES",
    "R_ID_IN_FLIGHT",
    "R_ORPHAN_RESPONSE",
    "Correlator",
    "Paired",
    "Pending",
]

R_ORPHAN_RESPONSE = Rule(
    "pairing.orphan-response",
    Severity.ERROR,
    "Every response answers an outstanding request of its connection.",
    "request/response pairing",
)
R_ID_IN_FLIGHT = Rule(
    "pairing.id-in-flight",
    Severity.ERROR,
    "A request's id is not used again while a request with it is outstanding on its "
    "connection: their answers could not be told apart.",
    "request/response pairing",
)
RULES = (R_ORPHAN_RESPONSE, R_ID_IN_FLIGHT)
"""The rules whoever pairs with a `Correlator` reports."""

IDS_REMEMBERED = 65_536
"""Ids a correlator remembers for a profile whose ids are unique within a session
(`Profile.unique_id_rule`); past that many the oldest are forgotten, and their reuse is no
longer seen (live and offline alike: the decision is the recording's)."""

T = TypeVar("T")


@dataclass(frozen=True)
class Pending(Generic[T]):
    """An outstanding request and whatever the caller attached to it."""

    message: Message
    key: Optional[Any]
    sequence: int
    context: T


@dataclass(frozen=True)
class Paired(Generic[T]):
    """What a response answers (`Correlator.pair`): ``pending``, or None for an orphan.
    ``one_of``: when several requests shared the response's id while outstanding, every one of
    them (oldest first, ``pending`` among them): it answers one of these, which one is not
    known; ``pending`` is only where it is placed (the oldest still waiting). Empty when the
    pairing is certain."""

    pending: Optional[Pending[T]]
    one_of: tuple[Pending[T], ...] = ()


class Correlator(Generic[T]):
    """Pairs the responses of one connection with its requests."""

    def __init__(
        self,
        profile: Profile,
        *,
        max_pending: Optional[int] = None,
        max_pending_bytes: Optional[int] = None,
    ) -> None:
        self.profile = profile
        self.max_pending = max_pending
        self.max_pending_bytes = max_pending_bytes
        self.pending_bytes = 0
        """The sum of the ``size`` of the requests held now."""
        self._by_key: dict[Any, deque[Pending[T]]] = {}
        # Every outstanding request in arrival order (sequence → pending), for FIFO fallbacks.
        self._order: OrderedDict[int, Pending[T]] = OrderedDict()
        self._sizes: dict[int, int] = {}
        self._sequence = 0
        self._unseen_before = 0
        """Requests held before this sequence may have had their answers unseen
        (`answers_unseen`)."""
        self._shared: dict[Any, list[Pending[T]]] = {}
        """Per id sent again while a request with it was outstanding: every request that
        shared it, until none of them waits any more (their answers are ambiguous)."""
        self._used: Optional[dict[Any, None]] = {} if profile.unique_id_rule else None
        """The ids used so far (oldest first, at most `IDS_REMEMBERED`), for a profile whose
        ids are unique within a session."""

    def __len__(self) -> int:
        return len(self._order)

    def add_request(self, message: Message, context: T, size: int = 0) -> list[Pending[T]]:
        """Remember a request (valid or malformed) until its response arrives; ``size`` is
        what holding it costs (its bytes). Returns the requests evicted to stay within the
        limits, oldest first (empty almost always). A request the protocol never answers is
        not held."""
        if not self.profile.expects_response(message):
            return []
        key = self.profile.correlation_key(message)
        pending = Pending(message, key, self._sequence, context)
        self._sequence += 1
        self._order[pending.sequence] = pending
        if size:
            self._sizes[pending.sequence] = size
            self.pending_bytes += size
        if key is not None:
            queue = self._by_key.setdefault(key, deque())
            if queue:
                self._shared.setdefault(key, list(queue)).append(pending)
            queue.append(pending)
        return self._evict()

    def reused_id(self, message: Message) -> Optional[Violation]:
        """The rule the request ``message`` breaks by its id, if any: one its side sent before
        (`Profile.unique_id_rule`, remembered up to `IDS_REMEMBERED` ids), or one a request
        still outstanding carries (`R_ID_IN_FLIGHT`). Call it once per request, before
        `add_request`; a request the protocol never answers has no id to reuse."""
        if not self.profile.expects_response(message):
            return None
        key = self.profile.correlation_key(message)
        if key is None:
            return None
        shown = _short(getattr(message, "id", None))
        used = self._used
        rule = self.profile.unique_id_rule
        if used is not None and rule is not None:
            if key in used or self._by_key.get(key):
                return violation(rule, f"id {shown} was used before by this side", "$.id")
            used[key] = None
            if len(used) > IDS_REMEMBERED:
                del used[next(iter(used))]
            return None
        if self._by_key.get(key):
            return violation(
                R_ID_IN_FLIGHT,
                f"id {shown} is used again while a request with it is outstanding: "
                "its answers cannot be told apart",
                "$.id",
            )
        return None

    def _evict(self) -> list[Pending[T]]:
        evicted: list[Pending[T]] = []
        limit, byte_limit = self.max_pending, self.max_pending_bytes
        while len(self._order) > 1 and (
            (limit is not None and len(self._order) > limit)
            or (byte_limit is not None and self.pending_bytes > byte_limit)
        ):
            evicted.append(self._forget(next(iter(self._order.values()))))
        return evicted

    def match_response(self, message: Message) -> Optional[Pending[T]]:
        """Return (and forget) the request ``message`` answers, or None for an orphan (and
        for a request or notification, which answers nothing). An ambiguous answer is placed
        with the oldest request waiting with its id: `pair` says it is ambiguous."""
        return self.pair(message).pending

    def pair(self, message: Message) -> Paired[T]:
        """What ``message`` answers (forgetting that request): a request, several it may
        answer (`Paired.one_of`), or none (an orphan; also a request or notification)."""
        if message.role is Role.REQUEST:
            return Paired(None)
        key = self.profile.correlation_key(message)
        if key is not None and key in self._shared and self._by_key.get(key):
            one_of = tuple(self._shared[key])
            return Paired(self._forget(self._by_key[key][0]), one_of)
        return Paired(self._match(message, key))

    def _match(self, message: Message, key: Optional[Any]) -> Optional[Pending[T]]:
        unparseable = self.profile.answers_unparseable(message)
        since = self._unseen_before
        if unparseable:
            found = self._unparseable(since, message)
            if found is not None:
                return self._forget(found)
        if key is not None:
            queue = self._by_key.get(key)
            if queue:
                return self._forget(queue[0])
        sequential = not self.profile.replies_by_id
        if sequential:
            sole = self._sole(since)
            if sole is not None:
                return self._forget(sole)
        if self.waiting_from_before_unseen():
            # Only requests whose answers may have crossed unseen can take it: as if none had.
            found = self._unparseable(0, message) if unparseable else None
            if found is None and sequential:
                found = self._sole(0)
            if found is not None:
                return self._forget(found)
        return None

    def _unparseable(self, since: int, answer: Message) -> Optional[Pending[T]]:
        """The oldest request held from ``since`` on that could not be parsed (no id read):
        the oldest that ``answer`` fits (`Profile.answers_this_unparseable`: a null id
        answers a line with no id a server could read) when one does, else the oldest."""
        fits = self.profile.answers_this_unparseable
        oldest: Optional[Pending[T]] = None
        for pending in self._order.values():
            if pending.key is None and isinstance(pending.message, Malformed):
                if pending.sequence < since:
                    continue
                if fits(answer, pending.message):
                    return pending
                oldest = oldest or pending
        return oldest

    def _sole(self, since: int) -> Optional[Pending[T]]:
        """The one request held from ``since`` on, when exactly one is waiting."""
        newest: Optional[Pending[T]] = None
        # Newest first: those held since are the last in arrival order.
        for sequence, pending in reversed(self._order.items()):
            if sequence < since:
                break
            if newest is not None:
                return None
            newest = pending
        return newest

    def answers_unseen(self) -> None:
        """Answers to the requests held so far may have crossed unseen (bytes that were not
        observed): a reply that no id pairs goes to a request held since when one can take it
        (the oldest that could not be parsed, for a reply to one; else the one waiting)."""
        self._unseen_before = self._sequence

    def waiting_from_before_unseen(self) -> bool:
        """Whether a request held before answers crossed unseen (`answers_unseen`) waits."""
        return bool(self._order) and next(iter(self._order)) < self._unseen_before

    def sharing_id(self, message: Message) -> list[Pending[T]]:
        """The outstanding requests whose id ``message`` carries too, oldest first."""
        key = self.profile.correlation_key(message)
        return list(self._by_key.get(key, ())) if key is not None else []

    def withdraw(self, pending: Pending[T]) -> None:
        """Forget one outstanding request whose answer will not be seen."""
        self._forget(pending)

    def evict_oldest(self, count: int) -> list[Pending[T]]:
        """Forget and return the ``count`` oldest outstanding requests (fewer when fewer are
        held): what a correlator with limits let go, replayed by one that has none."""
        return [self._forget(p) for p in list(self._order.values())[: max(count, 0)]]

    def outstanding(self) -> list[Pending[T]]:
        """Requests still waiting for a response, oldest first."""
        return list(self._order.values())

    def clear(self) -> list[Pending[T]]:
        """Forget and return every outstanding request (the connection closed)."""
        left = list(self._order.values())
        self._order.clear()
        self._by_key.clear()
        self._shared.clear()
        self._sizes.clear()
        self.pending_bytes = 0
        return left

    def _forget(self, pending: Pending[T]) -> Pending[T]:
        del self._order[pending.sequence]
        self.pending_bytes -= self._sizes.pop(pending.sequence, 0)
        if pending.key is not None:
            queue = self._by_key[pending.key]
            queue.remove(pending)
            if not queue:
                del self._by_key[pending.key]
                self._shared.pop(pending.key, None)
        return pending


def _short(ident: Any) -> str:
    text = repr(ident)
    return text if len(text) <= 40 else text[:39] + "…"
