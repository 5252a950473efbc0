"""A short end-of-session summary: exchanges, errors, violations, per-method latency."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .flows import FlowTracker
from .log import format_latency
from .recording import Recording

__all__ = ["print_summary"]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * (len(ordered) - 1))))
    return ordered[rank]


def print_summary(console: Console, recording: Recording) -> None:
    """Print per-method counts, errors and latencies of a recording."""
    tracker = FlowTracker(recording.profile)
    for event in recording.events:
        tracker.apply(event)
    flows = tracker.flows
    by_method: dict[str, list[float]] = {}
    calls: dict[str, int] = {}
    errors: dict[str, int] = {}
    for flow in flows:
        method = flow.method or flow.status(recording.profile)
        calls[method] = calls.get(method, 0) + 1
        latencies = by_method.setdefault(method, [])
        if flow.latency is not None:
            latencies.append(flow.latency)
        if flow.is_error:
            errors[method] = errors.get(method, 0) + 1
    table = Table(title=f"{len(flows)} exchanges on {len(tracker.connections)} connections")
    for column in ("method", "calls", "errors", "p50", "max"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for method in sorted(by_method):
        latencies = by_method[method]
        failed = errors.get(method, 0)
        table.add_row(
            method,
            str(calls[method]),
            f"[red]{failed}[/]" if failed else "0",
            format_latency(_percentile(latencies, 0.5)) if latencies else "-",
            format_latency(max(latencies)) if latencies else "-",
        )
    console.print(table)
    violations = sum(len(flow.violations) for flow in flows)
    console.print(
        f"errors: {sum(errors.values())}   contract violations: {violations}   "
        f"connections: {len(tracker.connections)}"
    )
