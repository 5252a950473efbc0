"""The ``golem_mcp_session`` fixture over a recording made with ``--redact``, and its record
modes, through pytester: the test's calls carry the real value (the recording holds
``«redacted»``), which must match and appear in no output and no file; a re-recording keeps
the recording's rules; a failed test leaves a good recording as it was."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.live.redact import REDACTED
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.pytester import plugin_args

from .mcp_helpers import ROOT, call_tools, environment, recorded_session, wrapped

pytest_plugins = ["pytester"]
PLUGIN = plugin_args()
SECRET = "Gehéim-层-QQ7X"
HIDDEN = "QQ7X"
"""The part of `SECRET` every form of it holds (JSON's ``\\u`` escapes keep ASCII as it is)."""
RULE = "tools/call:params.arguments.name"
CALLS = [("create_layer", {"name": SECRET}), ("list_layers", {})]

SESSION_TEST = f"""
import json
import os
import sys
import pytest

sys.path.insert(0, {str(ROOT / "tests" / "mcp_layer")!r})
from mcp_helpers import SERVER_COMMAND, call_tools, environment

# Read from a file: a failure quotes the lines of its test, which must not hold the value.
CALLS = json.loads(open(os.path.join(os.path.dirname(__file__), "calls.json")).read())

@pytest.mark.golem_mcp_session("session.jsonl", command=SERVER_COMMAND)
def test_layers(golem_mcp_session):
    call_tools(golem_mcp_session.command, environment(), CALLS)
    assert FAIL
"""


@pytest.fixture(autouse=True)
def _import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner pytest runs in a temporary directory: make it import this checkout.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@pytest.fixture(scope="module")
def redacted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`CALLS` recorded through ``golem-proxy mcp --redact`` the tool's ``name`` argument."""
    path = tmp_path_factory.mktemp("redacted") / "session.jsonl"
    with PluginProcess(seed=7) as plugin:
        call_tools(wrapped(plugin, path, "--redact", RULE), environment(), CALLS)
    text = path.read_text(encoding="utf-8")
    assert HIDDEN not in text and REDACTED in text
    return path


def write_test(
    pytester: pytest.Pytester, recording: Path, calls: list[object], fail: bool = False
) -> Path:
    stored = pytester.path / "session.jsonl"
    stored.write_bytes(recording.read_bytes())
    pytester.makepyfile(test_mcp=SESSION_TEST.replace("FAIL", repr(not fail)))
    (pytester.path / "calls.json").write_text(json.dumps(calls), encoding="utf-8")
    return stored


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def test_none_mode_matches_redacted_values_and_prints_none(
    pytester: pytest.Pytester, redacted: Path
) -> None:
    write_test(pytester, redacted, CALLS)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=1)
    # A call the recording does not hold, with the secret again: the failure names the
    # call, not the value (its GOLEM request is a miss, said without it too).
    more = [*CALLS, ("layer_report", {"name": SECRET})]
    write_test(pytester, redacted, more)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*golem_mcp_session *: 1 of 3 tool calls differ*"])
    assert "layer_report" in result.stdout.str()
    assert HIDDEN not in output(result)


def test_all_mode_rerecords_under_the_recording_rules(
    pytester: pytest.Pytester, redacted: Path
) -> None:
    stored = write_test(pytester, redacted, CALLS)
    with PluginProcess(seed=7) as plugin:
        result = pytester.runpytest_subprocess(
            *PLUGIN, "--golem-record=all", f"--golem-live={plugin.main}"
        )
    result.assert_outcomes(passed=1)
    assert stored.read_bytes() != redacted.read_bytes()  # recorded afresh
    header = json.loads(stored.read_text(encoding="utf-8").splitlines()[0])
    assert header["redact"] == [RULE]
    assert [call.tool for call in read_tool_calls(str(stored))] == ["create_layer", "list_layers"]
    assert HIDDEN not in stored.read_text(encoding="utf-8")
    assert HIDDEN not in output(result)


def test_a_failed_test_leaves_the_recording_and_says_where_its_run_went(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    calls = [("list_layers", {}), ("create_layer", {"name": "A"})]
    good = recorded_session(tmp_path / "good.jsonl", calls)
    stored = write_test(pytester, good, calls[:1], fail=True)
    with PluginProcess(seed=7) as plugin:
        result = pytester.runpytest_subprocess(
            *PLUGIN, "--golem-record=all", f"--golem-live={plugin.main}"
        )
    result.assert_outcomes(failed=1)
    assert stored.read_bytes() == good.read_bytes()
    said = re.search(
        r"the test failed, so \S*session.jsonl was not recorded \(the old one is kept\); "
        r"this run's recording: (\S+)",
        result.stdout.str(),
    )
    assert said is not None, result.stdout.str()
    aside = Path(said[1])
    try:
        assert [call.tool for call in read_tool_calls(str(aside))] == ["list_layers"]
    finally:
        aside.unlink()
