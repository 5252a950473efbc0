"""`--golem-record=all` re-recording a trace that several tests name: the trace holds every
test's exchanges, in order, and is kept byte for byte when one of them fails."""

from __future__ import annotations

import json
import os
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

SHARED = """
import pytest
from golem_proxy.testing.client import GolemClient

TRACE = pytest.mark.golem_trace("shared.jsonl")

@TRACE
def test_layer(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        client.send_command("scene.create_layer", {"name": "LAYER", "color": [1, 2, 3]})

@TRACE
def test_box(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        box = client.send_command(
            "geometry.create_box", {"corner": [0, 0, 0], "width": 4, "depth": 1, "height": 3})
        assert box["guid"] and BOX_PASSES

@TRACE
def test_listing(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        assert "layers" in client.send_command("scene.list_layers")
"""

METHODS = ["scene.create_layer", "geometry.create_box", "scene.list_layers"]


@pytest.fixture(autouse=True)
def _import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner pytest runs in a temporary directory: make it import this checkout (and
    # what the outer one was given besides, pytest-xdist where it comes from there).
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))


@pytest.fixture(scope="module")
def live() -> Iterator[str]:
    with PluginProcess(seed=5) as plugin:
        yield str(plugin.main)


def _shared(pytester: pytest.Pytester, *, box_passes: bool = True) -> Path:
    """The three tests naming ``shared.jsonl``, which holds a recorded session to replace."""
    # A layer name of its own: the live plugin refuses one its document holds already.
    source = SHARED.replace("BOX_PASSES", str(box_passes)).replace("LAYER", pytester.path.name)
    pytester.makepyfile(test_shared=source)
    return modelling_session(pytester.path / "shared.jsonl")


def _rerecord(pytester: pytest.Pytester, live: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        *PLUGIN, "--golem-record=all", f"--golem-live={live}", *args
    )


def _left_aside(pytester: pytest.Pytester) -> list[str]:
    return sorted(p.name for p in pytester.path.iterdir() if p.name.startswith(".shared"))


def test_every_test_sharing_the_trace_re_records_its_part(
    pytester: pytest.Pytester, live: str
) -> None:
    trace = _shared(pytester)
    result = _rerecord(pytester, live)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["shared.jsonl: re-recorded by 3 tests (3 exchanges)"])
    assert [e.method for e in read_recording(str(trace)).exchanges()] == METHODS
    # Numbered on, one test after the other: no reader finds lines lost.
    lines = [json.loads(line) for line in trace.read_bytes().splitlines()[1:]]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    assert _left_aside(pytester) == []
    # It was cut down to the last test's exchanges: the other two then missed.
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=3)


def test_one_failing_test_keeps_the_old_trace_byte_for_byte(
    pytester: pytest.Pytester, live: str
) -> None:
    trace = _shared(pytester, box_passes=False)
    before = trace.read_bytes()
    result = _rerecord(pytester, live)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*golem_trace: re-recording *shared.jsonl failed (the test failed); "
            "the old trace is kept*",
            "shared.jsonl: kept as it was (test_shared.py::test_box: the test failed)",
        ]
    )
    assert trace.read_bytes() == before
    assert _left_aside(pytester) == []


def test_tests_deselected_or_skipped_add_nothing_and_the_summary_says_so(
    pytester: pytest.Pytester, live: str
) -> None:
    trace = _shared(pytester)
    pytester.makepyfile(
        test_skip="""
import pytest

@pytest.mark.golem_trace("shared.jsonl")
@pytest.mark.skip(reason="not today")
def test_later(golem_replay):
    pass
"""
    )
    result = _rerecord(pytester, live, "-k", "not box")
    result.assert_outcomes(passed=2, skipped=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "shared.jsonl: re-recorded by 2 tests (2 exchanges); not by "
            "test_shared.py::test_box (deselected), test_skip.py::test_later (skipped): "
            "their exchanges are gone"
        ]
    )
    methods = [e.method for e in read_recording(str(trace)).exchanges()]
    assert methods == ["scene.create_layer", "scene.list_layers"]


def test_a_run_stopped_before_the_last_test_keeps_the_trace(
    pytester: pytest.Pytester, live: str
) -> None:
    trace = _shared(pytester)
    before = trace.read_bytes()
    modelling_session(pytester.path / "other.jsonl")
    pytester.makepyfile(
        test_a_other="""
import pytest

@pytest.mark.golem_trace("other.jsonl")
def test_fails(golem_replay):
    assert False
"""
    )
    # The other trace's test fails between two tests of the shared one, and -x stops there.
    order = ["test_shared.py::test_layer", "test_a_other.py", "test_shared.py::test_listing"]
    result = _rerecord(pytester, live, "-x", *order)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "shared.jsonl: kept as it was (the run stopped before 1 test naming it ended)",
            "other.jsonl: kept as it was (test_a_other.py::test_fails: the test failed)",
        ],
        consecutive=True,
    )
    assert trace.read_bytes() == before


def test_pytest_xdist_workers_are_refused(pytester: pytest.Pytester, live: str) -> None:
    pytest.importorskip("xdist")
    _shared(pytester)
    result = _rerecord(pytester, live, "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --golem-record=all re-records against one live plugin, one test at a time: *"]
    )


def test_a_trace_also_a_session_recording_is_refused_at_collection(
    pytester: pytest.Pytester, live: str
) -> None:
    """golem_trace and golem_mcp_session each re-record a file whole: one naming the same file
    as the other would replace it, whichever ended last."""
    pytester.makepyfile(
        test_both="""
import sys
import pytest

@pytest.mark.golem_trace("shared.jsonl")
def test_replayed(golem_replay):
    pass

@pytest.mark.golem_mcp_session("shared.jsonl", command=[sys.executable, "-c", "pass"])
def test_session(golem_mcp_session):
    pass
"""
    )
    result = _rerecord(pytester, live)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*shared.jsonl is both a golem_trace*golem_mcp_session*"])
    assert not (pytester.path / "shared.jsonl").exists()


def test_a_session_recording_of_several_tests_is_refused_at_collection(
    pytester: pytest.Pytester, live: str
) -> None:
    """golem_mcp_session records its file whole, from the one test's run: two tests naming
    it would each replace it, the last to end winning, and the other's next replay failing.
    Replaying it from both stays allowed; re-recording it under ``all`` is refused, naming
    them, and the file is left as it was."""
    pytester.makepyfile(
        test_sessions="""
import sys
import pytest

COMMAND = [sys.executable, "-c", "pass"]

@pytest.mark.golem_mcp_session("session.jsonl", command=COMMAND)
def test_first(golem_mcp_session):
    pass

@pytest.mark.golem_mcp_session("session.jsonl", command=COMMAND)
def test_second(golem_mcp_session):
    pass
"""
    )
    (pytester.path / "session.jsonl").write_bytes(b"as it was\n")
    result = _rerecord(pytester, live)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*session.jsonl is the golem_mcp_session recording of 2 tests "
            "(test_sessions.py::test_first, test_sessions.py::test_second)*one of them "
            "selected (-k)*"
        ]
    )
    assert (pytester.path / "session.jsonl").read_bytes() == b"as it was\n"
