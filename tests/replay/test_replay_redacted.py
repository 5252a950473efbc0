"""Replaying a session recorded with ``--redact`` (through ``golem-proxy mcp``, so its GOLEM
requests hold the tool call's argument as an echo): the live client sends the real value,
which must match the recorded ``«redacted»`` and appear in nothing the replay prints or
writes: its summary, its report, a miss's message, what it records of the live plugin (the
``replay`` command as a subprocess, and the pytest plugin's ``golem_replay`` in its record
modes through pytester)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from golem_proxy.live.redact import REDACTED
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.pytester import plugin_args
from tests.mcp_layer.mcp_helpers import call_tools, environment, wrapped

from .test_cli import replaying

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = plugin_args()
SECRET = "Gehéim-层-QQ7X"
HIDDEN = "QQ7X"
"""The part of `SECRET` every form of it holds (JSON's ``\\u`` escapes keep ASCII as it is)."""
TOOL_RULE = "tools/call:params.arguments.name"


def redacted_session(path: Path, *rules: str) -> Path:
    """``create_layer(SECRET)`` and ``list_layers`` through ``golem-proxy mcp --redact``: the
    GOLEM request holds ``«redacted»`` where the name was (an echo of the tool's argument)."""
    options = [word for rule in rules for word in ("--redact", rule)]
    with PluginProcess(seed=7) as plugin:
        call_tools(
            wrapped(plugin, path, *options),
            environment(),
            [("create_layer", {"name": SECRET}), ("list_layers", {})],
        )
    text = path.read_text(encoding="utf-8")
    assert HIDDEN not in text and REDACTED in text
    return path


@pytest.fixture(scope="module")
def redacted_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return redacted_session(tmp_path_factory.mktemp("redacted") / "session.jsonl", TOOL_RULE)


def test_replay_matches_a_redacted_value_and_prints_no_live_one(
    redacted_trace: Path, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    new = tmp_path / "new.jsonl"
    with PluginProcess(seed=7) as plugin:
        options = ["--report", str(report), "--record-new", str(new)]
        with replaying(str(redacted_trace), *options, "--on-miss", f"forward={plugin.main}") as (
            process,
            ready,
        ):
            with GolemClient(ready[1], int(ready[2])) as client:
                # Recorded with the name «redacted»: served from the trace, not forwarded.
                served = client.send_command("scene.create_layer", {"name": SECRET})
                # Not recorded: forwarded, and its answer names the layer (the secret).
                live = client.send_command("scene.create_layer", {"name": SECRET, "locked": True})
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0, stderr
    assert served["full_path"] == REDACTED  # what the recording holds
    assert live["full_path"] == SECRET  # the client gets the live answer as it came
    assert "1 call matched with redacted values" in stderr
    assert "1 missed (1 of them forwarded)" in stderr
    summary = json.loads(report.read_text(encoding="utf-8"))
    assert summary["redacted_matches"] == 1  # of 2 served: the ping on connect is the other
    assert "differs at params.locked (absent vs true)" in summary["misses"][0]["message"]
    recorded = read_recording(str(new))
    assert recorded.header.redact == (TOOL_RULE,)
    [exchange] = recorded.exchanges()
    assert json.loads(exchange.request.payload)["params"]["name"] == REDACTED
    assert json.loads(exchange.response.payload)["result"]["full_path"] == REDACTED
    for text in (stderr, report.read_text(encoding="utf-8"), new.read_text(encoding="utf-8")):
        assert HIDDEN not in text


def test_a_secret_learned_after_a_miss_leaves_that_miss_in_the_summary_and_report(
    redacted_trace: Path, tmp_path: Path
) -> None:
    # The build renames the param first: a miss quoting the live value, before anything says
    # it is a secret; then the recorded «redacted» matches it, and from then on it is one.
    report = tmp_path / "report.json"
    with replaying(str(redacted_trace), "--report", str(report)) as (process, ready):
        with GolemClient(ready[1], int(ready[2])) as client:
            # The client's own error quotes the value it sent (nothing said it was a secret
            # yet): kept out of this test's output.
            with pytest.raises(RhinoCommandError):
                client.send_command("scene.create_layer", {"layer_name": SECRET})
            served = client.send_command("scene.create_layer", {"name": SECRET})
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0, stderr.replace(SECRET, REDACTED)
    assert served["full_path"] == REDACTED
    # Each check a bool: a failing one prints no text that may hold the secret.
    written = report.read_text(encoding="utf-8")
    [miss] = json.loads(written)["misses"]
    hidden = f"differs at params.layer_name (absent vs '{REDACTED}')" in miss["message"]
    assert hidden, "the miss quotes the live value"
    on_stderr, in_report = HIDDEN in stderr, HIDDEN in written
    assert not on_stderr and not in_report, "the secret is printed or written"


GOLEM_TEST = f"""
import pytest
from golem_proxy.testing.client import GolemClient

@pytest.mark.golem_trace("session.jsonl")
def test_layers(golem_replay):
    with GolemClient(golem_replay.host, golem_replay.port) as client:
        client.send_command("scene.create_layer", {{"name": {SECRET!r}}})
        client.send_command(SECOND)
"""
SECOND = {
    # Served from the trace (its «redacted» name matched), then a request it does not hold,
    # forwarded: the plugin's answer names the layer.
    "new": f'"scene.create_layer", {{"name": {SECRET!r}, "locked": True}}',
    # Both live: the layer created, then listed by name.
    "all": '"scene.list_layers"',
}


@pytest.mark.parametrize("mode", ["new", "all"])
def test_golem_replay_records_under_the_trace_rules(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """``new`` appends what the live plugin answered, ``all`` records afresh: either way
    redacted as the trace was (``new``: the name the recorded «redacted» matched is hidden
    where it comes back; ``all``: the trace's rule on the GOLEM request applies)."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    rules = (TOOL_RULE,) if mode == "new" else (TOOL_RULE, "scene.create_layer:params.name")
    trace = redacted_session(pytester.path / "session.jsonl", *rules)
    pytester.makepyfile(test_golem=GOLEM_TEST.replace("SECOND", SECOND[mode]))
    with PluginProcess(seed=7) as plugin:
        result = pytester.runpytest_subprocess(
            *PLUGIN, f"--golem-record={mode}", f"--golem-live={plugin.main}"
        )
    result.assert_outcomes(passed=1)
    recorded = read_recording(str(trace))
    assert recorded.header.redact == rules
    layers = [e for e in recorded.exchanges() if e.method == "scene.create_layer"]
    assert len(layers) == (2 if mode == "new" else 1)  # new: the recorded one and the new one
    for exchange in layers:
        assert json.loads(exchange.request.payload)["params"]["name"] == REDACTED
    listed = [e for e in recorded.exchanges() if e.method == "scene.list_layers"]
    names = [layer["name"] for layer in json.loads(listed[-1].response.payload)["result"]["layers"]]
    assert names == ["Default", REDACTED]
    assert HIDDEN not in trace.read_text(encoding="utf-8")
    assert HIDDEN not in result.stdout.str() + result.stderr.str()
