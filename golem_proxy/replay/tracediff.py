"""Semantic diff of two traces: exchanges aligned per route by order and method, then requests
and responses compared GUID-aware (B's GUIDs learned against A's as they appear) under the same
tolerances as `verify`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..analysis.request_rows import RequestRows
from ..recording.format import RecordingError
from .alignment import QUICK_PAIRS, WINDOW, Windowed, align
from .diffing import Comparator, Difference, envelope_body
from .index import ExchangeTrace, RecordedExchange
from .large_payloads import compare_as_bytes

__all__ = ["DamagedTrace", "ExchangeDiff", "TraceDiff", "WindowedRoute", "diff_traces"]


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
            "a": self.a.row if self.a is not None else None,
            "b": self.b.row if self.b is not None else None,
            "differences": [d.to_json() for d in self.differences],
        }


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

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for pair in self.pairs:
            counts[pair.status] = counts.get(pair.status, 0) + 1
        report: dict[str, Any] = {
            "equal": self.equal,
            "counts": counts,
            "exchanges": [pair.to_json() for pair in self.different],
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
    what reading each trace as `show` does found (`read_request_rows`), which numbers the
    exchanges as `show` does without reading the files again. ``quick_pairs`` and ``window``
    bound the alignment's time (`alignment.align`). Raises DamagedTrace saying which trace,
    its file and the line of a payload that is damaged."""
    for trace, found in zip((a, b), requests or ()):
        if trace.numbering is not None:
            trace.numbering.rows(found)
    diff = TraceDiff([])
    left_routes, right_routes = _by_route(a), _by_route(b)
    for route in _routes(a, b):
        left, right = left_routes.get(route, []), right_routes.get(route, [])
        alignment = align(
            [e.method for e in left],
            [e.method for e in right],
            quick_pairs=quick_pairs,
            window=window,
        )
        if alignment.windowed is not None:
            diff.windowed.append(WindowedRoute(route, alignment.windowed))
        i = j = 0
        for i_start, j_start, size in [*alignment.blocks, (len(left), len(right), 0)]:
            diff.pairs.extend(ExchangeDiff(route, x, None) for x in left[i:i_start])
            diff.pairs.extend(ExchangeDiff(route, None, y) for y in right[j:j_start])
            for x, y in zip(left[i_start : i_start + size], right[j_start : j_start + size]):
                diff.pairs.append(ExchangeDiff(route, x, y, _compare(a, x, b, y, comparator)))
            i, j = i_start + size, j_start + size
    return diff


def _by_route(trace: ExchangeTrace) -> dict[str, list[RecordedExchange]]:
    routes: dict[str, list[RecordedExchange]] = {}
    for exchange in trace.exchanges:
        routes.setdefault(exchange.route, []).append(exchange)
    return routes


def _routes(a: ExchangeTrace, b: ExchangeTrace) -> list[str]:
    return list(dict.fromkeys([*a.routes, *b.routes]))


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
