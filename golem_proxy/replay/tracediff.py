"""Semantic diff of two traces: exchanges aligned per route by order and method, then requests
and responses compared GUID-aware (B's GUIDs learned against A's as they appear) under the same
tolerances as `verify`."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Optional

from ..recording.format import RecordingError
from .diffing import Comparator, Difference, envelope_body
from .index import ExchangeTrace, RecordedExchange

__all__ = ["DamagedTrace", "ExchangeDiff", "TraceDiff", "diff_traces"]


class DamagedTrace(Exception):
    """A payload of one of the two traces was refused once decoded (the file changed after it
    was loaded): ``side`` says which (0 for A, 1 for B), ``error`` what the reader says."""

    def __init__(self, side: int, error: RecordingError) -> None:
        super().__init__(str(error))
        self.side = side
        self.error = error


@dataclass
class ExchangeDiff:
    """One aligned pair (``a``/``b`` None for an exchange only one trace has)."""

    route: str
    a: Optional[RecordedExchange]
    b: Optional[RecordedExchange]
    differences: list[Difference] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.a is None:
            return "only-b"
        if self.b is None:
            return "only-a"
        return "changed" if self.differences else "same"

    @property
    def method(self) -> Optional[str]:
        side = self.a if self.a is not None else self.b
        return side.method if side is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "method": self.method,
            "status": self.status,
            "a": self.a.number if self.a is not None else None,
            "b": self.b.number if self.b is not None else None,
            "differences": [d.to_json() for d in self.differences],
        }


@dataclass
class TraceDiff:
    pairs: list[ExchangeDiff]

    @property
    def equal(self) -> bool:
        return all(pair.status == "same" for pair in self.pairs)

    @property
    def different(self) -> list[ExchangeDiff]:
        return [pair for pair in self.pairs if pair.status != "same"]

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for pair in self.pairs:
            counts[pair.status] = counts.get(pair.status, 0) + 1
        return {
            "equal": self.equal,
            "counts": counts,
            "exchanges": [pair.to_json() for pair in self.different],
        }


def diff_traces(a: ExchangeTrace, b: ExchangeTrace, comparator: Comparator) -> TraceDiff:
    """Align and compare. ``comparator`` treats A as recorded and B as live. Raises
    DamagedTrace saying which trace, its file and the line of a payload that is damaged."""
    pairs: list[ExchangeDiff] = []
    for route in _routes(a, b):
        left = [e for e in a.exchanges if e.route == route]
        right = [e for e in b.exchanges if e.route == route]
        matcher = difflib.SequenceMatcher(
            None, [e.method for e in left], [e.method for e in right], autojunk=False
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for x, y in zip(left[i1:i2], right[j1:j2]):
                    pairs.append(ExchangeDiff(route, x, y, _compare(a, x, b, y, comparator)))
                continue
            pairs.extend(ExchangeDiff(route, x, None) for x in left[i1:i2])
            pairs.extend(ExchangeDiff(route, None, y) for y in right[j1:j2])
    return TraceDiff(pairs)


def _routes(a: ExchangeTrace, b: ExchangeTrace) -> list[str]:
    names = a.routes
    return names + [name for name in b.routes if name not in names]


def _compare(
    a: ExchangeTrace,
    x: RecordedExchange,
    b: ExchangeTrace,
    y: RecordedExchange,
    comparator: Comparator,
) -> list[Difference]:
    request = comparator.compare(
        {"params": _params(_decoded(a, 0, x, response=False))},
        {"params": _params(_decoded(b, 1, y, response=False))},
        x.method,
    )
    response = comparator.compare(
        envelope_body(_decoded(a, 0, x, response=True)),
        envelope_body(_decoded(b, 1, y, response=True)),
        x.method,
    )
    return request + response


def _decoded(trace: ExchangeTrace, side: int, exchange: RecordedExchange, *, response: bool) -> Any:
    """The request or response of ``exchange`` decoded (its parse budget checked first, as
    the reader does), or its text when it was recorded as it came, not JSON. Raises
    DamagedTrace naming ``side`` (0: A, 1: B)."""
    try:
        return exchange.response_obj() if response else exchange.request_obj()
    except RecordingError as exc:
        raise DamagedTrace(side, exc.at(trace.path) if trace.path is not None else exc) from None
    except ValueError:
        payload = exchange.response if response else exchange.request
        return payload.decode("utf-8", "replace")


def _params(request: Any) -> Any:
    return request.get("params") if isinstance(request, dict) else request
