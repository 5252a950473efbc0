"""A tools/call result line several MiB long, cut before the model's client had it all: by the
wrapper's stop (a signal passed on to the server while it wrote), by the wrapper's kill of a
server that outlived the end of its stdin, or by the server's own death. Only the last is the
server's truncation; the others are the proxy's cut, no framing violation of the server's, and
the call's row says so. A client that goes away while the line is written gets it recorded
whole, undelivered. The real command line around the real FastMCP test server, whose client
reads a little of the line, then stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import reap, run_cli

from .mcp_helpers import INITIALIZE, ROOT, SERVER_COMMAND, environment, rpc_line

NOWHERE = ["--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9"]
BIG = 8 * 1024 * 1024
"""The size of big_text's string: its result line is twice that (text and structured)."""
READ = 200_000
"""What the client reads of the result line before it stops reading."""


def _start(record: Path, observer: str, *options: str) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", *NOWHERE, "--observer", observer,
        "--record", str(record), *options, "--", *SERVER_COMMAND,
    ]  # fmt: skip
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=environment(),
    )


def _call_and_read_part(process: subprocess.Popen[bytes]) -> None:
    """Initialize, call big_text, and read the first `READ` bytes of its result line: the
    server is then blocked in the middle of writing it (the pipes hold far less)."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(INITIALIZE)
    process.stdin.flush()
    assert b'"id":0' in process.stdout.readline()
    process.stdin.write(rpc_line({"method": "notifications/initialized"}))
    call = {"name": "big_text", "arguments": {"size": BIG}}
    process.stdin.write(rpc_line({"id": 1, "method": "tools/call", "params": call}))
    process.stdin.flush()
    got = 0
    while got < READ:
        got += len(process.stdout.read1(65536))


def _finish(process: subprocess.Popen[bytes]) -> str:
    """Wait for the wrapper's exit; returns its live log."""
    assert process.stderr is not None
    try:
        process.wait(timeout=60)
        return process.stderr.read().decode()
    finally:
        reap(process)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _server_pid(wrapper: int) -> int:
    """The test server among the wrapper's children (the observing process is one too)."""
    children = Path(f"/proc/{wrapper}/task/{wrapper}/children").read_text().split()
    (server,) = [
        int(pid)
        for pid in children
        if b"golem_mcp_server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    return server


def _lines(record: Path, kind: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    return [line for line in lines if line["kind"] == kind]


def _row(record: Path, method: str) -> dict[str, Any]:
    shown = run_cli("show", "--json", str(record)).stdout.splitlines()
    (row,) = [flow for flow in map(json.loads, shown) if flow["method"] == method]
    return row


def _assert_cut_by_proxy(record: Path, log: str, how: str) -> None:
    assert "jsonrpc.frame.truncated" not in log and "framing error" not in log, log
    assert f"the proxy ended the upstream's stream ({how})" in log, log
    assert not _lines(record, "violation"), record.read_text()[-3000:]
    errors = _lines(record, "frame-error")
    assert [(e["dir"], e["error"], e["cut"]) for e in errors] == [("s2c", "truncated", how)]
    assert errors[0]["detail"].endswith(f"bytes of a frame read before {how}"), errors
    ended = _lines(record, "end")
    assert [(e["dir"], e["cut"]) for e in ended] == [("s2c", how)], ended
    assert _row(record, "tools/call")["status"] == f"unanswered (truncated by {how})"
    checked = run_cli("check", str(record))
    assert "no contract violations" in checked.stdout, checked.stdout


@pytest.mark.parametrize(
    ("observer", "signum"),
    [
        ("child-process", signal.SIGTERM),
        ("in-process", signal.SIGTERM),
        ("child-process", signal.SIGINT),
    ],
)
def test_a_line_in_flight_when_the_wrapper_is_stopped_is_cut_by_the_stop(
    tmp_path: Path, observer: str, signum: int
) -> None:
    """The wrapper is stopped while the server writes the line: the signal passed on kills it
    (SIGTERM), or the wrapper kills it once --exit-timeout is past (SIGINT: the server waits
    for its write). The line is the proxy's stop's cut, not the server's truncation."""
    record = tmp_path / "r.jsonl"
    process = _start(record, observer, "--exit-timeout", "1")
    try:
        _call_and_read_part(process)
        process.send_signal(signum)
    finally:
        log = _finish(process)
    assert process.returncode == 128 + (signal.SIGTERM if signum == signal.SIGTERM else 9)
    _assert_cut_by_proxy(record, log, "the proxy's stop")


def test_a_line_in_flight_when_the_wrapper_kills_a_server_past_its_stdin_is_its_close(
    tmp_path: Path,
) -> None:
    """The client closes its stdin and stops reading; the server, blocked writing the line,
    does not exit, and the wrapper terminates it after --exit-timeout: the line is the proxy's
    cut (its close, which says why), not the server's truncation."""
    record = tmp_path / "r.jsonl"
    process = _start(record, "child-process", "--exit-timeout", "0.5")
    assert process.stdin is not None
    try:
        _call_and_read_part(process)
        process.stdin.close()
    finally:
        log = _finish(process)
    assert "it did not exit within 0.5 s (--exit-timeout) of the end of its stdin" in log, log
    _assert_cut_by_proxy(record, log, "the proxy's close")


def test_a_line_the_server_dies_in_is_still_its_truncation(tmp_path: Path) -> None:
    """The server is killed from outside in the middle of its line: that is its truncation, a
    framing violation of its own, and its call reads unanswered by it."""
    record = tmp_path / "r.jsonl"
    process = _start(record, "child-process")
    assert process.stdin is not None and process.stdout is not None
    try:
        _call_and_read_part(process)
        os.kill(_server_pid(process.pid), signal.SIGKILL)
        process.stdout.read()
        process.stdin.close()
    finally:
        log = _finish(process)
    assert "jsonrpc.frame.truncated" in log, log
    assert [v["rule"] for v in _lines(record, "violation")] == ["jsonrpc.frame.truncated"]
    errors = _lines(record, "frame-error")
    assert [(e["dir"], e["error"], e.get("cut")) for e in errors] == [("s2c", "truncated", None)]
    assert _row(record, "tools/call")["status"] == "unanswered (upstream closed)"


def test_a_line_whose_client_goes_away_is_recorded_whole_undelivered(tmp_path: Path) -> None:
    """The client closes both its pipes in the middle of the line: the wrapper reads on, and
    records the line whole, undelivered because the client went away, with no framing error."""
    record = tmp_path / "r.jsonl"
    process = _start(record, "child-process")
    assert process.stdin is not None and process.stdout is not None
    try:
        _call_and_read_part(process)
        process.stdout.close()
        process.stdin.close()
    finally:
        log = _finish(process)
    assert process.returncode == 0
    assert "the client stopped reading" in log, log
    assert not _lines(record, "frame-error") and not _lines(record, "violation")
    assert _row(record, "tools/call")["status"] == "ok (undelivered: client gone)"
