"""Request/response correlation for one connection, sans-IO.

Responses are paired with requests by id (``1`` and ``"1"`` differ, as on the wire), first in,
first out when a client reuses an id. A reply without a usable id (GOLEM answers an unparseable
request with ``id: null``; Scrybe with ``id: 0``) goes to the oldest request that could not be
parsed. When a reply's id matches nothing but exactly one request is outstanding, the two are
paired anyway, so the contract check can report the id that was not echoed: the sequential
client of GOLEM or Scrybe takes it as its answer. Not where clients pair by id
(`Profile.replies_by_id`, MCP): there such a reply answers nothing. Once answers may have
crossed unseen (`answers_unseen`: bytes a proxy did not observe), the requests held until
then may have had theirs: a reply no id pairs goes to a request held since when one can take
it, as it would have without them.

Memory is bounded: a request the protocol never answers (a JSON-RPC notification) is not held,
and past ``max_pending`` outstanding requests (or ``max_pending_bytes`` of their sizes) the
oldest are evicted and handed back to the caller, who reports them as unanswered.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Generic, Optional, TypeVar

from .contract import Rule, Severity
from .messages import Malformed, Message, Role
from .profiles import Profile

__all__ = ["RULES", "R_ORPHAN_RESPONSE", "Correlator", "Pending"]

R_ORPHAN_RESPONSE = Rule(
    "pairing.orphan-response",
    Severity.ERROR,
    "Every response answers an outstanding request of its connection.",
    "request/response pairing",
)
RULES = (R_ORPHAN_RESPONSE,)
"""The rules whoever pairs with a `Correlator` reports."""

T = TypeVar("T")


@dataclass(frozen=True)
class Pending(Generic[T]):
    """An outstanding request and whatever the caller attached to it."""

    message: Message
    key: Optional[Any]
    sequence: int
    context: T


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
            self._by_key.setdefault(key, deque()).append(pending)
        return self._evict()

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
        for a request or notification, which answers nothing)."""
        if message.role is Role.REQUEST:
            return None
        unparseable = self.profile.answers_unparseable(message)
        since = self._unseen_before
        if unparseable:
            found = self._unparseable(since, message)
            if found is not None:
                return self._forget(found)
        key = self.profile.correlation_key(message)
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
        return pending
