"""A client of ``golem-proxy mcp`` that never reads the wrapper's stderr, while the server logs
more there than the pipes hold: the session still ends in bounded time, after the client
closes stdin or on its SIGTERM (stdio_stderr.py), and its recording keeps what the server
wrote, the close, which says how much of it was never written, and the session's end."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.live.observer_child_helpers import wait_for
from tests.support.cli_helpers import reap

from .mcp_helpers import ROOT, environment

OBSERVERS = pytest.mark.parametrize("observer", ["in-process", "child-process"])

LOGS_A_LOT = (
    "import os, sys\n"
    "sys.stdin.buffer.readline()\n"
    'answer = \'{"jsonrpc":"2.0","id":1,"result":{"pid":%d}}\\n\' % os.getpid()\n'
    "sys.stdout.buffer.write(answer.encode())\n"
    "sys.stdout.buffer.flush()\n"
    "for i in range(3000):\n"  # ~300 KB: more than its stderr pipe and ours hold
    "    sys.stderr.write(f'INFO request {i:6d} ' + '.' * 80 + '\\n')\n"
    "sys.stderr.flush()\n"
    "sys.stdin.buffer.read()\n"
)
"""Answers one call with its pid, logs ~300 KB on stderr (blocked once the pipes are full, it
never sees its stdin end), then exits once its stdin ends."""


def blocked_writing(pid: int) -> bool:
    """The process waits for room in a pipe (Linux names the wait in its ``wchan``)."""
    return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()


@contextmanager
def unread_stderr(record: Path, observer: str) -> Iterator[subprocess.Popen[bytes]]:
    """The wrapper around `LOGS_A_LOT`, its stderr a pipe nobody reads, after its answer to
    one call was read, once the server waits for room on its stderr."""
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", "--observer", observer,
        "--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9",
        "--exit-timeout", "1", "--record", str(record),
        "--", sys.executable, "-c", LOGS_A_LOT,
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=environment(),
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        wait_for(lambda: blocked_writing(answer["result"]["pid"]), what="its stderr full")
        yield process
    finally:
        reap(process)


def ended_within(process: subprocess.Popen[bytes], seconds: float) -> float:
    """How long ``process`` took to exit (fails once it runs ``seconds``)."""
    start = time.monotonic()
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the wrapper still runs {seconds:g} s on")
    return time.monotonic() - start


def events(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()[1:]]


def assert_recorded_whole(record: Path, stopped: str) -> None:
    """What the server wrote on stderr, the close saying how much of it was never written and
    why, and the session's end."""
    found = events(record)
    logged = b"".join(
        bytes.fromhex(e["hex"]) if "hex" in e else e["text"].encode()
        for e in found
        if e["kind"] == "stderr"
    )
    assert logged.startswith(b"INFO request      0 ")
    assert len(logged) > 64 * 1024  # more than our stderr took: it is still read and recorded
    (close,) = [e for e in found if e["kind"] == "close"]
    assert "bytes of its stderr not written: " + stopped in close["reason"]
    unwritten = int(close["reason"].split(" bytes of its stderr not written")[0].split()[-1])
    assert 0 < unwritten < len(logged)
    assert found[-1]["kind"] == "session-end"


@OBSERVERS
def test_the_session_ends_after_stdin_closes(tmp_path: Path, observer: str) -> None:
    """The server is stopped --exit-timeout (1 s) after its stdin ends; its stderr is then
    given up once its reader took nothing for 2 s (the drain's), and the log's 1 s."""
    record = tmp_path / "r.jsonl"
    with unread_stderr(record, observer) as wrapper:
        assert wrapper.stdin is not None
        wrapper.stdin.close()
        ended_within(wrapper, 15)
    assert_recorded_whole(record, "the client took nothing for 2 s after the server exited")


@OBSERVERS
def test_a_sigterm_ends_it_before_the_sdk_would_kill_it(tmp_path: Path, observer: str) -> None:
    """The Python MCP SDK closes stdin, sends SIGTERM, and SIGKILL 2 s later: the session has
    ended, recorded whole, by then (a margin for a loaded machine)."""
    record = tmp_path / "r.jsonl"
    with unread_stderr(record, observer) as wrapper:
        assert wrapper.stdin is not None
        wrapper.stdin.close()
        wrapper.send_signal(signal.SIGTERM)
        assert ended_within(wrapper, 15) < 4
    assert_recorded_whole(record, "the wrapper was stopped by SIGTERM")
