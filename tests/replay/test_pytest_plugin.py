"""The pytest plugin, used by test files run through pytester: none and new modes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from golem_proxy.recording.format import read_recording
from golem_proxy.replay.index import load_exchanges
from golem_proxy.replay.pytest_plugin import _unused_text
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.pytester import plugin_args
from tests.support.traces import TraceBuilder

from .traces import modelling_session

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]


PLUGIN = plugin_args()


@pytest.fixture(autouse=True)
def _import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The inner pytest runs in a temporary directory: make it import this checkout.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


SESSION_TEST = """
import pytest
from golem_proxy.testing.client import GolemClient

@pytest.mark.golem_trace("session.jsonl", ignore=["scene.create_layer:params.name"])
def test_session(golem_replay):
    assert golem_replay.env["GOLEM_RHINO_PORT"] == str(golem_replay.port)
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        client.send_command("scene.create_layer", {"name": "fresh", "color": [200, 80, 40]})
        box = client.send_command(
            "geometry.create_box", {"corner": [0, 0, 0], "width": 40, "depth": 10, "height": 30})
        assert box["guid"].startswith("bd9c66b3")
        EXTRA
"""


def write_test(pytester: pytest.Pytester, extra: str = "pass") -> None:
    modelling_session(pytester.path / "session.jsonl")
    pytester.makepyfile(test_golem=SESSION_TEST.replace("EXTRA", extra))


def test_none_mode_replays_and_warns_about_unused(pytester: pytest.Pytester) -> None:
    write_test(pytester)
    result = pytester.runpytest_subprocess(*PLUGIN, "-W", "default")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*GolemUnusedExchangesWarning: *session.jsonl: 6 recorded exchanges unused*"]
    )


def test_none_mode_fails_the_test_listing_the_misses(pytester: pytest.Pytester) -> None:
    write_test(pytester, 'client.send_command("scene.delete_layer", {"name": "x"})')
    result = pytester.runpytest_subprocess(*PLUGIN)
    # The miss is a NOT_FOUND error inside the test; its report lists the misses (once: no
    # second failure at teardown).
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*golem replay of *session.jsonl: 1 request missed*",
            "*main scene.delete_layer: no recorded scene.delete_layer on main*",
        ]
    )


def test_new_mode_adds_missing_exchanges_from_the_live_plugin(pytester: pytest.Pytester) -> None:
    write_test(pytester, 'assert client.send_command("scene.list_layers")["layers"]')
    trace = pytester.path / "session.jsonl"
    before = len(read_recording(str(trace)).exchanges())
    with PluginProcess(seed=1) as plugin:
        result = pytester.runpytest_subprocess(
            *PLUGIN,
            "--golem-record=new",
            f"--golem-live={plugin.main}",
        )
    result.assert_outcomes(passed=1, warnings=1)
    exchanges = read_recording(str(trace)).exchanges()
    assert len(exchanges) == before + 1 and exchanges[-1].method == "scene.list_layers"
    # Now the trace has it: replay only passes. Appended last, it is answered ahead of the
    # sphere recorded before it and never sent: a warning (docs/replay.md).
    again = pytester.runpytest_subprocess(*PLUGIN, "-W", "default")
    again.assert_outcomes(passed=1, warnings=2)
    again.stdout.fnmatch_lines(["*main scene.list_layers ahead of #4 main geometry.create_sphere*"])


def test_new_mode_needs_a_live_plugin(pytester: pytest.Pytester) -> None:
    write_test(pytester)
    result = pytester.runpytest_subprocess(*PLUGIN, "--golem-record=new")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--golem-record=new needs --golem-live HOST:PORT*"])


def test_a_bad_live_address_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_test(pytester)
    result = pytester.runpytest_subprocess(
        *PLUGIN, "--golem-record=new", "--golem-live", "nonsense"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --golem-live: 'nonsense': expected HOST:PORT*"])


def write_idle_test(pytester: pytest.Pytester, name: str, trace_args: str) -> None:
    """``test_NAME.py`` holding ``test_NAME``, which replays ``@golem_trace(TRACE_ARGS)`` and
    makes no call."""
    source = (
        "import pytest\n\n"
        f"@pytest.mark.golem_trace({trace_args})\n"
        f"def test_{name}(golem_replay):\n"
        "    pass\n"
    )
    pytester.makepyfile(**{f"test_{name}": source})


def test_strict_unused_fails(pytester: pytest.Pytester) -> None:
    modelling_session(pytester.path / "session.jsonl")
    write_idle_test(pytester, "strict", '"session.jsonl", strict_unused=True')
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*8 recorded exchanges unused: #2 main scene.create_layer*"])


def test_all_mode_rerecords_the_trace_from_the_live_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_all="""
import pytest
from golem_proxy.testing.client import GolemClient

@pytest.mark.golem_trace("fresh.jsonl")
def test_layers(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        client.send_command("scene.create_layer", {"name": "Roof", "color": [1, 2, 3]})
        assert client.send_command("scene.list_layers")["layers"]
"""
    )
    with PluginProcess(seed=3) as plugin:
        result = pytester.runpytest_subprocess(
            *PLUGIN, "--golem-record=all", f"--golem-live={plugin.main}"
        )
    result.assert_outcomes(passed=1)
    trace = pytester.path / "fresh.jsonl"
    methods = [e.method for e in read_recording(str(trace)).exchanges()]
    assert methods == ["scene.create_layer", "scene.list_layers"]  # ping answered locally
    replayed = pytester.runpytest_subprocess(*PLUGIN)
    replayed.assert_outcomes(passed=1)


def _unused_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


RERECORD_TEST = """
import pytest
from golem_proxy.testing.client import GolemClient, RhinoCommandError

@pytest.mark.golem_trace("session.jsonl")
def test_rerecord(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        try:
            client.send_command("scene.list_layers")
        except RhinoCommandError:
            if SWALLOW:
                return
            raise
"""


@pytest.mark.parametrize("swallow", [False, True], ids=["test-fails", "test-swallows-the-error"])
def test_a_failed_rerecord_keeps_the_old_trace(pytester: pytest.Pytester, swallow: bool) -> None:
    """``--golem-record=all`` against a live plugin that is not there: the trace is not
    wiped, and the run says the old one is kept (also when the test itself passed)."""
    trace = pytester.path / "session.jsonl"
    modelling_session(trace)
    before = trace.read_bytes()
    pytester.makepyfile(test_rerecord=RERECORD_TEST.replace("SWALLOW", str(swallow)))
    result = pytester.runpytest_subprocess(
        *PLUGIN, "--golem-record=all", f"--golem-live=127.0.0.1:{_unused_port()}"
    )
    if swallow:  # the test passed, its trace was not re-recorded: an error at teardown
        result.assert_outcomes(passed=1, errors=1)
    else:
        result.assert_outcomes(failed=1)
    why = "1 request(s) did not reach the live plugin" if swallow else "the test failed"
    result.stdout.fnmatch_lines(
        [f"*re-recording *session.jsonl failed ({why}); the old trace is kept*"]
    )
    assert trace.read_bytes() == before
    assert sorted(p.name for p in pytester.path.iterdir() if "session" in p.name) == [
        "session.jsonl"
    ]  # nothing left aside


def test_a_missing_trace_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_idle_test(pytester, "missing", '"traces/nope.jsonl"')
    result = pytester.runpytest_subprocess(*PLUGIN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: golem_trace: no such trace: *traces/nope.jsonl "
            "(for test_missing.py::test_missing) (record one with --golem-record=new*"
        ]
    )
    assert "FileNotFoundError" not in result.stdout.str() + result.stderr.str()


def test_a_damaged_trace_fails_its_test_in_one_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "session.jsonl").write_text("not a recording\n")
    write_idle_test(pytester, "damaged", '"session.jsonl"')
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*golem_trace: cannot read *session.jsonl: *not a golem-proxy recording*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_miss_the_client_swallowed_fails_the_test_once(pytester: pytest.Pytester) -> None:
    write_test(
        pytester,
        """try:
            client.send_command("scene.delete_layer", {"name": "x"})
        except Exception:
            pass""",
    )
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*golem replay of *session.jsonl: 1 request missed*"])


def test_tests_sharing_a_trace_warn_once_about_what_none_used(pytester: pytest.Pytester) -> None:
    modelling_session(pytester.path / "session.jsonl")
    pytester.makepyfile(
        test_shared="""
import pytest
from golem_proxy.testing.client import GolemClient

TRACE = pytest.mark.golem_trace("session.jsonl", ignore=["scene.create_layer:params.name"])

@TRACE
def test_layer(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        client.send_command("scene.create_layer", {"name": "fresh", "color": [200, 80, 40]})

@TRACE
def test_nothing(golem_replay):
    pass
"""
    )
    result = pytester.runpytest_subprocess(*PLUGIN, "-W", "default")
    result.assert_outcomes(passed=2, warnings=1)
    # The layer exchange was used by one of the two: only the other seven are reported.
    result.stdout.fnmatch_lines(["*session.jsonl: 7 recorded exchanges unused: #3 *"])


def test_a_long_list_of_unused_exchanges_says_how_many_it_leaves_out(tmp_path: Path) -> None:
    """It named 20 of 28 and said nothing of the other 8."""
    path = tmp_path / "many.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        for number in range(28):
            trace.call("scene.list_layers", {"n": number}, {})
    loaded = load_exchanges(str(path))
    text = _unused_text({e.number: e for e in loaded.exchanges})
    assert text.startswith("28 recorded exchanges unused: #1 main scene.list_layers")
    assert text.endswith(", … and 8 more")
