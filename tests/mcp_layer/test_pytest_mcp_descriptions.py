"""The ``golem_mcp_session`` fixture compares what the server tells the model (``initialize``,
``tools/list``) as ``mcp-verify`` does: a build whose tool is described otherwise fails the
test though every tool call matches. Run through pytester with the test's own `mcp` stdio
client, Rhino stood in by a session recorded from the headless plugin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.testing.pytester import plugin_args

from .mcp_helpers import ROOT, recorded_session
from .session_fixture_run import CALLS, write_test

pytest_plugins = ["pytester"]
PLUGIN = plugin_args()


@pytest.fixture(autouse=True)
def _import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded_session(tmp_path_factory.mktemp("described") / "session.jsonl", CALLS)


def test_a_build_whose_tools_list_changed_fails_naming_the_tool(
    pytester: pytest.Pytester, recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOLEM_TEST_SERVER_VARIANT", "described-otherwise")
    write_test(pytester, recording)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*golem_mcp_session *session.jsonl: what the server tells the model differs: "
            "tools/list*",
            "*tools/list: result.tools.list_layers.description*All layers.*",
        ]
    )
    result.stdout.no_fnmatch_line("*tool calls differ*")
    # Left out as mcp-verify leaves it out: METHOD:PATH.
    write_test(pytester, recording, 'ignore=["tools/list:result.tools.*.description"]')
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=1)


def test_the_same_build_passes(pytester: pytest.Pytester, recording: Path) -> None:
    write_test(pytester, recording)
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=1)


def as_asked(recording: Path, asked: str, answered: str) -> Path:
    """A copy of ``recording`` whose ``initialize`` asked for protocol version ``asked`` and
    was answered ``answered``: as a client of another SDK release recorded it."""
    lines = []
    for line in recording.read_text(encoding="utf-8").splitlines():
        record: dict[str, Any] = json.loads(line)
        msg = record.get("msg")
        if record.get("route") == "mcp" and isinstance(msg, dict):
            if msg.get("method") == "initialize":
                msg["params"]["protocolVersion"] = asked
            elif isinstance(msg.get("result"), dict) and "protocolVersion" in msg["result"]:
                msg["result"]["protocolVersion"] = answered
        lines.append(json.dumps(record, separators=(",", ":")))
    edited = recording.with_name(f"asked-{asked}-{answered}.jsonl")
    edited.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return edited


def test_a_client_that_asks_another_protocol_version_passes_the_same_build(
    pytester: pytest.Pytester, recording: Path
) -> None:
    # Recorded by an older `mcp` SDK: it asked 2025-03-26 and the server answered that; the
    # test's client now asks the version of its own release, and gets it.
    write_test(pytester, as_asked(recording, "2025-03-26", "2025-03-26"))
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=1)


def test_another_protocol_version_for_the_same_request_fails(
    pytester: pytest.Pytester, recording: Path
) -> None:
    # Asked what the client asks now, answered otherwise: the build chose another version.
    live = json.loads(
        next(line for line in recording.read_text().splitlines() if '"initialize"' in line)
    )["msg"]["params"]["protocolVersion"]
    write_test(pytester, as_asked(recording, live, "2025-03-26"))
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*what the server tells the model differs: initialize*",
            f"*initialize: result.protocolVersion ('2025-03-26' vs '{live}')*",
        ]
    )
