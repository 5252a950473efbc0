"""`--golem-record=new` appending to a trace a user edited or a writer left cut short: the
trace is never destroyed, and reads after the append wherever it read before."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.pytester import plugin_args

from .traces import modelling_session

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = plugin_args()

ONE_NEW_CALL = """
import pytest
from golem_proxy.testing.client import GolemClient

@pytest.mark.golem_trace("session.jsonl")
def test_one_new_call(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        assert client.send_command("scene.list_layers", {})["layers"]
"""


@pytest.fixture(autouse=True)
def _import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner pytest runs in a temporary directory: make it import this checkout.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@pytest.fixture(scope="module")
def live() -> Iterator[str]:
    with PluginProcess(seed=1) as plugin:
        yield str(plugin.main)


def _trace(pytester: pytest.Pytester) -> tuple[Path, bytes, int]:
    """The sample trace, its bytes, and how many exchanges it holds."""
    trace = modelling_session(pytester.path / "session.jsonl")
    pytester.makepyfile(test_append=ONE_NEW_CALL)
    return trace, trace.read_bytes(), len(read_recording(str(trace)).exchanges())


def _record_new(pytester: pytest.Pytester, live: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        *PLUGIN, "-W", "default", "--golem-record=new", f"--golem-live={live}"
    )


def _appended_and_replayed(pytester: pytest.Pytester, trace: Path, before: int) -> None:
    """The trace holds every exchange it held and the new one, and replays the test alone."""
    exchanges = read_recording(str(trace)).exchanges()
    assert len(exchanges) == before + 1 and exchanges[-1].method == "scene.list_layers"
    again = pytester.runpytest_subprocess(*PLUGIN)
    again.assert_outcomes(passed=1)


def test_a_last_line_without_its_newline_is_terminated(
    pytester: pytest.Pytester, live: str
) -> None:
    trace, data, before = _trace(pytester)
    trace.write_bytes(data[:-1])  # an editor that strips the final newline
    _record_new(pytester, live).assert_outcomes(passed=1, warnings=1)
    assert trace.read_bytes().startswith(data)
    _appended_and_replayed(pytester, trace, before)


def test_blank_lines_take_no_number(pytester: pytest.Pytester, live: str) -> None:
    trace, data, before = _trace(pytester)
    lines = data.splitlines(keepends=True)
    trace.write_bytes(b"".join([*lines[:4], b"\n", *lines[4:], b"\n"]))
    result = _record_new(pytester, live)
    result.assert_outcomes(passed=1, warnings=1)
    _appended_and_replayed(pytester, trace, before)
    # The new lines go on from the last number: no reader finds lines lost.
    shown = pytester.run(sys.executable, "-m", "golem_proxy", "show", str(trace))
    assert shown.ret == 0 and "seq" not in shown.stderr.str()


def test_a_cut_last_line_is_left_out_and_the_old_file_kept(
    pytester: pytest.Pytester, live: str
) -> None:
    trace, data, before = _trace(pytester)
    cut = data[:-40]  # the last line cut short, as a killed writer leaves it
    trace.write_bytes(cut)
    result = _record_new(pytester, live)
    result.assert_outcomes(passed=1, warnings=2)
    result.stdout.fnmatch_lines(
        [
            "*GolemTraceWarning: *session.jsonl: its last line was cut short (* bytes without "
            "a newline*; the new exchanges were appended without it, the old file is kept as "
            "*session.jsonl.before-append*"
        ]
    )
    assert Path(f"{trace}.before-append").read_bytes() == cut
    assert trace.read_bytes().startswith(cut[: cut.rfind(b"\n") + 1])
    _appended_and_replayed(pytester, trace, before)


def test_a_trace_the_reader_refuses_is_left_as_it_was(pytester: pytest.Pytester, live: str) -> None:
    trace, _, _ = _trace(pytester)
    # Damaged after the test loaded it, its final newline gone too: whether its last line
    # reads cannot be told, so the append is refused in one line, nothing written.
    pytester.makeconftest(
        "import pathlib\n"
        "def pytest_runtest_teardown(item):\n"
        "    path = pathlib.Path('session.jsonl')\n"
        "    lines = path.read_bytes().splitlines(keepends=True)\n"
        "    path.write_bytes(b''.join([*lines[:3], b'{not json\\n', *lines[3:]])[:-1])\n"
    )
    result = _record_new(pytester, live)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*golem_trace: cannot write *session.jsonl (*session.jsonl: line 4: not JSON*"]
    )
    assert b"{not json\n" in trace.read_bytes() and b"list_layers" not in trace.read_bytes()


def test_a_trace_whose_rules_cannot_be_read_is_not_rerecorded_without_them(
    pytester: pytest.Pytester, live: str
) -> None:
    trace, data, _ = _trace(pytester)
    first, rest = data.split(b"\n", 1)
    header = json.loads(first)
    header["redact"] = ["scene.create_layer:params.name", "..."]
    trace.write_bytes(json.dumps(header).encode() + b"\n" + rest)
    before = trace.read_bytes()
    result = pytester.runpytest_subprocess(*PLUGIN, "--golem-record=all", f"--golem-live={live}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ['*golem_trace: cannot read *session.jsonl: *redaction rule "..." has no path*']
    )
    assert trace.read_bytes() == before
