"""The statistics screen's table within the width it is given: the number columns least needed
give way first, so that no row is ever drawn without its method."""

from __future__ import annotations

from rich.console import Console

from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.analysis.stats import compute_stats
from golem_proxy.tui.screens.stats import stats_table
from tests.support.sessions import demo_session


def drawn(width: int) -> list[str]:
    tracker = FlowTracker(GOLEM)
    for event in demo_session():
        tracker.apply(event)
    console = Console(width=width, record=True, color_system=None)
    console.print(stats_table(compute_stats(tracker.flows), width))
    return console.export_text().splitlines()


def test_a_narrow_screen_keeps_the_method_and_drops_latency_columns() -> None:
    narrow = drawn(40)
    assert narrow[0].split()[:2] == ["route", "method"]
    assert "p90" not in narrow[0] and "p50" in narrow[0]
    assert any(line.split()[1].startswith("scene.get_doc") for line in narrow[1:])
    assert all(len(line) <= 40 for line in narrow)
    wide = drawn(120)
    assert wide[0].split() == [
        "route", "method", "count", "errors", "err%", "p50", "p90", "p99", "max"
    ]  # fmt: skip
