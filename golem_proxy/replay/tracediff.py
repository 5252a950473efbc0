"""Semantic diff of two traces: requests aligned per route by order and method, then the
requests and responses of those both traces answered compared GUID-aware (B's GUIDs learned
against A's as they appear) under the same tolerances as `verify`. With what reading each
trace as `show` does found (`RequestRows`), the requests are every request the client sent,
numbered as `show` numbers them: one never answered is paired too (answered in one trace and
not in the other is a difference), and a request only one trace has, where the other has a
gap in what was observed, is said to be in that gap rather than missing."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ..analysis.request_rows import RequestGap, RequestRows, UnansweredRequest
from ..recording.format import RecordingError
from .alignment import QUICK_PAIRS, WINDOW, Windowed, align
from .diffing import Comparator, Difference, envelope_body
from .index import ExchangeTrace, RecordedExchange
from .large_payloads import compare_as_bytes

__all__ = ["Acted", "DamagedTrace", "ExchangeDiff", "TraceDiff", "WindowedRoute", "diff_traces"]

Side = Union[RecordedExchange, UnansweredRequest]
"""A request of one trace: answered (an exchange), or not."""
Acted = tuple[Mapping[int, Sequence[str]], Mapping[int, Sequence[str]]]
"""The rows of traces A and B the proxy itself acted on, each with the names of its steps
(`RequestRows.acted`)."""
_Item = Union[RecordedExchange, UnansweredRequest, RequestGap]


class DamagedTrace(Exception):
    """A payload of one of the two traces was refused once decoded (the file changed after it
    was loaded): ``side`` says which (0 for A, 1 for B), ``error`` what the reader says."""

    def __init__(self, side: int, error: RecordingError) -> None:
        super().__init__(str(error))
        self.side = side
        self.error = error


def _answer(side: Side) -> str:
    """``answered``, ``unanswered``, or ``unobserved`` (an answer may have come unseen)."""
    if isinstance(side, RecordedExchange):
        return "answered"
    return "unobserved" if side.unobserved else "unanswered"


@dataclass
class ExchangeDiff:
    """One aligned pair of requests (``a``/``b`` None for a request only one trace has)."""

    route: str
    a: Optional[Side]
    b: Optional[Side]
    differences: list[Difference] = field(default_factory=list)
    a_gap: Optional[RequestGap] = None
    """Where A has no such request: A's gap in what was observed there, where it may have
    crossed unseen."""
    b_gap: Optional[RequestGap] = None
    """The same for B."""

    @property
    def status(self) -> str:
        """``same``, ``changed``; ``only-a``/``only-b``; ``unanswered-a``/``-b`` (answered in
        the other trace only); ``unobserved-a``/``-b`` (the request, or its answer, may have
        crossed in a gap of that trace's)."""
        a, b = self.a, self.b
        if a is None:
            return "unobserved-a" if self.a_gap is not None else "only-b"
        if b is None:
            return "unobserved-b" if self.b_gap is not None else "only-a"
        a_answer, b_answer = _answer(a), _answer(b)
        if a_answer == b_answer:
            return "changed" if self.differences else "same"
        for answer in ("unobserved", "unanswered"):
            if a_answer == answer:
                return f"{answer}-a"
            if b_answer == answer:
                return f"{answer}-b"
        raise AssertionError(f"no status for {a_answer} and {b_answer}")

    @property
    def method(self) -> Optional[str]:
        side = self.a if self.a is not None else self.b
        return side.method if side is not None else None

    def gap_of(self, index: int) -> Optional[RequestGap]:
        """The gap of trace A (``index`` 0) or B (1) the pair's request there may be in, or
        the answer to it."""
        side, gap = (self.a, self.a_gap) if index == 0 else (self.b, self.b_gap)
        return side.gap if isinstance(side, UnansweredRequest) else gap

    def to_json(self, acted: Acted = ({}, {})) -> dict[str, Any]:
        """The pair as ``diff --json`` prints it; ``acted``: the rows the proxy acted on,
        whose steps a side's ``a_proxy``/``b_proxy`` names (its difference is the proxy's)."""
        data: dict[str, Any] = {
            "route": self.route,
            "method": self.method,
            "status": self.status,
            "a": self.a.row if self.a is not None else None,
            "b": self.b.row if self.b is not None else None,
            "differences": [d.to_json() for d in self.differences],
        }
        # Optional: present only where a side has no answer, a gap bears on it, or the proxy
        # acted on it.
        for index, (name, side) in enumerate((("a", self.a), ("b", self.b))):
            if isinstance(side, UnansweredRequest):
                data[f"{name}_status"] = side.status
            gap = self.gap_of(index)
            if gap is not None:
                data[f"{name}_gap"] = gap.number
            row = side.row if side is not None else None
            steps = acted[index].get(row) if row is not None else None
            if steps:
                data[f"{name}_proxy"] = list(steps)
        return data


@dataclass(frozen=True)
class WindowedRoute:
    """A route whose exchanges were aligned in windows (see `alignment`): an exchange moved
    further than a window on it shows as removed and added."""

    route: str
    windowed: Windowed

    def sentence(self) -> str:
        return (
            f"aligned in windows of {self.windowed.window:,} exchanges on route {self.route} "
            f"(the traces differ over {self.windowed.a_span:,} exchanges of A and "
            f"{self.windowed.b_span:,} of B): an exchange moved further than that shows as "
            "removed and added"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "window": self.windowed.window,
            "a_exchanges": self.windowed.a_span,
            "b_exchanges": self.windowed.b_span,
        }


@dataclass
class TraceDiff:
    pairs: list[ExchangeDiff]
    windowed: list[WindowedRoute] = field(default_factory=list)
    """The routes aligned in windows; empty when every route was aligned whole."""

    @property
    def equal(self) -> bool:
        return all(pair.status == "same" for pair in self.pairs)

    @property
    def different(self) -> list[ExchangeDiff]:
        return [pair for pair in self.pairs if pair.status != "same"]

    def to_json(self, acted: Acted = ({}, {})) -> dict[str, Any]:
        """The diff as ``diff --json`` prints it (``acted``: see `ExchangeDiff.to_json`)."""
        counts: dict[str, int] = {}
        for pair in self.pairs:
            counts[pair.status] = counts.get(pair.status, 0) + 1
        report: dict[str, Any] = {
            "equal": self.equal,
            "counts": counts,
            "exchanges": [pair.to_json(acted) for pair in self.different],
        }
        if self.windowed:  # optional: present only when a route was aligned in windows
            report["windowed"] = [route.to_json() for route in self.windowed]
        return report


def diff_traces(
    a: ExchangeTrace,
    b: ExchangeTrace,
    comparator: Comparator,
    *,
    requests: Optional[tuple[RequestRows, RequestRows]] = None,
    quick_pairs: int = QUICK_PAIRS,
    window: int = WINDOW,
) -> TraceDiff:
    """Align and compare. ``comparator`` treats A as recorded and B as live; ``requests`` is
    what reading each trace as `show` does found (`read_request_rows`): with it, requests
    never answered and gaps take part, in `show`'s row order; without, the exchanges alone,
    in the order they completed. ``quick_pairs`` and ``window`` bound the alignment's time
    (`alignment.align`). Raises DamagedTrace saying which trace, its file and the line of a
    payload that is damaged."""
    diff = TraceDiff([])
    found = requests or (None, None)
    names = [*a.routes, *b.routes]
    for rows in found:
        names += [request.route for request in rows.unanswered] if rows is not None else []
    names = list(dict.fromkeys(names))
    left_routes, right_routes = _by_route(a, found[0], names), _by_route(b, found[1], names)
    for route in names:
        left, right = left_routes.get(route, []), right_routes.get(route, [])
        alignment = align(
            [_key(item) for item in left],
            [_key(item) for item in right],
            quick_pairs=quick_pairs,
            window=window,
        )
        if alignment.windowed is not None:
            diff.windowed.append(WindowedRoute(route, alignment.windowed))
        i = j = 0
        for i_start, j_start, size in [*alignment.blocks, (len(left), len(right), 0)]:
            a_only, b_only = left[i:i_start], right[j:j_start]
            a_gap, b_gap = _first_gap(a_only), _first_gap(b_only)
            diff.pairs.extend(ExchangeDiff(route, x, None, b_gap=b_gap) for x in _sides(a_only))
            diff.pairs.extend(ExchangeDiff(route, None, y, a_gap=a_gap) for y in _sides(b_only))
            for x, y in zip(left[i_start : i_start + size], right[j_start : j_start + size]):
                assert not isinstance(x, RequestGap) and not isinstance(y, RequestGap)
                differences = []
                if isinstance(x, RecordedExchange) and isinstance(y, RecordedExchange):
                    differences = _compare(a, x, b, y, comparator)
                diff.pairs.append(ExchangeDiff(route, x, y, differences))
            i, j = i_start + size, j_start + size
    return diff


def _key(item: _Item) -> Hashable:
    """What aligns a request: its method. A gap is alike nothing (a fresh object)."""
    return object() if isinstance(item, RequestGap) else item.method


def _sides(items: list[_Item]) -> list[Side]:
    return [item for item in items if not isinstance(item, RequestGap)]


def _first_gap(items: list[_Item]) -> Optional[RequestGap]:
    return next((item for item in items if isinstance(item, RequestGap)), None)


def _by_route(
    trace: ExchangeTrace, found: Optional[RequestRows], names: list[str]
) -> dict[str, list[_Item]]:
    """Each route's requests: with ``found``, the exchanges (numbered as `show` numbers them),
    the requests never answered and the gaps a request may be in (a session's gap on every
    route of ``names``), in row order; without, the exchanges in the order they completed."""
    items: list[tuple[int, int, _Item]] = []
    if found is not None and trace.numbering is not None:
        trace.numbering.rows(found)
        row = 0
        for exchange in trace.exchanges:
            # One whose row cannot be told stays after the exchange before it.
            row = exchange.row or row
            items.append((row, len(items), exchange))
        items += [(request.number, len(items), request) for request in found.unanswered]
        items += [(gap.number, len(items), gap) for gap in found.gaps if gap.may_hide_requests]
        items.sort(key=lambda entry: entry[:2])
    else:
        items = [(0, 0, exchange) for exchange in trace.exchanges]
    routes: dict[str, list[_Item]] = {name: [] for name in names}
    for _, _, item in items:
        if isinstance(item, RequestGap) and item.of_session:
            for kept in routes.values():
                kept.append(item)
        else:
            routes.setdefault(item.route, []).append(item)
    return routes


def _compare(
    a: ExchangeTrace,
    x: RecordedExchange,
    b: ExchangeTrace,
    y: RecordedExchange,
    comparator: Comparator,
) -> list[Difference]:
    if x.too_large(response=False) or y.too_large(response=False):
        request = compare_as_bytes(x.request, y.request, comparator, "request")
    else:
        request = comparator.compare(
            {"params": _params(_decoded(a, 0, x, response=False))},
            {"params": _params(_decoded(b, 1, y, response=False))},
            x.method,
        )
    if x.too_large(response=True) or y.too_large(response=True):
        response = compare_as_bytes(x.response, y.response, comparator)
    else:
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
