"""The pytest plugin's ``golem_mcp_session`` fixture, run through pytester: a test drives the
test FastMCP server with the `mcp` stdio client through the command the fixture gives, and
the plugin checks its tool calls against a recording (``none``) or records them from the
headless plugin (``new``, ``all``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.pytester import plugin_args

from .mcp_helpers import ROOT, recorded_session
from .session_fixture_run import CALLS, write_test

pytest_plugins = ["pytester"]
PLUGIN = plugin_args()


@pytest.fixture(autouse=True)
def _import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner pytest runs in a temporary directory: make it import this checkout.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session recorded through ``golem-proxy mcp`` with the headless plugin."""
    return recorded_session(tmp_path_factory.mktemp("fixture") / "session.jsonl", CALLS)


def test_none_mode_passes_a_session_that_matches(
    pytester: pytest.Pytester, recording: Path
) -> None:
    write_test(pytester, recording)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=1)


def test_none_mode_fails_a_changed_build_naming_the_tool(
    pytester: pytest.Pytester, recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOLEM_TEST_SERVER_VARIANT", "changed")
    write_test(pytester, recording)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*golem_mcp_session *session.jsonl: 1 of 3 tool calls differ*",
            "*list_layers #*: result.content?0?.text.layers*",
        ]
    )
    write_test(pytester, recording, 'ignore=["list_layers:result"]')
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=1)


def test_none_mode_without_a_recording_says_how_to_make_one(pytester: pytest.Pytester) -> None:
    write_test(pytester, None)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no such recording: *session.jsonl (record one with*"])


def test_new_mode_records_a_missing_session_then_none_checks_it(
    pytester: pytest.Pytester,
) -> None:
    write_test(pytester, None)
    with PluginProcess(seed=7) as plugin:
        result = pytester.runpytest_subprocess(
            *PLUGIN,
            "--golem-record=new",
            "--golem-live",
            str(plugin.main),
            "--golem-live-gh",
            str(plugin.gh),
        )
    result.assert_outcomes(passed=1)
    stored = pytester.path / "session.jsonl"
    assert [call.tool for call in read_tool_calls(str(stored))] == [name for name, _ in CALLS]
    header = json.loads(stored.read_text(encoding="utf-8").splitlines()[0])
    assert {route["name"] for route in header["routes"]} == {"main", "gh", "mcp"}
    # No plugin now: the recording stands in for it.
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=1)


ONE_MORE_TEST = f"""
import sys
import pytest

sys.path.insert(0, {str(ROOT / "tests" / "mcp_layer")!r})
from mcp_helpers import SERVER_COMMAND, call_tools, environment

@pytest.mark.golem_mcp_session("session.jsonl", command=SERVER_COMMAND)
def test_layers(golem_mcp_session):
    call_tools(golem_mcp_session.command, environment(), {[("gh_ping", {}), *CALLS]!r})
"""


def test_a_call_made_first_is_named_and_the_others_by_the_recording_s_rows(
    pytester: pytest.Pytester, recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that makes one call more first, with a build whose list_layers answers
    otherwise: the extra call is named as such, and the changed one by its row in the user's
    recording (the failure named rows of the fixture's own recording, deleted after the test,
    and said every call after the extra one differed)."""
    monkeypatch.setenv("GOLEM_TEST_SERVER_VARIANT", "changed")
    (pytester.path / "session.jsonl").write_bytes(recording.read_bytes())
    pytester.makepyfile(test_mcp=ONE_MORE_TEST)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(failed=1)
    listed = read_tool_calls(str(recording))[0]
    assert listed.tool == "list_layers"
    result.stdout.fnmatch_lines(
        [
            "*golem_mcp_session *session.jsonl: 2 of 4 tool calls differ",
            "  gh_ping: called now, not in the recording",
            f"  list_layers #{listed.number}: result.content?0?.text.layers*",
        ]
    )
