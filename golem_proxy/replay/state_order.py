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
methods golem-proxy cannot tell apart, every request. An answer whose own method depends on no
state (``ping``, ``list_methods``) is never warned of.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    been sent."""

    pending: RecordedExchange
    served: list[RecordedExchange] = field(default_factory=list)

    def describe(self) -> str:
        """``answered #7 main scene.list_objects ahead of #5 main scene.create_box, …``."""
        return describe_ahead(self.to_json())

    def to_json(self) -> dict[str, Any]:
        return {"pending": listed(self.pending), "answered": [listed(e) for e in self.served]}


def describe_ahead(note: Mapping[str, Any]) -> str:
    """A note as `Ahead.to_json` writes it (a report's ``ahead``), in words."""
    answered = note["answered"]
    more = len(answered) - 1
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

    def __init__(self, profile: Profile, exchanges: Iterable[RecordedExchange]) -> None:
        self._changers: dict[str, list[RecordedExchange]] = {}
        for e in exchanges:
            if e.request_type == "request" and e.method and not reads_only(profile, e.method):
                self._changers.setdefault(e.route, []).append(e)
        self._next = dict.fromkeys(self._changers, 0)
        self.ahead: dict[int, Ahead] = {}
        """By the pending request's number, in the order first found."""

    def served(self, exchange: RecordedExchange, used: set[int]) -> None:
        """``exchange`` was just served (``used``: every exchange served so far, it among
        them): note it when a request that changes state, recorded before it on its route,
        was not."""
        if (exchange.method or "").rsplit(".", 1)[-1] in STATELESS_ANSWERS:
            return
        changers = self._changers.get(exchange.route, [])
        at = self._next.get(exchange.route, 0)
        while at < len(changers) and changers[at].number in used:
            at += 1
        self._next[exchange.route] = at
        if at == len(changers) or changers[at].number >= exchange.number:
            return
        pending = changers[at]
        found = self.ahead.get(pending.number)
        if found is None:
            found = self.ahead[pending.number] = Ahead(pending)
        if exchange not in found.served:
            found.served.append(exchange)

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
