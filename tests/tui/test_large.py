"""A 100,000-exchange recording loads and scrolls (no timing assertions: see bench/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.sources import RecordingSource
from tests.support.sessions import bulk_session, write_recording

from .helpers import loaded, run, select

FLOWS = 100_000


@pytest.fixture(scope="module")
def big_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("big") / "big.jsonl")
    write_recording(path, bulk_session(FLOWS))
    return path


@pytest.mark.slow
def test_a_100k_recording_loads_and_scrolls(big_path: str, tmp_path: Path) -> None:
    async def body() -> None:
        source = RecordingSource.open(big_path)
        app = GolemProxyApp(source, source.profile, "big")
        async with app.run_test(size=(160, 45)) as pilot:
            await loaded(pilot, limit=60_000)
            table = app.table
            assert len(app.model.view) == FLOWS
            assert table.selected == FLOWS - 1 and table.scroll_y == table.max_scroll_y
            assert table.virtual_size.height == FLOWS + 1
            await pilot.press("home")
            assert table.selected == 0 and table.scroll_y == 0
            for _ in range(20):
                await pilot.press("pagedown")
            assert table.selected == 20 * (table.size.height - 2) and table.scroll_y > 0
            await select(pilot, 50_000, limit=60_000)
            assert "#50001 " in app.detail.text()
            await pilot.press("slash", *"~e", "enter")
            assert 0 < len(app.model.view) < FLOWS // 50
            await pilot.press("end")
            assert table.selected == app.model.view[-1]

    run(body(), timeout=240)
