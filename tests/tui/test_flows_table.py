"""The flows table as drawn (golem_proxy/tui/widgets/flows_table.py): every cell of every row
is its column's width in terminal cells, whatever the text holds (wide CJK characters take
two cells each), so the columns stay in line; a cell too long is cut by cells, with an
ellipsis."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from golem_core.profiles import GOLEM
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.widgets.flows_table import FlowsTable, _fit, natural_widths
from tests.support.sessions import SessionBuilder

from .helpers import ManualSource, run, wait_for

WIDE = "t.ok.日本語メソッド"  # 12 characters, 19 cells
WIDER = "t." + "日本語" * 20  # 62 characters, 122 cells: more than the method column holds


def cjk_session() -> SessionBuilder:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for i, method in enumerate(("t.ok", WIDE, "t.ok", WIDER)):
        request = s.request(1, method, {}, 0.1 + i)
        s.respond(request, 0.2 + i, result={"n": i})
    return s


def drawn_rows(table: FlowsTable) -> list[list[str]]:
    """Each row drawn, as the text of its cells (one segment per column shown)."""
    rows = []
    for y in range(1, len(table.model.view) + 1):
        strip = table.render_line(y)
        assert strip.cell_length == table.scrollable_content_region.width
        rows.append([segment.text for segment in strip][: sum(map(bool, table.column_widths()))])
    return rows


@pytest.mark.parametrize("size", [(160, 30), (80, 24)])
def test_a_method_of_wide_characters_keeps_every_column_in_line(size: tuple[int, int]) -> None:
    async def body() -> None:
        app = GolemProxyApp(ManualSource(cjk_session().events), GOLEM, "test")
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 4)
            await pilot.pause()
            table = app.table
            widths = [width + 1 for width in table.column_widths() if width]
            rows = drawn_rows(table)
            for row in rows:
                cells = [cell_len(cell) for cell in row]
                # The space after the last column may be past the table's edge.
                assert cells[:-1] == widths[:-1], row
                assert cells[-1] in (widths[-1], widths[-1] - 1), row
            assert [c for c in rows[1] if WIDE in c], rows[1]  # whole: the column counts cells
            (cut,) = [c for c in rows[3] if c.startswith("t.日本語")]
            assert cut.rstrip().endswith("…"), cut  # cut by cells, with an ellipsis
            # Every row ends with its response size, whole and in the same cells.
            assert all(row[-1].rstrip().endswith("B") for row in rows), rows

    run(body())


def test_the_method_column_asks_for_the_cells_its_widest_method_takes() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    s.respond(s.request(1, WIDE, {}, 0.1), 0.2, result={})
    model = SessionModel(GOLEM)
    model.apply(s.events)
    assert natural_widths(model)["method"] == cell_len(WIDE) == 19
    assert cell_len(_fit(WIDE, 10, right=False)) == 10
    assert _fit(WIDE, 10, right=False) == "t.ok.日本…"
    assert _fit(WIDE, 11, right=False) == "t.ok.日本 …"  # the wide character split: a space
    assert _fit(WIDE, 21, right=True) == "  " + WIDE
