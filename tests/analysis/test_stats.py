"""Per-method statistics: nearest-rank percentiles, grouping, and the ``stats`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import Flow, FlowTracker
from golem_proxy.analysis.stats import (
    ALL_METHODS,
    ALL_ROUTES,
    compute_stats,
    method_label,
    percentile,
    summarize_latencies,
)
from golem_proxy.events import Direction, GapReason, ObservationLost
from golem_proxy.tui.render import flow_label
from tests.support.cli_helpers import run_cli, run_main
from tests.support.trace_builder import golem_session, write_recording


def session_flows() -> list[Flow]:
    tracker = FlowTracker(GOLEM)
    for event in golem_session().events:
        tracker.apply(event)
    return tracker.flows


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 11)]  # 1..10
    assert percentile(values, 50) == 5.0
    assert percentile(values, 90) == 9.0
    assert percentile(values, 99) == 10.0
    assert percentile(values, 100) == 10.0
    assert percentile(values, 1) == 1.0
    assert percentile([7.0], 50) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile(values, 0)


@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=50))
def test_percentiles_are_measured_values_in_order(values: list[float]) -> None:
    summary = summarize_latencies(values)
    assert summary.count == len(values)
    assert summary.p50 in values and summary.p90 in values and summary.p99 in values
    assert summary.p50 <= summary.p90 <= summary.p99 <= summary.max == max(values)  # type: ignore[operator]


def test_rows_per_route_and_method() -> None:
    stats = compute_stats(session_flows())
    rows = {(row.route, row.method): row for row in stats.rows}
    ping = rows[("main", "ping")]
    assert (ping.count, ping.errors, ping.pending) == (2, 0, 0)
    assert ping.latency.p50 == pytest.approx(0.003) and ping.latency.max == pytest.approx(0.004)
    hexagon = rows[("main", "creation.create_hexagon")]
    assert hexagon.errors == 1 and hexagon.error_rate == 1.0
    assert rows[("main", "scene.list_layers")].pending == 1
    assert rows[("gh", "<frame-error>")].count == 2
    assert rows[("main", "<orphan>")].with_violations == 1
    assert rows[("main", "<malformed>")].errors == 1
    assert list(stats.rows) == sorted(stats.rows, key=lambda r: (r.route, r.method))
    routes = {row.route: row for row in stats.routes}
    assert routes["gh"].count == 4 and routes["main"].count == 10
    assert all(row.method == ALL_METHODS for row in stats.routes)
    overall = stats.overall
    assert (overall.route, overall.count, overall.errors, overall.pending) == (ALL_ROUTES, 14, 8, 1)
    # Latencies measured: 4, 120, 2, 30, 1, 3, 50 ms (main) and 200 ms (gh).
    assert overall.latency.count == 8
    assert overall.latency.p50 == pytest.approx(0.004)
    assert overall.latency.max == pytest.approx(0.2)


def test_no_flows() -> None:
    stats = compute_stats([])
    assert stats.rows == () and stats.overall.count == 0 and stats.overall.error_rate == 0.0
    assert stats.overall.latency.p50 is None


def test_stats_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(write_recording(golem_session().events))
    result = run_cli("stats", str(path))
    assert result.returncode == 0, result.stderr
    for text in ("creation.create_box", "grasshopper.get_canvas_info", "nearest rank", "57.1"):
        assert text in result.stdout
    code, out, _ = run_main(capsys, "stats", str(path), "--json")
    data = json.loads(out)
    assert code == 0 and data["percentiles"] == "nearest-rank"
    assert data["overall"]["count"] == 14 and data["overall"]["errors"] == 8
    assert data["overall"]["latency"]["max_ms"] == 200.0
    code, out, _ = run_main(capsys, "stats", str(path), "--json", "--filter", "~route gh")
    assert json.loads(out)["overall"]["count"] == 4
    code, _, err = run_main(capsys, "stats", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("reason", list(GapReason))
def test_a_gap_is_grouped_as_a_gap_never_as_an_orphan(reason: GapReason) -> None:
    tracker = FlowTracker(GOLEM)
    tracker.apply(
        ObservationLost(
            conn=1, route="main", direction=Direction.S2C, t=1.0, reason=reason, size=10
        )
    )
    (flow,) = tracker.flows
    assert method_label(flow) == "<gap>"
    assert flow_label(flow) == "(gap)"
    assert flow.status(GOLEM) == f"unobserved:{reason.value}"
