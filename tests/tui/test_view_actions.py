"""The keys that act on the view (golem_proxy/tui/view_actions.py) and what they cover: a fold
changes only what the table shows, so the statistics (`s`) and a view written out (`w`) hold
every flow the filter selects, the GOLEM flows folded under a tool call included."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from golem_core.profiles import GOLEM, MCP
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo, read_recording
from golem_proxy.tui.app import GolemProxyApp

from .helpers import recording_app, run, select, wait_for
from .test_flow_bound import tool_call_causing


def two_layer_recording(path: Path, golem_flows: int) -> str:
    """A recording of one tool call that caused ``golem_flows`` GOLEM flows."""
    routes = [
        RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2"),
        RouteInfo("mcp", "stdio", "server", MCP.name),
    ]
    before, answer = tool_call_causing(golem_flows)
    with RecordingWriter.create(str(path), Header.new(GOLEM.name, routes)) as writer:
        for event in before + answer:
            writer.write(event)
    return str(path)


def notices(app: GolemProxyApp) -> list[str]:
    return [str(notification.message) for notification in app._notifications]


def test_stats_and_a_written_view_hold_the_flows_a_fold_hides(tmp_path: Path) -> None:
    path = two_layer_recording(tmp_path / "two-layers.jsonl", 3)

    async def body() -> None:
        async with recording_app(path) as (app, pilot):
            assert len(app.model.flows) == 4
            await select(pilot, 0)
            await pilot.press("o")  # the tool call's three GOLEM flows fold under its row
            assert list(app.model.view) == [0]
            await pilot.press("s")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "StatsScreen")
            title = str(app.screen.query_one("#stats-title", Static).content)
            assert title.startswith("Statistics of all flows: 4 flows")
            await pilot.press("escape")
            saved = tmp_path / "view.jsonl"
            await pilot.press("w")
            prompt = str(app.screen.query(Static).first().content)
            assert prompt == "Write the 4 flows in view (3 of them folded) to a new recording:"
            await pilot.press("ctrl+a", "ctrl+k", *str(saved), "enter")
            await wait_for(pilot, lambda: any("Wrote" in n for n in notices(app)))
            (notice,) = [n for n in notices(app) if "Wrote" in n]
            assert notice.startswith("Wrote 4 flows")
            assert len(read_recording(str(saved)).exchanges()) == 4
            # The fold still holds: only the display was folded, and it is unchanged.
            assert list(app.model.view) == [0]

    run(body())
