"""The ``golem_mcp_session`` fixture's stand-in serves each tool call its test's client makes
from the GOLEM exchanges recorded under that same call, as `mcp-verify`'s does: the wrapper
it gives the test tells it each ``tools/call`` as it passes (``--call-feed``). A build whose
``create_layer`` now lists the layers first fails naming ``create_layer``, its arguments and
the request its recorded call never sent; before, ``create_layer`` took the answer recorded
under ``list_layers``, and the failure named no call, only a ``scene.list_layers`` whose
answers were used up."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.testing.pytester import plugin_args

from .mcp_helpers import ROOT, recorded_session

pytest_plugins = ["pytester"]
PLUGIN = plugin_args()
CALLS = [("create_layer", {"name": "A"}), ("list_layers", {})]

INNER = f"""
import sys
import pytest

sys.path.insert(0, {str(ROOT / "tests" / "mcp_layer")!r})
from mcp_helpers import SERVER_COMMAND, call_tools, environment

@pytest.mark.golem_mcp_session("session.jsonl", command=SERVER_COMMAND)
def test_layers(golem_mcp_session):
    call_tools(golem_mcp_session.command, environment(), CALLS)
"""


@pytest.fixture(autouse=True)
def _import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded_session(tmp_path_factory.mktemp("call-scope") / "session.jsonl", CALLS)


def run_inner(
    pytester: pytest.Pytester, recording: Path, calls: object = CALLS
) -> pytest.RunResult:
    (pytester.path / "session.jsonl").write_bytes(recording.read_bytes())
    pytester.makepyfile(test_mcp=INNER.replace("CALLS", repr(calls)))
    return pytester.runpytest_subprocess(*PLUGIN)


def test_a_call_that_sends_another_calls_request_is_the_one_named(
    pytester: pytest.Pytester, recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOLEM_TEST_SERVER_VARIANT", "lists-first")
    result = run_inner(pytester, recording)
    result.assert_outcomes(failed=1)
    created, listed = read_tool_calls(str(recording))
    text = result.stdout.str()
    assert "the recording has no answer for" in text, text
    said = next(line for line in text.splitlines() if " sent scene.list_layers " in line)
    assert f'#{created.number} create_layer {{"name": "A"}} sent scene.list_layers {{}}' in said
    assert "the recorded call never sent scene.list_layers" in said
    assert f"(recorded under #{listed.number} list_layers)" in said
    # list_layers got its own recorded answer: no miss names it, and its result matches.
    assert "list_layers {} sent" not in text
    assert "already answered" not in text


def test_a_call_the_recording_lacks_is_served_no_other_calls_answer(
    pytester: pytest.Pytester, recording: Path
) -> None:
    # layer_report is no recorded call: its scene.create_layer is create_layer's, not its.
    result = run_inner(pytester, recording, [("layer_report", {"name": "A"}), *CALLS])
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    said = next(line for line in text.splitlines() if " sent scene.create_layer " in line)
    assert 'layer_report {"name": "A"} (not in the recording) sent scene.create_layer' in said
    assert "no recorded call is this one, and outside any tool call the recording never" in said
    assert "create_layer {} sent" not in text
    assert "  layer_report: called now, not in the recording" in text


def test_the_same_build_still_passes(pytester: pytest.Pytester, recording: Path) -> None:
    run_inner(pytester, recording).assert_outcomes(passed=1)
