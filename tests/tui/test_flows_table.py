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


def status_session() -> SessionBuilder:
    """Rows whose statuses are long, two of them alike but for their ends, and a method
    longer than the method column holds."""
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    s.respond(s.request(1, "t." + "m" * 60, {}, 0.1), 0.2, result={})
    failed = {"code": "INVALID_PARAMS", "message": "no"}
    s.respond(s.request(1, "t.err_in_result", {}, 0.3), 0.4, result=failed)
    error = {"code": "APPLICATION_ERROR", "message": "no"}
    s.respond(s.request(1, "t.error_str", {}, 0.5), 0.6, error=error)
    s.request(1, "", {}, 0.7, raw=b"\xff{}")
    s.request(1, "", {}, 0.8, raw=b"{bad")
    return s


STATUSES = [
    "ok",
    "INVALID_PARAMS (in result)",
    "APPLICATION_ERROR",
    "malformed:invalid-utf8",
    "malformed:invalid-json",
]


def test_a_status_is_whole_when_the_method_column_can_give_way() -> None:
    async def body() -> None:
        app = GolemProxyApp(ManualSource(status_session().events), GOLEM, "test")
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 5)
            await pilot.pause()
            assert app.detail.region.width > 0  # the detail pane is open beside the table
            table = app.table
            status = [i for i, w in enumerate(table.column_widths()) if w].index(6)
            shown = [row[status].strip() for row in drawn_rows(table)]
            assert shown == STATUSES
            (method,) = {row[status - 1] for row in drawn_rows(table)[:1]}
            assert method.rstrip().endswith("…")  # the method gave way

    run(body())


def test_a_status_cut_keeps_its_end_so_statuses_stay_apart() -> None:
    cut = [_fit(status, 12, right=False, keep_end=True) for status in STATUSES]
    assert cut == [
        "ok          ",
        "INVAL…esult)",
        "APPLI…_ERROR",
        "malfo…d-utf8",
        "malfo…d-json",
    ]
    assert len(set(cut)) == len(cut)
    wide = _fit("日本語の状態コード", 8, right=False, keep_end=True)
    assert wide == "日…ード " and cell_len(wide) == 8
