"""A recording the proxy could not close (``kill -9``), or that lost lines, says so when it is
read: ``show`` and ``check`` print one line on stderr, and a whole recording prints none. A
proxy stopped in order ends its recording with a ``session-end`` line."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.traces import TraceBuilder

from .test_log_cli import ProxyProcess

NOTE = re.compile(
    r"the proxy stopped without closing this recording; the last (\d+) ms may be missing "
    r"\(no session-end line; 1 connection never closed\)"
)


plugin = plugin_fixture(seed=2)


def wait_for_lines(path: Path, kind: str, count: int, timeout: float = 30) -> None:
    """Poll the recording until it holds ``count`` lines of ``kind`` (flushed to disk)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(f'"kind":"{kind}"'.encode()) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never had {count} {kind} lines")


def test_a_killed_proxy_leaves_a_recording_that_says_so(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    trace = tmp_path / "killed.jsonl"
    proxy = ProxyProcess(tmp_path, plugin.main, "--record", str(trace))
    try:
        with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
            for _ in range(3):
                client.send_command("ping")
            wait_for_lines(trace, "exchange", 4)  # the connect's ping and three more
            proxy.process.kill()
            proxy.process.wait(30)
    finally:
        proxy.kill()
    for command in ("show", "check"):
        done = run_cli(command, str(trace))
        assert done.returncode in (0, 1), done.stderr
        notes = [line for line in done.stderr.splitlines() if NOTE.search(line)]
        assert len(notes) == 1, done.stderr
        assert NOTE.search(notes[0]).group(1) == "100"  # type: ignore[union-attr]


@pytest.mark.parametrize("observer", ["child-process", "in-process"])
def test_a_proxy_stopped_with_ctrl_c_ends_its_recording_with_a_session_end_line(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    trace = tmp_path / "stopped.jsonl"
    proxy = ProxyProcess(tmp_path, plugin.main, "--record", str(trace), "--observer", observer)
    try:
        client = GolemClient("127.0.0.1", proxy.port, timeout=20)
        client.connect()
        for _ in range(3):
            client.send_command("ping")
        wait_for_lines(trace, "exchange", 4)  # the connect's ping and three more
        # A connection still open at the stop: the proxy closes it and says so.
        assert proxy.stop() == 0
        client.close()
    finally:
        proxy.kill()
    lines = trace.read_bytes().splitlines()
    header, last = json.loads(lines[0]), json.loads(lines[-1])
    assert header["ends_with_session_end"] is True
    assert last["kind"] == "session-end"
    assert last["reason"] == "stopped by SIGINT"
    assert (last["exchanges"], last["errors"], last["violations"]) == (4, 0, 0)
    assert last["unanswered"] == 0 and last["not_recorded"] == 0
    assert last["seq"] == len(lines) - 1  # after every other line
    before = [json.loads(line) for line in lines[1:-1]]
    assert any(line["kind"] == "close" for line in before)
    assert last["t"] >= max(line["t"] for line in before)
    for command in ("show", "check", "stats"):
        done = run_cli(command, str(trace))
        assert done.returncode == 0, done.stderr
        assert done.stderr == "", command


def test_a_recording_closed_properly_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "closed.jsonl"
    with TraceBuilder.create(str(path)) as builder:
        builder.call("ping", result={"alive": True})
    for command in ("show", "check", "stats"):
        done = run_cli(command, str(path))
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""


def test_lines_lost_from_a_recording_are_noted_once(tmp_path: Path) -> None:
    path = tmp_path / "lost.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        for _ in range(5):
            trace.call("ping", {}, {"alive": True})
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:6] + lines[9:]))  # a whole exchange's three lines
    expected = (
        f"note: {path}: line 7: seq jumps from 5 to 9 (3 lines lost or out of order); "
        "flows near it may be wrong\n"
    )
    for command in ("show", "stats", "check"):
        done = run_cli(command, str(path))
        assert done.returncode in (0, 1), done.stderr
        assert done.stderr == expected, command
    whole = tmp_path / "whole.jsonl"
    with TraceBuilder.create(str(whole)) as trace:
        trace.call("ping", {}, {"alive": True})
    assert run_cli("show", str(whole)).stderr == ""


def test_times_that_go_back_are_noted_once(tmp_path: Path) -> None:
    path = tmp_path / "back.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        for _ in range(3):
            trace.call("ping", {}, {"alive": True})
    lines = path.read_bytes().splitlines(keepends=True)
    # The second answer (line 7) is recorded with a time before the first answer's.
    lines[6] = re.sub(rb'"t":[0-9.e-]+', b'"t":0.0001', lines[6], count=1)
    path.write_bytes(b"".join(lines))
    done = run_cli("show", str(path))
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        rf"note: {re.escape(str(path))}: line 7: t goes back from \d+\.\d{{6}} to 0\.000100 s "
        r"in connection 1's s2c stream \(lines out of order, or times changed\); flows near it "
        r"may be wrong\n",
        done.stderr,
    ), done.stderr
