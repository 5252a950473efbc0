"""The ``#N`` of ``diff``, ``replay`` (its report and its miss messages) and ``verify`` is the
row ``show`` lists as ``N``, and the flow ``resend FILE N`` sends, also past rows that are no
exchange: the demo's recording has a frame that is not JSON, never answered (a row of its
own), before its Grasshopper calls. The real CLI as subprocesses, against the headless
plugin."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from golem_proxy.analysis.request_rows import read_request_rows
from golem_proxy.replay.index import load_exchanges
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.testing.plugin_process import PluginProcess

from .test_cli import golem_proxy, replaying

CLOSED = '"result": {"status": "closed"}'


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session recorded through the proxy from the headless plugin (seed 42)."""
    path = tmp_path_factory.mktemp("demo") / "demo.jsonl"
    done = golem_proxy("demo", "--out", str(path), "--seed", "42", "--quiet", timeout=120)
    assert done.returncode == 0, done.stderr
    return path


def show_rows(path: Path) -> dict[int, dict[str, object]]:
    """``show --json``'s rows by number."""
    done = golem_proxy("show", "--json", str(path))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return {int(row["number"]): row for row in rows}


def row_of(rows: dict[int, dict[str, object]], method: str) -> int:
    """The one row of ``method``, after a row that is no exchange (else the test proves
    nothing: rows and exchanges would be numbered alike)."""
    (number,) = [n for n, row in rows.items() if row["method"] == method]
    assert any(row["outcome"] is None for n, row in rows.items() if n < number)
    return number


def closed_otherwise(demo: Path, tmp_path: Path) -> Path:
    """The demo with ``grasshopper.close_definition`` answered otherwise."""
    text = demo.read_text()
    assert text.count(CLOSED) == 1
    changed = tmp_path / "changed.jsonl"
    changed.write_text(text.replace(CLOSED, '"result": {"status": "open!"}'))
    return changed


def test_diff_names_the_row_show_lists_and_resend_sends(demo: Path, tmp_path: Path) -> None:
    rows = show_rows(demo)
    closing = row_of(rows, "grasshopper.close_definition")
    changed = closed_otherwise(demo, tmp_path)

    text = golem_proxy("diff", str(demo), str(changed))
    assert text.returncode == 1, text.stderr
    assert text.stdout.splitlines()[0] == (
        f"A#{closing} B#{closing} main grasshopper.close_definition changed"
    )
    report = json.loads(golem_proxy("diff", "--json", str(demo), str(changed)).stdout)
    (pair,) = report["exchanges"]
    assert (pair["a"], pair["b"]) == (closing, closing)

    with PluginProcess(seed=42) as plugin:
        again = golem_proxy("resend", str(demo), str(closing), "--target", str(plugin.main))
    assert again.stdout.startswith(f"flow {closing} sent again: grasshopper.close_definition ")


def test_replay_names_rows_in_its_misses_and_its_report(demo: Path, tmp_path: Path) -> None:
    rows = show_rows(demo)
    opening = row_of(rows, "grasshopper.open_definition")
    report = tmp_path / "report.json"
    with replaying(str(demo), "--report", str(report)) as (process, ready):
        with (
            GolemClient(ready[1], int(ready[2])) as client,
            pytest.raises(RhinoCommandError) as missed,
        ):
            client.send_command("grasshopper.open_definition", {"file_path": "/tmp/other.gh"})
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0, stderr
    assert missed.value.message.startswith(
        f"no recorded grasshopper.open_definition with these params; nearest: #{opening} "
    )
    unused = json.loads(report.read_text())["unused"]
    assert len(unused) > 5
    for entry in unused:  # each the row show lists under its number
        row = rows[entry["number"]]
        assert (row["route"], row["method"]) == (entry["route"], entry["method"])
    assert rows[unused[-1]["number"]]["method"] == "grasshopper.close_definition"
    said = [f"  unused #{u['number']} {u['route']} {u['method']}" for u in unused[:20]]
    assert [line for line in stderr.splitlines() if line.startswith("  unused")] == said


def test_verify_names_the_row_show_lists(demo: Path, tmp_path: Path) -> None:
    closing = row_of(show_rows(demo), "grasshopper.close_definition")
    changed = closed_otherwise(demo, tmp_path)
    with PluginProcess(seed=42) as plugin:
        targets = ("--target", str(plugin.main), "--gh-target", str(plugin.gh))
        done = golem_proxy("verify", str(changed), *targets)
    assert done.returncode == 1, done.stderr
    assert f"#{closing} main grasshopper.close_definition" in done.stdout.splitlines()


def test_several_traces_served_as_one_name_the_file_with_the_row(
    demo: Path, tmp_path: Path
) -> None:
    """A row is its own file's: served together, two recordings both have a row 1."""
    pinged = row_of(show_rows(demo), "gh.ping")
    second = tmp_path / "second.jsonl"
    second.write_bytes(demo.read_bytes())
    report = tmp_path / "report.json"
    with replaying(str(demo), str(second), "--report", str(report)) as (process, _):
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0, stderr
    unused = json.loads(report.read_text())["unused"]
    assert {(u["file"], u["number"]) for u in unused if u["method"] == "gh.ping"} == {
        (str(demo), pinged),
        (str(second), pinged),
    }
    first = unused[0]
    assert f"unused {demo}#{first['number']} {first['route']} {first['method']}" in stderr


def test_an_exchange_read_after_its_request_waited_takes_that_request_row(
    demo: Path, tmp_path: Path
) -> None:
    """Of a file still being written, the exchanges are loaded after the rows were read: the
    last request, still waiting then, was answered since; its exchange takes its row, and it
    is no longer a request without an answer."""
    lines = demo.read_bytes().splitlines(keepends=True)
    last = max(n for n, line in enumerate(lines) if b'"kind":"exchange"' in line)
    answer = next(
        n for n in range(last, 0, -1) if b'"kind":"frame"' in lines[n] and b'"s2c"' in lines[n]
    )
    early = tmp_path / "early.jsonl"
    early.write_bytes(b"".join(lines[:answer]))  # the last request written, its answer not yet
    found, _ = read_request_rows(str(early))
    assert [r.method for r in found.unanswered if r.pending] == ["grasshopper.close_definition"]

    trace = load_exchanges(str(demo))
    try:
        assert trace.numbering is not None
        trace.numbering.rows(found)
        rows = show_rows(demo)
        assert [e.row for e in trace.exchanges] == [
            n for n, row in sorted(rows.items()) if row["outcome"] is not None
        ]
        assert not [r for r in found.unanswered if r.pending]
    finally:
        trace.close()


def test_a_row_asked_for_while_a_worker_reads_them_is_unknown_at_once(demo: Path) -> None:
    """A replay server's event loop never waits for the reading a worker thread does: a miss
    meanwhile says ``#?``; once read, the row is show's."""
    trace = load_exchanges(str(demo))
    numbering = trace.numbering
    assert numbering is not None
    last = trace.exchanges[-1]
    with numbering._reading:  # a worker thread reading the rows
        assert last.row is None and last.label == "#?"
    rows = show_rows(demo)
    assert last.row is not None and rows[last.row]["method"] == last.method
    trace.close()
