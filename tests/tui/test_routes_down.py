"""A route whose plugin stopped answering is not listened on until it answers again: the TUI's
status line says so while it lasts (the live log said it; the TUI went on showing the route
as if it listened, and a client was refused)."""

from __future__ import annotations

from pathlib import Path

from golem_core.profiles import GOLEM
from golem_proxy.events import UpstreamStatus
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from golem_proxy.tui.model import SessionModel

from .helpers import recording_app, run, wait_for

DOWN = UpstreamStatus(route="main", t=1.5, up=False, detail="plugin not listening")
BACK = UpstreamStatus(route="main", t=4.0, up=True, detail="plugin answers again")


def test_the_model_keeps_the_routes_down_while_they_are() -> None:
    model = SessionModel(GOLEM)
    model.apply([DOWN])
    assert model.routes_down == {"main": 1.5}
    model.apply([BACK])
    assert model.routes_down == {}


def test_the_status_line_says_a_route_is_down(tmp_path: Path) -> None:
    path = tmp_path / "down.jsonl"
    routes = [RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2")]
    with RecordingWriter.create(str(path), Header.new(GOLEM.name, routes)) as writer:
        writer.write(DOWN)

    async def body() -> None:
        async with recording_app(str(path)) as (app, pilot):
            said = "main: plugin down since t=1.500 s, not listening"
            await wait_for(pilot, lambda: said in app.status_bar.text)

    run(body())
