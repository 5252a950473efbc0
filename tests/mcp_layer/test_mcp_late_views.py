"""Every view says what the recording marks of an answer out of turn, in `show`'s words.

Recorded once through the real `golem-proxy mcp` (`late_answer_session`): a GOLEM answer that
came after its tool call returned (``late``) and the tool calls after it whose result is
another exchange's answer (``answer_of``). `show --json` carries both and their words; the
TUI's table and detail, `stats`, `query` and the Parquet export say the same, none of them an
``ok`` like any other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from textual.widgets import Static

from golem_proxy.status_tone import Tone
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.tui.widgets.flows_table import row_cells
from tests.support.cli_helpers import run_cli
from tests.tui.helpers import recording_app, run, select, wait_for

from .late_session import SERVER, late_answer_session
from .mcp_helpers import wrapped

Row = dict[str, Any]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("late")
    record = where / "r.jsonl"
    with PluginProcess(seed=3, extra_args=("--allow-scripts",)) as plugin:
        outcomes = late_answer_session(
            wrapped(plugin, record, server=SERVER), record, where / "stderr"
        )
    # The server gave up on the slow script; the next call read its answer as its own.
    assert outcomes[1][0] and not outcomes[2][0] and "late" in outcomes[2][1], outcomes
    return record


@pytest.fixture(scope="module")
def rows(recording: Path) -> list[Row]:
    """The flows as `show --json` gives them."""
    shown = run_cli("show", "--json", str(recording))
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


def _marked(rows: list[Row]) -> tuple[Row, Row, list[Row], list[Row]]:
    """The slow script's late exchange, its tool call, every late row and every row whose
    result is another's answer."""
    late = [row for row in rows if row.get("late")]
    misread = [row for row in rows if row.get("answer_of")]
    slow = next(row for row in late if row["method"] == "scripting.execute_python")
    call = next(row for row in rows if row["number"] == slow["tool_call"])
    return slow, call, late, misread


def _note(row: Row) -> str:
    """What `show` prints after the row's status (`show --json`'s words)."""
    return str(row["late_text"]) if row.get("late") else str(row["answer_of"]["text"])


def test_show_json_carries_both_marks_and_their_words(recording: Path, rows: list[Row]) -> None:
    slow, call, late, misread = _marked(rows)
    assert call["tool"] == "run_python" and call["is_error"] is True
    assert slow["late_text"] == f"late: after its tool call #{call['number']} returned"
    created = next(row for row in rows if row.get("tool") == "create_layer")
    assert created["answer_of"]["flow"] == slow["number"]
    assert created["answer_of"]["text"] == (
        f"its result is #{slow['number']}'s answer (run_python), not its own: the server "
        "reads answers out of order"
    )
    assert misread and all(row["layer"] == "mcp" for row in misread)
    assert all(row["layer"] == "golem" and row["status"] == "ok" for row in late)
    table = " ".join(run_cli("show", str(recording)).stdout.split())
    for row in late + misread:
        assert f"ok · {_note(row)}" in table


def test_the_tui_table_and_detail_say_it_in_a_warning_tone(
    recording: Path, rows: list[Row]
) -> None:
    slow, call, late, misread = _marked(rows)

    async def body() -> None:
        async with recording_app(str(recording), size=(240, 50)) as (app, pilot):
            model, table = app.model, app.table
            for row in late + misread:
                # The status column as `show` prints it.
                flow = model.flow_numbered(row["number"])
                assert row_cells(flow, model)[6] == f"ok · {_note(row)}"
            warning = table.get_component_rich_style(Tone.OUT_OF_TURN.component)
            assert warning.color is not None
            for row in late + misread:
                # Drawn in the warning tone, not as an ok row.
                flow = model.flow_numbered(row["number"])
                assert flow.tone is Tone.OUT_OF_TURN
                strip = table.render_line(model.view.index(model.index_of(flow)) + 1)
                drawn = "".join(segment.text for segment in strip)
                assert "ok · " in drawn and _note(row)[-12:] in drawn, drawn
                assert {s.style.color for s in strip if s.style} == {warning.color}
            plain = model.flow_numbered(next(r for r in rows if r["status"] == "ok")["number"])
            assert row_cells(plain, model)[6] == "ok" and plain.tone is Tone.OK

            # The tool call's detail names its late answer under it as its row does.
            await select(
                pilot, model.view.index(model.index_of(model.flow_numbered(call["number"])))
            )
            text = app.detail.text()
            assert (
                f"↳ #{slow['number']} scripting.execute_python ok · late: after its tool call "
                f"#{call['number']} returned"
            ) in text, text

            # The statistics screen counts them.
            await pilot.press("s")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "StatsScreen")
            title = str(app.screen.query_one("#stats-title", Static).content)
            calls = "tool call" if len(misread) == 1 else "tool calls"
            assert f"; {len(late)} late answer" in title
            assert f", {len(misread)} {calls} with another's answer" in title, title

    run(body())


def test_stats_counts_late_answers_and_calls_with_another_s_answer(
    recording: Path, rows: list[Row]
) -> None:
    _, _, late, misread = _marked(rows)
    shown = run_cli("stats", "--json", str(recording))
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["overall"]["late"] == len(late)
    assert data["overall"]["not_own"] == len(misread)
    methods = {(m["route"], m["method"]): m for m in data["methods"]}
    assert methods[("mcp", "tools/call")]["not_own"] == len(misread)
    assert methods[("main", "scripting.execute_python")]["late"] >= 1
    assert sum(m["late"] for m in data["methods"]) == len(late)

    table = run_cli("stats", str(recording)).stdout
    head = next(line for line in table.splitlines() if line.startswith("route"))
    columns = head.split()
    at = columns.index("late")  # after ⚠: each late answer is a warning too
    assert columns[at : at + 3] == ["late", "not", "own"], head
    [total] = [line for line in table.splitlines() if line.startswith("*")]
    assert total.split()[at : at + 2] == [str(len(late)), str(len(misread))], total
    assert "late: GOLEM answers that came after their tool call returned" in table


def _expected(rows: list[Row]) -> list[tuple[int, bool, Any, Any]]:
    return [
        (
            row["number"],
            bool(row.get("late")),
            row["answer_of"]["flow"] if row.get("answer_of") else None,
            _note(row) if row.get("late") or row.get("answer_of") else None,
        )
        for row in rows
    ]


def test_query_and_the_parquet_export_have_the_columns(
    recording: Path, rows: list[Row], tmp_path: Path
) -> None:
    expected = _expected(rows)
    sql = "SELECT n, late, answer_of, status_note FROM flows ORDER BY n"
    queried = run_cli("query", "--json", sql, str(recording))
    assert queried.returncode == 0, queried.stderr
    got = [json.loads(line) for line in queried.stdout.splitlines()]
    assert [(r["n"], r["late"], r["answer_of"], r["status_note"]) for r in got] == expected

    out = tmp_path / "flows.parquet"
    exported = run_cli("export", "--format", "parquet", "-o", str(out), str(recording))
    assert exported.returncode == 0, exported.stderr
    with duckdb.connect() as db:
        kinds = dict(db.execute("SELECT name, type FROM parquet_schema(?)", [str(out)]).fetchall())
        assert (kinds["late"], kinds["answer_of"], kinds["status_note"]) == (
            "BOOLEAN",
            "INT64",
            "BYTE_ARRAY",
        )
        read = db.execute(
            "SELECT n, late, answer_of, status_note FROM read_parquet(?) ORDER BY n", [str(out)]
        ).fetchall()
    assert read == expected
    # The exported file reads as the recording does.
    again = run_cli("query", "--json", sql, str(out))
    assert [json.loads(line) for line in again.stdout.splitlines()] == got
