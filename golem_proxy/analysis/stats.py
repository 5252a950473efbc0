"""Per-method statistics over flows: counts, errors, latency percentiles, per route.

Pure functions over `Flow` rows (from `FlowTracker`), shared by ``golem-proxy stats`` and the
TUI. Percentiles use the **nearest-rank** method: the p-th percentile of n sorted latencies is
the value at rank ``ceil(p / 100 * n)`` (1-based), so it is always a latency that was actually
measured, and p100 is the maximum. Only flows with both a request and a response have a
latency; pending, evicted, unanswered and framing-error rows count but add no latency.

A row the proxy itself acted on (``--fault``, ``--intercept``, `Flow.faults`) is counted
apart (``by_proxy``), in the count: never in the latencies, which are the peers'. When what it
did made or changed the row's answer (an answer it made, withheld, cut or corrupted, a request
it changed: `changes_answer`, ``answers_by_proxy``), the row is in neither the errors nor the
error rate; when it only held a frame (a delay, a slice, an interception accepted as it came),
the answer is the receiver's, and its error counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.messages import Malformed

from .flows import Flow
from .proxy_notes import acted, changes_answer
from .trace import json_ms

__all__ = [
    "ALL_METHODS",
    "ALL_ROUTES",
    "LatencySummary",
    "MethodStats",
    "Stats",
    "StatsBuilder",
    "compute_stats",
    "method_label",
    "percentile",
    "summarize_latencies",
]

ALL_ROUTES = "*"
ALL_METHODS = "*"
"""The ``route`` / ``method`` of the rows that total several routes or methods."""


def percentile(ordered: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (0 < p <= 100) of ascending ``ordered``.

    Raises ValueError for an empty sequence or a ``p`` outside (0, 100]."""
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} is outside (0, 100]")
    rank = math.ceil(p / 100 * len(ordered))
    return ordered[max(rank, 1) - 1]


@dataclass(frozen=True)
class LatencySummary:
    """Latencies in seconds; all None when nothing was measured."""

    count: int = 0
    p50: Optional[float] = None
    p90: Optional[float] = None
    p99: Optional[float] = None
    max: Optional[float] = None

    def to_json(self) -> dict[str, Any]:
        return {
            "measured": self.count,
            "p50_ms": json_ms(self.p50),
            "p90_ms": json_ms(self.p90),
            "p99_ms": json_ms(self.p99),
            "max_ms": json_ms(self.max),
        }


def summarize_latencies(latencies: Iterable[float]) -> LatencySummary:
    """Nearest-rank p50/p90/p99 and the maximum of ``latencies`` (seconds)."""
    ordered = sorted(latencies)
    if not ordered:
        return LatencySummary()
    return LatencySummary(
        len(ordered),
        percentile(ordered, 50),
        percentile(ordered, 90),
        percentile(ordered, 99),
        ordered[-1],
    )


@dataclass(frozen=True)
class MethodStats:
    """One row: the flows of one method on one route (or a total, see `ALL_ROUTES`)."""

    route: str
    method: str
    count: int
    errors: int
    pending: int
    with_violations: int
    latency: LatencySummary
    evicted: int = 0
    """Requests let go before their answer (`Flow.let_go`): neither pending nor unanswered."""
    late: int = 0
    """GOLEM answers that came after their tool call returned (`FrameSeen.late`)."""
    not_own: int = 0
    """Tool calls whose result is another GOLEM exchange's answer (`FrameSeen.answer_of`)."""
    by_proxy: int = 0
    """Flows the proxy itself acted on (`Flow.faults`): in ``count``, not in ``latency``."""
    answers_by_proxy: int = 0
    """Of ``by_proxy``, the flows whose answer the proxy made or changed (`changes_answer`):
    not in ``errors`` nor the error rate."""

    @property
    def error_rate(self) -> float:
        """Errors per flow whose answer is its receiver's, 0.0 for none."""
        peers = self.count - self.answers_by_proxy
        return self.errors / peers if peers else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "method": self.method,
            "count": self.count,
            "errors": self.errors,
            "error_rate": round(self.error_rate, 6),
            "pending": self.pending,
            "evicted": self.evicted,
            "with_violations": self.with_violations,
            "late": self.late,
            "not_own": self.not_own,
            "by_proxy": self.by_proxy,
            "answers_by_proxy": self.answers_by_proxy,
            "latency": self.latency.to_json(),
        }


@dataclass(frozen=True)
class Stats:
    """Rows per (route, method), sorted; per-route totals; and the overall row."""

    rows: tuple[MethodStats, ...]
    routes: tuple[MethodStats, ...]
    overall: MethodStats

    def to_json(self) -> dict[str, Any]:
        return {
            "percentiles": "nearest-rank",
            "methods": [row.to_json() for row in self.rows],
            "routes": [row.to_json() for row in self.routes],
            "overall": self.overall.to_json(),
        }


def method_label(flow: Flow) -> str:
    """What a row is grouped under: the method, or a ``<…>`` stand-in for rows without one."""
    if flow.method is not None:
        return flow.method
    if flow.frame_error is not None:
        return "<frame-error>"
    if flow.gap is not None:  # its status says which (unobserved:REASON); no orphan
        return "<gap>"
    if flow.connection_failed is not None:
        return "<connection>"
    if flow.closed_by_proxy is not None:  # its row, by what it was: not a failure
        return "<closed by proxy>"
    if flow.request is None:
        return "<orphan>" if flow.orphan else "<unpaired>"
    if isinstance(flow.request.message, Malformed):
        return "<malformed>"
    return "<unknown>"


class _Tally:
    """The counts of one row, and its latencies (all kept: percentiles are exact)."""

    __slots__ = (
        "answers_by_proxy",
        "by_proxy",
        "count",
        "errors",
        "evicted",
        "late",
        "latencies",
        "not_own",
        "pending",
        "with_violations",
    )

    def __init__(self) -> None:
        self.count = self.errors = self.pending = self.with_violations = self.evicted = 0
        self.late = self.not_own = self.by_proxy = self.answers_by_proxy = 0
        self.latencies: list[float] = []

    def add(self, flow: Flow) -> None:
        self.count += 1
        # A delay or a hold is in no latency of the peers'; the answer stays the receiver's,
        # its error too. An answer the proxy made or changed is no peer's error.
        by_proxy = any(acted(step) for step in flow.faults)
        answered = any(changes_answer(step) for step in flow.faults)
        self.by_proxy += by_proxy
        self.answers_by_proxy += answered
        self.errors += flow.is_error and not answered
        self.pending += flow.pending
        self.evicted += flow.let_go
        self.with_violations += flow.has_violation
        response = flow.response
        if response is not None:  # marked as the frames were decoded: read, not derived
            self.late += response.late
            self.not_own += response.answer_of is not None
        latency = flow.latency
        if latency is not None and not by_proxy:
            self.latencies.append(latency)

    def row(self, route: str, method: str) -> MethodStats:
        return MethodStats(
            route,
            method,
            self.count,
            self.errors,
            self.pending,
            self.with_violations,
            summarize_latencies(self.latencies),
            self.evicted,
            self.late,
            self.not_own,
            self.by_proxy,
            self.answers_by_proxy,
        )


class StatsBuilder:
    """`compute_stats` one flow at a time, for a reader that streams: what it keeps per flow
    is its latency, not the flow."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], _Tally] = {}
        self._routes: dict[str, _Tally] = {}
        self._overall = _Tally()

    def add(self, flow: Flow) -> None:
        key = (flow.route, method_label(flow))
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Tally()
        group.add(flow)
        route = self._routes.get(flow.route)
        if route is None:
            route = self._routes[flow.route] = _Tally()
        route.add(flow)
        self._overall.add(flow)

    def stats(self) -> Stats:
        groups, routes = self._groups, self._routes
        return Stats(
            tuple(groups[key].row(*key) for key in sorted(groups)),
            tuple(routes[name].row(name, ALL_METHODS) for name in sorted(routes)),
            self._overall.row(ALL_ROUTES, ALL_METHODS),
        )


def compute_stats(flows: Iterable[Flow]) -> Stats:
    """Statistics of ``flows``: one row per route and method, per-route totals, overall."""
    builder = StatsBuilder()
    for flow in flows:
        builder.add(flow)
    return builder.stats()
