"""``golem-proxy mcp`` stopped by its MCP client in the middle of a tool call, the way the
Python MCP SDK's stdio client stops a server: stdin closed, 2 s, SIGTERM to the wrapper's
process group, 2 s, SIGKILL. The tool's GOLEM call is still waiting for the plugin
(``debug.sleep``), so the server does not exit when its stdin ends. The wrapper must end its
recording (a ``session-end`` line, every connection closed, saying why) well within the
SDK's grace after the SIGTERM, with either observer; and when it is killed outright, the
observing process's closing line must not read as if the recording were whole."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Optional

import pytest

from golem_proxy.events import ConnectionClosed, ConnectionOpened, SessionEnded
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.live.observer_child_helpers import wait_for
from tests.support.cli_helpers import reap

from .mcp_helpers import INITIALIZE, ROOT, environment, rpc_line

SERVER = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_midcall.py")]
SDK_GRACE = 2.0
"""The Python MCP SDK's wait after closing stdin, and again after its SIGTERM, before the
next step (`mcp.client.stdio.PROCESS_TERMINATION_TIMEOUT`)."""
SLEEP_CALL = rpc_line(
    {
        "id": 1,
        "method": "tools/call",
        "params": {"name": "wait_in_rhino", "arguments": {"seconds": 15}},
    }
)


@pytest.fixture
def plugin() -> Iterator[PluginProcess]:
    with PluginProcess(seed=7, extra_args=("--debug-methods",)) as started:
        yield started


@contextlib.contextmanager
def _mid_call(
    plugin: PluginProcess,
    record: Path,
    stderr: Path,
    observer: str,
    server: Sequence[str] = SERVER,
    call: bool = True,
) -> Iterator[subprocess.Popen[bytes]]:
    """The wrapper, started as the SDK starts a server (a session of its own: the SDK signals
    its process group), initialized, with ``wait_in_rhino`` in flight (its GOLEM request
    recorded) unless not to ``call``."""
    command = [
        sys.executable, "-m", "golem_proxy", "mcp",
        "--upstream", str(plugin.main), "--gh-upstream", str(plugin.gh),
        "--record", str(record), "--observer", observer, "--", *server,
    ]  # fmt: skip
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            cwd=ROOT,
            env=environment(),
            start_new_session=True,
        )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        assert b'"id":0' in _read_line(process), stderr.read_text()
        process.stdin.write(rpc_line({"method": "notifications/initialized"}))
        if call:
            process.stdin.write(SLEEP_CALL)
        process.stdin.flush()
        wanted = '"method":"debug.sleep"' if call else '"method":"notifications/initialized"'
        wait_for(lambda: record.exists() and wanted in record.read_text(), what=wanted)
        yield process
    finally:
        _kill_and_reap(process)


def _kill_and_reap(process: subprocess.Popen[bytes]) -> None:
    """Kill the wrapper's process group (the server's too, were it left), reap it, close
    its pipes."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    reap(process)
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _read_line(process: subprocess.Popen[bytes], timeout: float = 20.0) -> bytes:
    """One line of the wrapper's stdout, within ``timeout``."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "no answer from the server"
    return process.stdout.readline()


def _sdk_stop(process: subprocess.Popen[bytes]) -> Optional[float]:
    """Stop ``process`` as the SDK does; returns how long it ran on after the SIGTERM (None:
    not by then; SIGKILLed at the end of the grace, as the SDK does)."""
    assert process.stdin is not None
    process.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(SDK_GRACE)
        return 0.0
    os.killpg(process.pid, signal.SIGTERM)
    signalled = time.monotonic()
    try:
        process.wait(SDK_GRACE)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None
    return time.monotonic() - signalled


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_the_sdks_shutdown_mid_call_leaves_an_ended_recording(
    tmp_path: Path, plugin: PluginProcess, observer: str
) -> None:
    record, stderr = tmp_path / "r.jsonl", tmp_path / "stderr"
    with _mid_call(plugin, record, stderr, observer) as process:
        took = _sdk_stop(process)
    assert took is not None, "still running at the end of the SDK's grace, and killed"
    assert took < SDK_GRACE
    # The observing process ends the recording after the wrapper's exit at the latest.
    closing = "golem-proxy mcp: recorded "
    wait_for(lambda: closing in stderr.read_text(), 10, "the closing line")
    events = read_recording(str(record)).events
    assert isinstance(events[-1], SessionEnded), events[-3:]
    assert events[-1].reason == "stopped by SIGTERM; the MCP server exited with status 143"
    opened = {e.conn for e in events if isinstance(e, ConnectionOpened)}
    closed = {e.conn: e for e in events if isinstance(e, ConnectionClosed)}
    assert set(closed) == opened
    main = [c for c in closed.values() if c.route == "main"]
    # The server's exit closed its side first; then the cut gave up the plugin's answer.
    assert [c.reason for c in main] == [
        "client closed; the MCP server exited; the plugin's answer was not waited for"
    ]
    assert main[0].abnormal
    (hop,) = [c for c in closed.values() if c.route == "mcp"]
    assert hop.reason == (
        "the client closed stdin; the child was killed by signal 15 (SIGTERM, passed on)"
    )


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_server_whose_child_holds_its_pipes_is_stopped_within_the_grace(
    tmp_path: Path, plugin: PluginProcess, observer: str
) -> None:
    # A launcher (here a shell) whose server exits at its stdin's end and which then runs
    # on, its child holding the pipes: without the wrapper the SDK's SIGTERM would reach
    # them all (one process group), and so must the one passed on.
    record, stderr = tmp_path / "r.jsonl", tmp_path / "stderr"
    launcher = ["/bin/sh", "-c", '"$0" "$1"; sleep 30', *SERVER]
    with _mid_call(plugin, record, stderr, observer, launcher, call=False) as process:
        took = _sdk_stop(process)
    assert took is not None, "still running at the end of the SDK's grace, and killed"
    assert took < SDK_GRACE
    wait_for(lambda: "golem-proxy mcp: recorded " in stderr.read_text(), 10, "the closing line")
    events = read_recording(str(record)).events
    assert isinstance(events[-1], SessionEnded), events[-3:]
    assert events[-1].reason == "stopped by SIGTERM; the MCP server exited with status 143"


def test_a_killed_wrapper_leaves_no_closing_line_that_says_all_was_well(
    tmp_path: Path, plugin: PluginProcess
) -> None:
    record, stderr = tmp_path / "r.jsonl", tmp_path / "stderr"
    with _mid_call(plugin, record, stderr, "child-process") as process:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        # The observing process, in a group of its own, reads the end of its pipe and ends.
        wait_for(lambda: "golem-proxy mcp:" in stderr.read_text(), 10, "the closing line")
    events = read_recording(str(record)).events
    assert not isinstance(events[-1], SessionEnded)
    (line,) = [x for x in stderr.read_text().splitlines() if x.startswith("golem-proxy mcp:")]
    assert line == (
        f"golem-proxy mcp: the recording {record} ends cut short: the proxy stopped without "
        "ending the session (killed?); 2 exchanges (0 errors, 0 violations; 2 requests "
        "without an answer) recorded"
    )


@contextlib.contextmanager
def _wrapped(record: Path, code: str, *options: str) -> Iterator[subprocess.Popen[bytes]]:
    """``golem-proxy mcp`` (recording, its GOLEM routes nowhere) around a server that runs
    ``code``, in a session of its own, once the server said ``ready``; killed, group and all,
    and reaped at the end."""
    process = subprocess.Popen(
        [
            sys.executable, "-m", "golem_proxy", "mcp", "--record", str(record),
            "--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9",
            *options, "--", sys.executable, "-c", code,
        ],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        cwd=ROOT, env=environment(), start_new_session=True,
    )  # fmt: skip
    try:
        assert _read_line(process) == b"ready\n"
        yield process
    finally:
        _kill_and_reap(process)


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_server_that_ignores_the_sigterm_passed_on_is_killed_within_the_grace(
    tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "r.jsonl"
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
        "while True: time.sleep(0.05)\n"
    )
    with _wrapped(record, code, "--observer", observer, "--exit-timeout", "0.75") as process:
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(SDK_GRACE) == 128 + signal.SIGKILL
    wait_for(lambda: '"kind":"session-end"' in record.read_text(), 10, "the session's end")
    events = read_recording(str(record)).events
    assert isinstance(events[-1], SessionEnded)
    assert events[-1].reason == "stopped by SIGTERM; the MCP server exited with status 137"
    (hop,) = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "mcp"]
    assert hop.reason == (
        "the child was killed (SIGKILL): it did not exit within 0.75 s (--exit-timeout) of the "
        "SIGTERM passed on"
    )


def test_a_server_that_takes_its_time_to_stop_on_sigterm_is_not_killed(tmp_path: Path) -> None:
    """A server that saves its state on SIGTERM, taking more than a moment: passed on, the
    signal gives it as long as ``--exit-timeout`` gives it when its stdin is closed, and it
    exits as it would without the wrapper (a grace of its own, 0.75 s, killed it first)."""
    record, saved = tmp_path / "r.jsonl", tmp_path / "saved"
    code = (
        "import pathlib, signal, sys, time\n"
        "def stop(*_):\n"
        "    time.sleep(1.2)\n"
        f"    pathlib.Path({str(saved)!r}).write_text('state')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
        "while True: time.sleep(0.05)\n"
    )
    with _wrapped(record, code) as process:
        process.send_signal(signal.SIGTERM)  # a user's kill of the wrapper
        assert process.wait(20) == 0
    assert saved.read_text() == "state"
    events = read_recording(str(record)).events
    assert isinstance(events[-1], SessionEnded)
