"""How the main screen and the connections screen use the terminal's width: the detail pane
beside the table from 140 columns on, under it below; the connections screen folds its
columns two to a line rather than lose them off an 80-column edge."""

from __future__ import annotations

from textual.widgets import DataTable

from golem_proxy.tui.panes import WIDE

from .helpers import recording_app, run, wait_for


def test_the_detail_pane_sits_beside_the_table_on_a_wide_terminal(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path, (WIDE, 40)) as (app, pilot):
            table, detail = app.table.region, app.detail.region
            assert detail.x >= table.right
            assert detail.y == table.y
            await pilot.resize_terminal(WIDE - 1, 40)
            await wait_for(pilot, lambda: app.detail.region.y >= app.table.region.bottom)
            assert app.detail.region.x == app.table.region.x

    run(body())


def test_the_connections_screen_fits_80_columns(demo_path: str) -> None:
    async def body() -> None:
        async with recording_app(demo_path, (80, 24)) as (app, pilot):
            await pilot.press("c")
            await wait_for(pilot, lambda: bool(app.screen.query(DataTable)))
            table = app.screen.query_one(DataTable)
            await wait_for(pilot, lambda: table.row_count > 0)
            await pilot.pause()
            titles = [str(column.label) for column in table.columns.values()]
            assert "close reason" in titles
            assert "bytes →\nbytes ←" in titles
            # Nothing off the edge: the columns with their padding fit the screen.
            assert sum(column.get_render_width(table) for column in table.columns.values()) <= 80
            await pilot.resize_terminal(160, 24)
            await wait_for(pilot, lambda: len(table.columns) == 12)

    run(body())
