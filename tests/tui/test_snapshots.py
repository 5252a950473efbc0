"""Snapshots of the main screens over the fixed demo session (update with
``pytest tests/tui/test_snapshots.py --snapshot-update`` after checking the new pictures)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Callable

from textual.pilot import Pilot

from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.sources import RecordingSource

from .helpers import loaded, select, wait_for

SIZE = (150, 42)
SMALL = (80, 24)
"""The smallest terminal the TUI is made for: every column header and screen edge fits."""


def make_app(path: str) -> GolemProxyApp:
    source = RecordingSource.open(path)
    # The source description is the path, which differs per run: show a fixed name.
    source.description = "demo.jsonl"
    return GolemProxyApp(source, source.profile, "golem-proxy — demo.jsonl", header=source.header)


def then(*keys: str, position: int | None = None) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await loaded(pilot)
        app = pilot.app
        assert isinstance(app, GolemProxyApp)
        if position is not None:
            await select(pilot, position)
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


def test_flows_and_detail(snap_compare: Any, demo_path: str) -> None:
    assert snap_compare(make_app(demo_path), terminal_size=SIZE, run_before=then(position=5))


def test_flows_with_an_error_selected(snap_compare: Any, demo_path: str) -> None:
    assert snap_compare(make_app(demo_path), terminal_size=SIZE, run_before=then(position=8))


def test_stats(snap_compare: Any, demo_path: str) -> None:
    assert snap_compare(make_app(demo_path), terminal_size=SIZE, run_before=then("s"))


def test_connections(snap_compare: Any, demo_path: str) -> None:
    assert snap_compare(make_app(demo_path), terminal_size=SIZE, run_before=then("c"))


def test_help(snap_compare: Any, demo_path: str) -> None:
    assert snap_compare(make_app(demo_path), terminal_size=SIZE, run_before=then("question_mark"))


def test_flows_and_detail_at_80x24(snap_compare: Any, demo_path: str) -> None:
    assert snap_compare(make_app(demo_path), terminal_size=SMALL, run_before=then(position=6))


def test_detail_opened_with_enter_at_80x24(snap_compare: Any, demo_path: str) -> None:
    run_before = then("enter", position=8)
    assert snap_compare(make_app(demo_path), terminal_size=SMALL, run_before=run_before)


def test_stats_at_80x24(snap_compare: Any, demo_path: str) -> None:
    assert snap_compare(make_app(demo_path), terminal_size=SMALL, run_before=then("s"))


def test_help_at_80x24(snap_compare: Any, demo_path: str) -> None:
    run_before = then("question_mark")
    assert snap_compare(make_app(demo_path), terminal_size=SMALL, run_before=run_before)


def test_a_capture_opened_with_enter_at_80x24(snap_compare: Any, demo_path: str) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await then("enter", position=5)(pilot)
        app = pilot.app
        assert isinstance(app, GolemProxyApp)
        await wait_for(pilot, lambda: "Image  96x60 PNG" in app.detail.text())

    assert snap_compare(make_app(demo_path), terminal_size=SMALL, run_before=run_before)


def test_connections_at_80x24(snap_compare: Any, demo_path: str) -> None:
    """Every column of the connections screen fits: two lines per connection."""
    assert snap_compare(make_app(demo_path), terminal_size=SMALL, run_before=then("c"))


WIDE = (160, 45)
"""A wide terminal: the detail pane sits beside the table."""


def test_flows_and_detail_at_160x45(snap_compare: Any, demo_path: str) -> None:
    assert snap_compare(make_app(demo_path), terminal_size=WIDE, run_before=then(position=8))
