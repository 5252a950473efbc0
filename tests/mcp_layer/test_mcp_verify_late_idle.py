"""``golem-proxy mcp-verify`` on a session whose recording holds a late GOLEM answer (the
server gave up waiting, the plugin answered after) or a connection the proxy closed for
``--idle-timeout``: the stand-in plays each as the recording's marks say it happened (the
late answer sent once mcp-verify read its call's answer, the last call's too, the answers
queued behind it as the plugin sent them, the idle connection closed before the call that
met it), so the same build matches, and each row and the lines under the table say what was
played, whichever answers the recording marks late; a build that now waits longer than the
recorded call and the plugin together differs with that cause named on its rows, in the
table and in ``--json``; one that keeps no connection is said to have had none to close; a
build changed elsewhere still differs, named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from golem_proxy.analysis.two_layers import read_two_layers
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .late_session import SERVER as IN_ORDER
from .late_session import late_answer_session
from .mcp_helpers import ROOT, SERVER_COMMAND, call_tools, environment, wrapped
from .test_mcp_verify_outage import _calls_around, _wait_for_line

TIMEOUTS = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_timeouts.py")]


def mcp_verify(record: Path, server: list[str], *args: str, **env: str) -> tuple[int, str]:
    done: subprocess.CompletedProcess[str] = run_cli(
        "mcp-verify", str(record), *args, "--", *server,
        env=environment(COLUMNS="400", **env), timeout=120,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def rows(text: str) -> dict[str, str]:
    """The table's rows by tool or method (the last row of a name wins), a row's wrapped
    lines joined to it."""
    found: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        words = line.split()
        if len(words) > 1 and words[-1] != "difference" and not line.startswith(" "):
            last = words[0]
            found[last] = line
        elif line.startswith(" ") and last:
            found[last] += " " + line.strip()
    return found


def late_marks(record: Path) -> list[tuple[int, int, str, Optional[int]]]:
    """The GOLEM answers the recording marks late, as its tracker marked them (whether the
    answers after the late one are marked too is a race the session decides: did the server's
    call return before its own answer, queued behind the one it read, came): each one's row,
    its call's number and tool, and the row of the answer that call read instead, if any."""
    layers = read_two_layers(record)
    rows_of = {
        (flow.route, flow.conn, flow.request.index): flow.number
        for call in layers.tool_calls
        for flow in call.golem
        if flow.request is not None
    }
    found = []
    for call in layers.tool_calls:
        read = call.flow.response.answer_of if call.flow.response is not None else None
        behind = rows_of.get((read.route, read.conn, read.index)) if read is not None else None
        for flow in call.golem:
            if flow.response is not None and flow.response.late:
                found.append((flow.number, call.number, call.tool, behind))
    return found


@pytest.fixture(scope="module")
def read_in_order(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """run_python's answer came late; the server kept its connection and read it as the next
    call's (golem_mcp_server_in_order.py waits 0.5 s, the script takes 1.5 s)."""
    folder = tmp_path_factory.mktemp("late")
    record = folder / "session.jsonl"
    with PluginProcess(seed=3, extra_args=("--allow-scripts",)) as plugin:
        outcomes = late_answer_session(
            wrapped(plugin, record, server=IN_ORDER), record, folder / "stderr"
        )
    assert outcomes[1][0] and "did not respond" in outcomes[1][1], outcomes
    assert '"stdout": "late\\n"' in outcomes[2][1], outcomes
    marks = late_marks(record)
    # run_python's own; the others, if the race marked any, each behind the one its call read.
    assert marks[0][2:] == ("run_python", None), marks
    assert all(behind is not None for *_, behind in marks[1:]), marks
    return record


def test_the_same_build_matches_with_the_late_answer_sent_late(read_in_order: Path) -> None:
    marks = late_marks(read_in_order)
    (row, number, _, _), behind = marks[0], marks[1:]
    status, out = mcp_verify(read_in_order, IN_ORDER)
    assert status == 0, out
    assert "mcp-verify: all 5 tool calls match" in out
    found = rows(out)
    assert "the stand-in sent it once the call had returned, as recorded" in found["run_python"]
    assert f"(#{row}) came late: after its call returned" in found["run_python"]
    assert "its recorded result is #" in found["create_layer"]
    assert "still waiting" not in out and "run ended" not in out
    line = (
        f"1 recorded GOLEM answer(s) came late, after their call returned (#{number} "
        "run_python): the stand-in sent 1 of them once their call had returned"
    )
    if behind:
        line += f"; {len(behind)} more came after their call returned only as the call read"
    assert line in out
    for late_row, _, tool, before in behind:
        assert f"(#{late_row}) came late: after its call returned (in " in found[tool]
        assert (
            f"request, only as the call read #{before}'s answer queued before it; the "
            "stand-in sent it as the plugin had, behind that one"
        ) in found[tool]

    status, out = mcp_verify(read_in_order, IN_ORDER, "--json")
    report = json.loads(out)
    assert status == 0 and report["ok"] is True
    served = [(late["row"], late["tool"], late["released_by"]) for late in report["standin_late"]]
    assert served == [(row, "run_python", "call")] + [
        (late_row, tool, "behind") for late_row, _, tool, _ in behind
    ]
    checks = {check["tool"]: check for check in report["checks"] if check["tool"]}
    assert "as recorded" in checks["run_python"]["played"][0]
    assert "cause" not in checks["run_python"]


def test_a_build_that_waits_longer_differs_with_the_cause_named(read_in_order: Path) -> None:
    """Waiting 5 s, longer than the recorded call (0.5 s) and the plugin (1.5 s) together:
    the stand-in hands the answer to the call still waiting, the build takes it in time, and
    the calls after read their own."""
    marks = late_marks(read_in_order)
    status, out = mcp_verify(read_in_order, IN_ORDER, GOLEM_TEST_GIVE_UP="5")
    assert status == 1, out
    found = rows(out)
    run_python = found["run_python"]
    assert "differs" in run_python
    assert "; this build's call was still waiting 2." in run_python
    assert (
        "s after it was sent, longer than the recorded call took and the plugin's time on top: "
        "the stand-in handed it then the answer the recorded call had given up on: "
        "result.content[0].text"
    ) in run_python
    assert "was handed its late answer in time" in found["create_layer"]
    assert "4 of 5 tool calls differ: run_python" in out
    assert "sent 0 of them once their call had returned (the rows say why not the others)" in out

    status, out = mcp_verify(read_in_order, IN_ORDER, "--json", GOLEM_TEST_GIVE_UP="5")
    report = json.loads(out)
    assert status == 1 and report["differing"][0] == "run_python"
    assert [late["released_by"] for late in report["standin_late"]] == ["latency"] + [
        "behind" for _ in marks[1:]
    ]
    checks = {check["tool"]: check for check in report["checks"] if check["tool"]}
    assert "this build's call was still waiting" in checks["run_python"]["cause"]
    assert checks["run_python"]["differences"]


def test_a_late_answer_under_the_last_call_is_sent_once_it_returned(tmp_path: Path) -> None:
    """No step follows the call: its return, read by mcp-verify, releases the answer all
    the same, and the row and the line under the table say so."""
    record = tmp_path / "session.jsonl"
    with PluginProcess(seed=3, extra_args=("--allow-scripts",)) as plugin:
        outcomes = late_answer_session(
            wrapped(plugin, record, server=IN_ORDER), record, tmp_path / "stderr", then=()
        )
    assert [failed for failed, _ in outcomes] == [False, True], outcomes
    [(row, number, tool, _)] = late_marks(record)
    status, out = mcp_verify(record, IN_ORDER)
    assert status == 0, out
    assert (f"the recorded answer to scripting.execute_python (#{row}) came late") in rows(out)[
        tool
    ]
    assert "the stand-in sent it once the call had returned, as recorded" in rows(out)[tool]
    assert (
        f"1 recorded GOLEM answer(s) came late, after their call returned (#{number} "
        "run_python): the stand-in sent 1 of them once their call had returned\n"
    ) in out


def test_a_server_that_drops_the_connection_matches_too(tmp_path: Path) -> None:
    """The server closes its connection when it gives up: the late answer, sent once the call
    returned, meets a closed connection, as it did."""
    record = tmp_path / "r.jsonl"
    delay = ("--fault", "delay:ms=1500,method=scene.create_layer,dir=c2s,times=1")
    with PluginProcess(seed=8) as plugin:
        outcomes = call_tools(
            wrapped(plugin, record, *delay, "--fault-seed", "1", server=TIMEOUTS),
            environment(),
            [("create_layer_within", {"name": "Late", "seconds": 0.3}), ("list_layers", {})],
        )
    assert [failed for failed, _ in outcomes] == [True, False], outcomes
    status, out = mcp_verify(record, TIMEOUTS)
    assert status == 0, out
    assert "as recorded" in rows(out)["create_layer_within"]


@pytest.fixture(scope="module")
def cut_while_idle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    record = tmp_path_factory.mktemp("idle") / "session.jsonl"
    with PluginProcess(seed=7) as plugin:
        outcomes = _calls_around(
            wrapped(plugin, record, "--idle-timeout", "1"),
            [("list_layers", {})],
            # The server's connection sits idle until the proxy closed it.
            lambda: _wait_for_line(record, '"kind":"close"', "idle for 1 s (--idle-timeout)"),
            [("create_layer", {"name": "after"}), ("list_layers", {})],
        )
    assert [failed for failed, _ in outcomes] == [False, True, False], outcomes
    return record


def test_the_same_build_matches_with_the_idle_connection_closed(cut_while_idle: Path) -> None:
    status, out = mcp_verify(cut_while_idle, SERVER_COMMAND)
    assert status == 0, out
    assert "mcp-verify: all 3 tool calls match" in out
    assert "no recorded answer" not in out
    assert (
        "the proxy had closed the server's idle GOLEM connection on main before this call "
        "(--idle-timeout); the stand-in closed it there too"
    ) in rows(out)["create_layer"]

    status, out = mcp_verify(cut_while_idle, SERVER_COMMAND, "--json")
    report = json.loads(out)
    assert status == 0 and report["ok"] is True and report["standin_misses"] == []
    assert report["standin_outage"] == []  # the plugin was there all along
    [closed] = report["standin_idle_close"]
    assert (closed["tool"], closed["route"], closed["recorded"], closed["closed"]) == (
        "create_layer",
        "main",
        1,
        1,
    )


def test_a_changed_build_still_differs_and_is_named(cut_while_idle: Path) -> None:
    status, out = mcp_verify(cut_while_idle, SERVER_COMMAND, GOLEM_TEST_SERVER_VARIANT="changed")
    assert status == 1, out
    assert "mcp-verify: 2 of 3 tool calls differ: list_layers" in out
    assert "match" in rows(out)["create_layer"]


def test_a_build_that_keeps_no_connection_is_said_so_under_the_table(
    cut_while_idle: Path,
) -> None:
    status, out = mcp_verify(cut_while_idle, SERVER_COMMAND, GOLEM_TEST_SERVER_VARIANT="keeps-none")
    said = "this build had none open there for the stand-in to close"
    assert status == 1, out  # its create_layer connects again: a request the call never sent
    assert said in rows(out)["create_layer"]
    assert (
        "the proxy closed an idle GOLEM connection (--idle-timeout) before 1 recorded tool "
        "call(s) (#"
    ) in out
    assert f" create_layer): {said}\n" in out
    assert "closed the server's there too" not in out
    status, out = mcp_verify(
        cut_while_idle, SERVER_COMMAND, "--json", GOLEM_TEST_SERVER_VARIANT="keeps-none"
    )
    [closed] = json.loads(out)["standin_idle_close"]
    assert status == 1 and (closed["recorded"], closed["closed"]) == (1, 0)
