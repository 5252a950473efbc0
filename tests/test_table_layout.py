"""The commands' one table layout (golem_proxy/table_layout.py): on a terminal it fits the width by
priority and never cuts a value or drops a column; piped it prints every value whole (issue 22
point 5)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from golem_core.profiles import get_profile
from golem_proxy.table_layout import (
    Column,
    ColumnTable,
    print_unfolded,
    terminal_width,
    wrap_cell,
)
from tests.support.cli_helpers import ROOT, run_cli, run_cli_tty
from tests.support.trace_builder import TapSimulator, write_recording

LONG_METHOD = "workspace." + "very_long_method_name_part_" * 5 + "end"
BOTH = "InvalidEnvelope(BothResultAndError)"
ERROR_SESSION = str(ROOT / "recordings" / "error-session.jsonl")
GRASSHOPPER_SESSION = str(ROOT / "recordings" / "grasshopper-session.jsonl")


@pytest.fixture(scope="module")
def scrybe_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSON-RPC trace with a 150-character method and the longest outcome names."""
    profile = get_profile("jsonrpc-ndjson")
    tap = TapSimulator(profile)
    tap.open(1, "scrybe")
    tap.request(1, {"jsonrpc": "2.0", "id": 1, "method": LONG_METHOD, "params": {}})
    tap.tick(0.01)
    answer = {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}
    tap.respond(1, answer)
    tap.request(1, {"jsonrpc": "2.0", "id": 2, "method": "doc.open", "params": {}})
    tap.respond(1, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "bad"}})
    tap.close(1)
    path = tmp_path_factory.mktemp("layout") / "scrybe.jsonl"
    path.write_bytes(write_recording(tap.events, "jsonrpc-ndjson"))
    return path


def test_wrap_cell_breaks_after_dots_and_keeps_every_character() -> None:
    assert wrap_cell("operations.boolean_difference", 20) == ["operations.", "boolean_difference"]
    assert wrap_cell(BOTH, 20) == ["InvalidEnvelope(", "BothResultAndError)"]
    assert wrap_cell("INVALID_PARAMS (in result)", 16) == ["INVALID_PARAMS", "(in result)"]
    lines = wrap_cell(LONG_METHOD, 12)
    assert all(cell_len(line) <= 12 for line in lines)
    assert "".join(lines) == LONG_METHOD
    assert wrap_cell("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


COLUMNS = (
    Column("#", right=True),
    Column("route", wrap=True, priority=0, floor=4),
    Column("method", wrap=True, priority=2, floor=10),
    Column("status", wrap=True, priority=2, floor=10),
    Column(
        "resp B",
        right=True,
        short="←B",
        compact=lambda text: f"{int(text) // 1024}K" if len(text) > 4 else text,
    ),
)
ROWS = [
    ["1", "main", "geometry.create_box", "ok", "512"],
    ["2", "main", "geometry.create_sphere", "INVALID_PARAMS (in result)", "2048000"],
]


def test_piped_every_value_is_whole_at_its_natural_width() -> None:
    table = ColumnTable(COLUMNS, None)
    table.measure(ROWS)
    lines = table.render(ROWS).plain.splitlines()
    assert len(lines) == 2
    for row, line in zip(ROWS, lines):
        for value in row:
            assert value in line
    assert table.heading().plain.split() == ["#", "route", "method", "status", "resp", "B"]


@pytest.mark.parametrize("width", [40, 50, 60, 80])
def test_on_a_terminal_every_line_fits_and_every_column_stays(width: int) -> None:
    table = ColumnTable(COLUMNS, width)
    table.measure(ROWS)
    text = table.heading().plain + "\n" + table.render(ROWS).plain
    assert all(cell_len(line) <= width for line in text.splitlines())
    headings = table.heading().plain
    assert all(
        (c.short if table.short_headings and c.short else c.heading) in headings for c in COLUMNS
    )
    # Wrapped values come back whole when their pieces are joined (less the spaces at breaks).
    cells = _cells_of(table, table.render(ROWS).plain)
    assert [[c.replace(" ", "") for c in row[:4]] for row in cells] == [
        [v.replace(" ", "") for v in row[:4]] for row in ROWS
    ]
    assert "…" not in text


def _cells_of(table: ColumnTable, text: str) -> list[list[str]]:
    """The rendered rows cut back into cells: a line whose first cell is empty continues
    the row above it."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        cells, at = [], 0
        for width in table.widths:
            cells.append(line[at : at + width].strip())
            at += width + len(table.gap)
        if cells[0]:
            rows.append(cells)
        else:
            rows[-1] = [mine + more for mine, more in zip(rows[-1], cells)]
    return rows


def test_short_headings_and_compact_values_come_before_wrapping() -> None:
    table = ColumnTable(COLUMNS, 67)  # 69 in full, 67 with 2000K for 2048000
    table.measure(ROWS)
    assert table.short_headings and table.compact_values
    lines = table.render(ROWS).plain.splitlines()
    assert len(lines) == 2  # nothing had to wrap
    assert table.gap == "  "
    assert "2000K" in lines[1]


def test_styles_stay_on_their_cells() -> None:
    table = ColumnTable(COLUMNS, None)
    rows = [["1", "main", "ping", Text("error", style="red"), "1"]]
    table.measure(rows)
    rendered = table.render(rows)
    (span,) = rendered.spans
    assert rendered.plain[span.start : span.end] == "error"
    assert span.style == "red"


def _row_lines(shown: str, first: str) -> list[str]:
    """The lines from the one starting with ``first`` (a row's number) to the next row."""
    lines = shown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [first])
    rest = [start + 1 + i for i, line in enumerate(lines[start + 1 :]) if line[:1] != " "]
    return lines[start : rest[0] if rest else None]


@pytest.mark.parametrize("columns", [80, 200])
def test_show_at_a_terminal_keeps_every_column_and_value(scrybe_trace: Path, columns: int) -> None:
    code, shown = run_cli_tty("show", str(scrybe_trace), columns=columns)
    assert code == 0, shown
    assert all(cell_len(line) <= columns for line in shown.splitlines()), shown
    heading = next(line for line in shown.splitlines() if "method" in line)
    for name in ("#", "method", "status", "ms", "⚠"):
        assert name in heading.split()
    assert "req B" in heading or "→B" in heading
    assert "…" not in shown
    # The method's pieces, one under the other, join up; the outcome is whole or wrapped
    # after its parenthesis.
    row = _row_lines(shown, "1")
    start = row[0].index("workspace.")
    assert "".join(line[start:].split(" ")[0] for line in row) == LONG_METHOD
    assert BOTH in "".join(row) or (
        "InvalidEnvelope(" in row[0] and "BothResultAndError)" in row[1]
    )
    assert "ERR_INVALID_PARAMS" in shown


def test_show_at_200_columns_keeps_the_outcome_on_one_line(scrybe_trace: Path) -> None:
    _, shown = run_cli_tty("show", str(scrybe_trace), columns=200)
    assert BOTH in shown


def test_show_at_80_columns_tells_the_methods_apart() -> None:
    code, shown = run_cli_tty("show", ERROR_SESSION, columns=80)
    assert code == 0
    for method in ("geometry.create_torus", "geometry.create_box", "scene.get_object_info"):
        assert method in shown
    assert shown.count("APPLICATION_ERROR") == 5  # whole, not APPLICATION_ERR…
    row = _row_lines(shown, "6")  # operations.boolean_difference wraps after its dot
    start = row[0].index("operations.")
    assert row[1][start:].startswith("boolean_difference")
    assert "⚠1" in shown or "⚠ 1" in shown


@pytest.mark.parametrize("columns", [80, 120])
def test_stats_and_check_at_a_terminal_cut_nothing(columns: int) -> None:
    code, shown = run_cli_tty("stats", ERROR_SESSION, columns=columns)
    assert code == 0
    assert "route" in shown or "rt" in shown.split()
    assert "rou…" not in shown and "…" not in shown
    assert "viewport.restore_named_view" in "".join(shown.split())
    assert "max" in shown.split()
    code, shown = run_cli_tty(
        "check", GRASSHOPPER_SESSION, "--catalogue", "golem-3dmcp@9819b31", columns=columns
    )
    assert all(cell_len(line) <= columns for line in shown.splitlines()), shown
    assert "…" not in shown
    methods = _column(shown, "method", "param")
    assert "grasshopper.bake_objects" in methods
    assert "grasshopper.close_definition" in methods


def _column(shown: str, heading: str, following: str) -> list[str]:
    """The values of the left-aligned column ``heading`` of the first table in ``shown``
    (up to the column ``following``), each joined from the lines it wraps over (a row starts
    on the line with its call count and first flow: ``2 #3,``)."""
    lines = shown.splitlines()
    top = next(i for i, line in enumerate(lines) if f" {following} " in line)
    start, end = lines[top].index(heading), lines[top].index(following)
    values: list[str] = []
    for line in lines[top + 2 :]:
        if not line.strip() or line.startswith(("no ", "note")):
            break
        piece = line[start:end].strip()
        if re.search(r" \d+ #\d", line):
            values.append(piece)
        elif values:
            values[-1] += piece
    return values


def test_piped_output_is_never_truncated(scrybe_trace: Path) -> None:
    done = run_cli("show", str(scrybe_trace))
    assert done.returncode == 0
    assert LONG_METHOD in done.stdout and BOTH in done.stdout
    assert "…" not in done.stdout
    done = run_cli("stats", str(scrybe_trace))
    assert LONG_METHOD in done.stdout and "scrybe" in done.stdout
    done = run_cli("check", GRASSHOPPER_SESSION, "--catalogue", "golem-3dmcp@9819b31")
    assert "…" not in done.stdout
    assert "client: mcp_server/tools/grasshopper.py" in done.stdout


def test_a_settled_terminal_layout_changes_only_for_a_number_that_outgrows_it() -> None:
    table = ColumnTable(COLUMNS, 80)
    table.measure(ROWS)
    table.settle()
    assert table.line_width == 80  # the spare width went to method and status
    longer = [["3", "main", "geometry.create_a_much_longer_name_than_before", "ok", "1"]]
    assert not table.measure(longer)  # it wraps in its column: the heading stays valid
    assert table.measure([["12345678", "main", "ping", "ok", "1"]])  # a wider number


def test_a_settled_piped_layout_widens_for_any_longer_value() -> None:
    table = ColumnTable(COLUMNS, None)
    table.measure(ROWS)
    table.settle()
    assert table.measure([["3", "main", "x" * 60, "ok", "1"]])
    assert "x" * 60 in table.render([["3", "main", "x" * 60, "ok", "1"]]).plain


def test_forced_colours_do_not_make_a_file_a_terminal() -> None:
    """FORCE_COLOR (CI) makes rich call a file a terminal: the layout asks the file."""
    assert terminal_width(Console(file=io.StringIO(), force_terminal=True, width=80)) is None


def test_a_megabyte_long_name_wraps_in_one_pass() -> None:
    """A hostile trace's method name: chopped once, not re-sliced line by line (which was
    quadratic: minutes for a megabyte on an 80-column terminal)."""
    name = "x" * 1_000_000
    lines = wrap_cell(name, 20)
    assert len(lines) == 50_000 and "".join(lines) == name


_STYLED_TEXT = st.lists(
    st.tuples(
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
        st.sampled_from(["", "bold", "dim", "red", "green on black", "yellow italic"]),
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(_STYLED_TEXT)
def test_a_line_written_straight_to_a_pipe_is_what_rich_would_write(
    parts: list[tuple[str, str]],
) -> None:
    line = Text.assemble(*parts)
    by_rich, straight = io.StringIO(), io.StringIO()
    Console(file=by_rich, highlight=False).print(line, soft_wrap=True, highlight=False)
    print_unfolded(Console(file=straight, highlight=False), line)
    assert straight.getvalue() == by_rich.getvalue()


@pytest.mark.parametrize("colours", ["FORCE_COLOR", "quiet", "record"])
def test_a_line_rich_must_render_is_rendered_by_rich(colours: str) -> None:
    """Colours asked for in a pipe, a quiet console, a captured one: rich's own rules apply."""
    line = Text.assemble(("ok", "green"), " 1.2 ms")
    out = io.StringIO()
    console = Console(
        file=out,
        highlight=False,
        force_terminal=None,
        color_system="standard" if colours == "FORCE_COLOR" else "auto",
        quiet=colours == "quiet",
        record=colours == "record",
    )
    print_unfolded(console, line)
    if colours == "FORCE_COLOR":
        assert out.getvalue() == "\x1b[32mok\x1b[0m 1.2 ms\n"
    elif colours == "quiet":
        assert out.getvalue() == ""
    else:
        assert console.export_text() == "ok 1.2 ms\n"
