"""What the MCP server wrote to its stderr, as the readers of a recording of ``golem-proxy
mcp`` show it: a server that dies as it starts says why only there (a traceback), so the
row it left unanswered carries its last lines in ``show``, ``show --json``, ``check`` and
``export``, and ``--log FILE`` writes them in their place; a tool call that failed carries
what the server logged while it waited, and only that; a chatty server's lines are bounded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.analysis.server_stderr import STDERR_LINES
from tests.support.cli_helpers import run_cli
from tests.tui.helpers import recording_app, run, wait_for

from .mcp_helpers import INITIALIZE, ROOT, call_tools, environment

SERVER = str(Path(__file__).resolve().parent / "golem_mcp_server_stderr.py")
NOWHERE = ["--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9"]
MISSING = "No module named 'golem_module_not_installed'"


def wrapper(record: Path, *options: str) -> list[str]:
    return [
        sys.executable, "-m", "golem_proxy", "mcp", *NOWHERE, "--record", str(record),
        *options, "--", sys.executable, SERVER,
    ]  # fmt: skip


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module", params=["in-process", "child-process"])
def died_at_start(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session whose server died as it started, its initialize unanswered; ``--log`` to a
    file beside the recording (``session.log``)."""
    where = tmp_path_factory.mktemp("died")
    record = where / "session.jsonl"
    command = wrapper(record, "--observer", request.param, "--log", str(where / "session.log"))
    done = subprocess.run(
        command,
        input=INITIALIZE,
        capture_output=True,
        cwd=ROOT,
        env=environment(DIE_AT_START="1"),
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert MISSING in done.stderr.decode()  # passed on as it came
    return record


def test_show_prints_the_servers_last_lines_under_the_row_it_left_unanswered(
    died_at_start: Path,
) -> None:
    shown = run_cli("show", str(died_at_start))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if " initialize " in line)
    assert "unanswered" in lines[row]
    assert "#1: the server's stderr before the hop closed" in lines[row + 1]
    assert "exited with status 1" in lines[row + 1]
    below = lines[row + 2 :]
    assert any(MISSING in line for line in below), shown.stdout
    assert any("Traceback" in line for line in below), shown.stdout


def test_show_json_and_export_carry_the_lines(died_at_start: Path, tmp_path: Path) -> None:
    shown = run_cli("show", "--json", str(died_at_start))
    assert shown.returncode == 0, shown.stderr
    (row,) = json_lines(shown.stdout)
    said = row["server_stderr"]
    assert said["lines"][-1].endswith(MISSING), said
    assert said["lines"][0].startswith("Traceback"), said
    assert "exited with status 1" in said["when"]
    out = tmp_path / "flows.jsonl"
    exported = run_cli("export", str(died_at_start), "--format", "jsonl", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    (flow,) = json_lines(out.read_text())
    assert flow["server_stderr"] == said


def test_check_says_why_the_server_failed(died_at_start: Path) -> None:
    checked = run_cli("check", str(died_at_start))
    assert "1 flow failed: 1 unanswered" in checked.stdout
    assert "#1 unanswered: the server's stderr before the hop closed" in checked.stdout
    assert MISSING in checked.stdout, checked.stdout
    as_json = json.loads(run_cli("check", "--json", str(died_at_start)).stdout)
    (said,) = as_json["server_stderr"]
    assert said["flow"] == 1 and said["lines"][-1].endswith(MISSING)


def test_the_log_file_has_the_servers_lines_in_their_place(died_at_start: Path) -> None:
    log = (died_at_start.parent / "session.log").read_text().splitlines()
    said = [i for i, line in enumerate(log) if "stderr│" in line and MISSING in line]
    closed = [i for i, line in enumerate(log) if "closed:" in line and "status 1" in line]
    assert said and closed and said[0] < closed[0], log


@pytest.fixture(scope="module")
def failed_noisily(tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("noisy") / "session.jsonl"
    calls = [
        ("chatty", {"lines": 3}),
        ("noisy_failure", {"why": "the scene is locked"}),
        ("chatty", {"lines": 2}),
        ("noisy_failure", {"why": "far too much", "lines": 40}),
    ]
    outcomes = call_tools(wrapper(record), environment(), calls)
    assert [failed for failed, _ in outcomes] == [False, True, False, True]
    return record


def test_a_failed_call_carries_what_the_server_logged_while_it_waited(
    failed_noisily: Path,
) -> None:
    rows = json_lines(run_cli("show", "--json", "--layer", "mcp", str(failed_noisily)).stdout)
    calls = [row for row in rows if row["method"] == "tools/call"]
    assert ["server_stderr" in row for row in calls] == [False, True, False, True]
    first = calls[1]["server_stderr"]
    assert first["when"] == "the server's stderr while the request waited"
    assert any("ERROR noisy_failure: the scene is locked" in line for line in first["lines"])
    assert not any("chatty" in line for line in first["lines"]), first  # logged before it
    last = calls[3]["server_stderr"]  # 41 lines logged: the last ones only
    assert len(last["lines"]) <= STDERR_LINES and last["more"] is True
    assert any("ERROR noisy_failure: far too much" in line for line in last["lines"])
    assert "noisy log line 0" not in last["lines"]


def test_show_prints_them_under_the_failed_call(failed_noisily: Path) -> None:
    shown = run_cli("show", "--layer", "mcp", str(failed_noisily)).stdout.splitlines()
    row = next(i for i, line in enumerate(shown) if 'noisy_failure(why="the scene' in line)
    assert "isError" in shown[row]
    assert "while the request waited" in shown[row + 1]
    assert any("the scene is locked" in line for line in shown[row + 2 : row + 8])
    heading = [line for line in shown if "the last" in line and "stderr" in line]
    last = next(line for line in shown if 'noisy_failure(why="far too' in line)
    assert heading == [f"   #{last.split()[0]}: the server's stderr while the request waited, "
                       f"the last {STDERR_LINES} lines:"]  # fmt: skip


def test_the_tui_detail_of_the_row_shows_the_lines(died_at_start: Path) -> None:
    async def body() -> None:
        async with recording_app(str(died_at_start)) as (app, pilot):
            (flow,) = app.model.flows
            await wait_for(pilot, lambda: app.detail.flow is flow)
            text = app.detail.text()
            assert "the server's stderr before the hop closed" in text
            assert MISSING in text, text

    run(body())


def test_sql_has_every_line_as_a_row_of_server_stderr(failed_noisily: Path, tmp_path: Path) -> None:
    """`query` and `export --format parquet --table server_stderr`: every line the server
    wrote, whole, with its time and the MCP hop's route and connection, as the flows name
    them; the recording and its export give the same rows."""
    logged = "SELECT route, conn, t, text FROM server_stderr WHERE text LIKE '%log line%' "
    logged += "OR text LIKE 'ERROR%'"
    queried = run_cli("query", logged, str(failed_noisily), "--json")
    assert queried.returncode == 0, queried.stderr
    rows = json_lines(queried.stdout)
    expected = (
        [f"chatty log line {n}" for n in range(3)]
        + ["ERROR noisy_failure: the scene is locked"]
        + [f"chatty log line {n}" for n in range(2)]
        + [f"noisy log line {n}" for n in range(40)]
        + ["ERROR noisy_failure: far too much"]
    )
    assert [row["text"] for row in rows] == expected
    calls = "SELECT route, conn, t FROM flows WHERE tool IS NOT NULL ORDER BY n"
    made = json_lines(run_cli("query", calls, str(failed_noisily), "--json").stdout)
    assert {(row["route"], row["conn"]) for row in rows} == {(made[0]["route"], made[0]["conn"])}
    # Each line after its call was made, before the next one was.
    at = {row["text"]: row["t"] for row in rows}
    assert made[1]["t"] <= at["ERROR noisy_failure: the scene is locked"] <= made[2]["t"]
    assert made[3]["t"] <= at["noisy log line 0"]
    # The lines a failed call's server wrote while it waited (docs/interop.md's example).
    waited = (
        "SELECT f.n, s.text FROM flows f JOIN server_stderr s ON s.trace = f.trace AND "
        "s.conn = f.conn AND s.t BETWEEN f.t AND f.t + f.latency "
        "WHERE f.tool IS NOT NULL AND f.error AND s.text LIKE 'ERROR%' ORDER BY f.n"
    )
    failed = json_lines(run_cli("query", waited, str(failed_noisily), "--json").stdout)
    assert [row["text"] for row in failed] == [
        "ERROR noisy_failure: the scene is locked",
        "ERROR noisy_failure: far too much",
    ]

    out = tmp_path / "stderr.parquet"
    exported = run_cli(
        "export", str(failed_noisily), "--format", "parquet", "--table", "server_stderr",
        "--out", str(out),
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert "lines of the server's stderr to" in exported.stderr
    flows = tmp_path / "flows.parquet"
    flows_exported = run_cli("export", str(failed_noisily), "--format", "parquet", "-o", str(flows))
    assert flows_exported.returncode == 0, flows_exported.stderr
    both = run_cli("query", logged, str(out), str(flows), "--json")
    assert both.returncode == 0, both.stderr
    assert json_lines(both.stdout) == rows
    counted = run_cli("query", "SELECT count(*) AS n FROM flows", str(out), str(flows), "--json")
    shown = json_lines(run_cli("show", "--json", str(failed_noisily)).stdout)
    assert json_lines(counted.stdout) == [{"n": len(shown)}]  # each file in its own view
