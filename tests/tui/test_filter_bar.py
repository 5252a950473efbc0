"""The filter bar (golem_proxy/tui/widgets/filter_bar.py): a filter refused says why, the
whole message on lines of its own under the bar, as `show --filter` prints it."""

from __future__ import annotations

import pytest

from golem_proxy.analysis.filters import parse_filter

from .helpers import recording_app, run
from .test_hostile import screen_text


def refusal(text: str) -> str:
    with pytest.raises(ValueError) as refused:
        parse_filter(text)
    return str(refused.value)


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
def test_a_refused_filter_shows_its_whole_message(demo_path: str, size: tuple[int, int]) -> None:
    message = refusal("~c NOPE")
    assert len(message) > 300  # it names every error code: longer than a line

    async def body() -> None:
        async with recording_app(demo_path, size=size) as (app, pilot):
            rows_before = app.table.region.height
            await pilot.press("slash", *"~c NOPE", "enter")
            await pilot.pause()
            assert app.filter_bar.error == message
            shown = " ".join(screen_text(app).split())
            assert " ".join(message.split()) in shown
            # The bar is one line again once the filter is cleared.
            await pilot.press("ctrl+a", "ctrl+k", "enter")
            await pilot.pause()
            assert app.filter_bar.error == "" and app.filter_bar.region.height == 1
            assert app.table.region.height == rows_before

    run(body())
