"""Replay answers from the recording's document state: an answer recorded after a request that
changed that state (a ``scene.list_objects`` recorded after a ``scene.create_box``) shows the
change, whether or not this run has made it. When the engine serves such an answer while a
request recorded before it on its route that changes state has not been sent yet (the
channels of GOLEM hold states of their own: Rhino's document, Grasshopper's), the answer may show
state this run has not made: replay says so (a warning, not a miss: the run may well send
the request later, and the answer may not depend on it).

Which recorded requests change state: of GOLEM, every method but those that only read, by
the plugin's naming (`reads_only`: ``ping``, ``list_methods``, ``viewport.capture``, and a
method whose last part starts ``get_`` or ``list_``; the method catalogue says what each
handler reads, not what it changes, so the names decide); of any other protocol, whose
methods golem-proxy cannot tell apart, every request. A request whose recorded answer says it
failed (an error, an error in its result, ``"success": false``: the profile's outcome) made no
change and is not waited for. An answer whose own method depends on no state (``ping``,
``list_methods``) is never warned of.

This runs on the replay server's request path, for every answer, on recordings of a million
exchanges: the requests that change state are sorted out of the trace only as far as the
answers served reach into it, once each; a note counts its answers and names only the first
`LISTED`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.messages import Role
from golem_core.outcome import OutcomeKind
from golem_core.profiles import Profile

from .recorded_exchanges import RecordedExchange
from .row_numbers import number_all, row_label

__all__ = [
    "Ahead",
    "GolemAnsweredAheadWarning",
    "StateOrder",
    "ahead_lines",
    "describe_ahead",
    "listed",
    "reads_only",
    "warn_ahead",
]

STATELESS_ANSWERS = ("ping", "list_methods")
"""Methods whose answers show no document state."""
_GOLEM_READS = frozenset({"ping", "list_methods", "viewport.capture"})
_READ_PREFIXES = ("get_", "list_")
SHOWN = 10
"""How many answered-ahead lines a text prints; it counts the rest."""
LISTED = 10
"""How many of the answers served ahead of one request a note names; it counts the rest."""
_NOTHING_CHANGED = frozenset(
    {OutcomeKind.ERROR, OutcomeKind.ERROR_IN_RESULT, OutcomeKind.UNSUCCESSFUL}
)
"""Outcomes of a request that made no change. A malformed answer is not among them: the
plugin may have made the change and then answered badly."""


def reads_only(profile: Profile, method: str) -> bool:
    """Whether a recorded request of ``method`` leaves the document as it was (see the
    module docstring)."""
    if profile.name != "golem":
        return method in profile.builtin_methods
    last = method.rsplit(".", 1)[-1]  # gh.ping as ping
    return method in _GOLEM_READS or last in STATELESS_ANSWERS or last.startswith(_READ_PREFIXES)


@dataclass
class Ahead:
    """The answers served while ``pending``, recorded before them and changing state, had not
    been sent: ``count`` of them, the first `LISTED` in ``served``."""

    pending: RecordedExchange
    served: list[RecordedExchange] = field(default_factory=list)
    count: int = 0
    _seen: set[int] = field(default_factory=set, repr=False)
    """The numbers of the exchanges counted: one served again (``--reuse``) counts once."""

    def add(self, exchange: RecordedExchange) -> None:
        """Count ``exchange`` as served ahead of `pending` (once, however often served)."""
        if exchange.number in self._seen:
            return
        self._seen.add(exchange.number)
        self.count += 1
        if len(self.served) < LISTED:
            self.served.append(exchange)

    def describe(self) -> str:
        """``answered #7 main scene.list_objects ahead of #5 main scene.create_box, …``."""
        return describe_ahead(self.to_json())

    def to_json(self) -> dict[str, Any]:
        """``answered`` names the first `LISTED` answers, ``answered_count`` counts them all."""
        return {
            "pending": listed(self.pending),
            "answered": [listed(e) for e in self.served],
            "answered_count": self.count,
        }


def describe_ahead(note: Mapping[str, Any]) -> str:
    """A note as `Ahead.to_json` writes it (a report's ``ahead``), in words."""
    answered = note["answered"]
    more = int(note.get("answered_count", len(answered))) - 1
    also = f" (and {more} more after it)" if more else ""
    whose = "their answers" if more else "its answer"
    return (
        f"answered {_where(answered[0])}{also} ahead of {_where(note['pending'])}, recorded "
        f"before it and not sent yet: {whose} may show state this run has not made"
    )


def _where(found: Mapping[str, Any]) -> str:
    return f"{row_label(found['number'], found.get('file'))} {found['route']} {found['method']}"


def listed(exchange: RecordedExchange) -> dict[str, Any]:
    """A recorded exchange as replay's report lists it: ``number`` is its row in its
    recording as `show` numbers it, and ``file`` names that recording where several were
    served as one."""
    found: dict[str, Any] = {
        "number": exchange.row,
        "route": exchange.route,
        "method": exchange.method,
    }
    if exchange.file is not None:
        found["file"] = exchange.file
    return found


class StateOrder:
    """Follows which recorded requests that change state were sent, and notes each answer
    served ahead of one not sent yet (`served`)."""

    def __init__(self, profile: Profile, exchanges: Sequence[RecordedExchange]) -> None:
        """``exchanges``: the trace's, in trace order (ascending numbers). Nothing is read
        of them yet: a replay of a million exchanges starts at once."""
        self._profile = profile
        self._exchanges = exchanges
        self._sorted = 0
        """How many of ``exchanges`` were sorted into `_changers`."""
        self._changers: dict[str, list[RecordedExchange]] = {}
        """The requests that change state, by route, in trace order, as far as sorted."""
        self._next: dict[str, int] = {}
        """By route, where in its `_changers` the first one maybe not sent is."""
        self._counted: dict[str, int] = {}
        """By route, the `_next` whose request was found to have changed state (its answer
        decoded once, not on every answer served ahead of it)."""
        self._reads: dict[str, bool] = {}
        """`reads_only` by method, asked once each."""
        self.ahead: dict[int, Ahead] = {}
        """By the pending request's number, in the order first found."""

    def served(self, exchange: RecordedExchange, used: set[int]) -> None:
        """``exchange`` was just served (``used``: every exchange served so far, it among
        them): note it when a request that changes state, recorded before it on its route,
        was not."""
        if (exchange.method or "").rsplit(".", 1)[-1] in STATELESS_ANSWERS:
            return
        self._sort_until(exchange.number)
        pending = self._pending(exchange.route, exchange.number, used)
        if pending is None:
            return
        found = self.ahead.get(pending.number)
        if found is None:
            found = self.ahead[pending.number] = Ahead(pending)
        found.add(exchange)

    def _sort_until(self, number: int) -> None:
        """Sort every exchange recorded before ``number`` into `_changers` (each once)."""
        exchanges, at = self._exchanges, self._sorted
        while at < len(exchanges) and exchanges[at].number < number:
            e = exchanges[at]
            at += 1
            method = e.method
            if e.request_type != "request" or not method:
                continue
            reads = self._reads.get(method)
            if reads is None:
                reads = self._reads[method] = reads_only(self._profile, method)
            if not reads:
                self._changers.setdefault(e.route, []).append(e)
        self._sorted = at

    def _pending(self, route: str, number: int, used: set[int]) -> Optional[RecordedExchange]:
        """The first request of ``route`` that changes state, recorded before ``number``
        and not sent; None when there is none. Each request is passed over once: one sent,
        or one that failed when recorded, is never looked at again."""
        changers = self._changers.get(route, [])
        at = self._next.get(route, 0)
        while at < len(changers) and changers[at].number < number:
            candidate = changers[at]
            if candidate.number not in used:
                if self._counted.get(route) == at:
                    return candidate
                if not self._failed(candidate):
                    self._counted[route] = at
                    self._next[route] = at
                    return candidate
            at += 1
        self._next[route] = at
        return None

    def _failed(self, exchange: RecordedExchange) -> bool:
        """Whether ``exchange``'s recorded answer says it failed: it changed nothing."""
        if exchange.too_large(response=True):
            return False  # not parsed (a reader's budget): a failure is a small answer
        request = None
        if not exchange.too_large(response=False):
            request = self._profile.parse(exchange.request, Role.REQUEST)
        response = self._profile.parse(exchange.response, Role.RESPONSE)
        return self._profile.outcome(request, response).kind in _NOTHING_CHANGED

    def notes(self) -> list[dict[str, Any]]:
        """Every answer served ahead, by the request it went ahead of, as a report lists
        them (`Ahead.to_json`; their recordings' rows read first)."""
        found = list(self.ahead.values())
        number_all([note.pending for note in found] + [e for note in found for e in note.served])
        return [note.to_json() for note in found]


class GolemAnsweredAheadWarning(UserWarning):
    """A replay answered a request ahead of one recorded before it that changes state, not
    sent yet: the answer may show state the test has not made (`StateOrder`)."""


def warn_ahead(order: StateOrder, trace: str) -> None:
    """One warning for a test whose replay answered ahead of recorded order, if it did."""
    notes = order.notes()
    if notes:
        lines = "\n".join(f"  {line}" for line in ahead_lines(notes))
        warnings.warn(GolemAnsweredAheadWarning(f"golem replay of {trace}:\n{lines}"), stacklevel=2)


def ahead_lines(notes: Sequence[Mapping[str, Any]], *, shown: int = SHOWN) -> list[str]:
    """The notes (as `Ahead.to_json` writes them) as text, at most ``shown`` of them and a
    count of the rest."""
    kept = notes[:shown]
    lines = [describe_ahead(note) for note in kept]
    if len(notes) > len(kept):
        lines.append(f"… and {len(notes) - len(kept)} more recorded requests answered ahead of")
    return lines
