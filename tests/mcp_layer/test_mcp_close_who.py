"""The close line of ``golem-proxy mcp``'s hop says who ended the server, and which came first,
its death or the client's close of stdin: a server killed from outside (in the middle of a
call, or while it lingered after the client left) is not told as one golem-proxy killed after
``--exit-timeout``, though both die of signal 9. (The signals passed on, and the kill after
their grace: test_mcp_client_shutdown.py.)"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest

from golem_proxy.events import ConnectionClosed
from golem_proxy.live.stdio_ends import PASSED_ON, HopEnds
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import wait_for
from tests.support.cli_helpers import reap

from .mcp_helpers import INITIALIZE, ROOT, environment, rpc_line

SERVER = str(Path(__file__).resolve().parent / "golem_mcp_server_stderr.py")
NOWHERE = ["--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9"]
OUTSIDE_KILL = "the child was killed by signal 9 (SIGKILL), which golem-proxy did not send"


def close_of_hop(record: Path) -> str:
    events = read_recording(str(record)).events
    (closed,) = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "mcp"]
    return closed.reason


@contextlib.contextmanager
def wrapper(
    tmp_path: Path, *options: str, launcher: tuple[str, ...] = (), **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """``golem-proxy mcp`` recording to ``r.jsonl`` (its stderr in ``stderr``) in front of
    the test server (behind ``launcher``), initialized; the server's pid in ``pid``. Nothing
    it started outlives the test."""
    command = [
        sys.executable, "-m", "golem_proxy", "mcp", *NOWHERE,
        "--record", str(tmp_path / "r.jsonl"), *options, "--", *launcher, sys.executable, SERVER,
    ]  # fmt: skip
    pid_file = tmp_path / "pid"
    with (tmp_path / "stderr").open("wb") as errors:
        proxy = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            cwd=ROOT,
            env=environment(PID_FILE=str(pid_file), **env),
        )
    server: Optional[int] = None
    try:
        assert proxy.stdin is not None and proxy.stdout is not None
        proxy.stdin.write(INITIALIZE)
        proxy.stdin.flush()
        assert b'"id":0' in proxy.stdout.readline().replace(b" ", b"")
        wait_for(pid_file.exists, what="the server's pid")
        server = int(pid_file.read_text())
        yield proxy
    finally:
        reap(proxy)
        if server is not None:  # the server leads a process group: what it started too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server, signal.SIGKILL)
        for stream in (proxy.stdin, proxy.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def test_a_server_killed_from_outside_mid_call_died_before_the_client_closed_stdin(
    tmp_path: Path,
) -> None:
    # A process the server's launcher left behind holds its stderr (not its stdout): the hop
    # stays open a while after the server's death, and sees the client's close.
    launcher = ("/bin/sh", "-c", '(sleep 3 >/dev/null &); exec "$@"', "sh")
    with wrapper(tmp_path, launcher=launcher) as proxy:
        assert proxy.stdin is not None and proxy.stdout is not None
        proxy.stdin.write(rpc_line({"method": "notifications/initialized"}))
        call = {"id": 1, "method": "tools/call", "params": {"name": "die_mid_call"}}
        proxy.stdin.write(rpc_line(call))
        proxy.stdin.flush()
        assert proxy.stdout.read() == b""  # the server died: its output ended, no answer
        proxy.stdin.close()  # and then the client closes stdin, as a client does
        assert proxy.wait(30) == 128 + signal.SIGKILL
    # A killed server's output ends a moment before it can be seen to have exited: the
    # client may close stdin in between.
    assert close_of_hop(tmp_path / "r.jsonl") in (
        f"{OUTSIDE_KILL}; then the client closed stdin",
        f"the child's output ended, then the client closed stdin; {OUTSIDE_KILL}",
    )


def test_a_server_killed_from_outside_after_the_client_closed_stdin(tmp_path: Path) -> None:
    with wrapper(tmp_path, "--exit-timeout", "20", LINGER="1") as proxy:
        assert proxy.stdin is not None
        proxy.stdin.close()
        lingering = "stdin ended; lingering"
        wait_for(lambda: lingering in (tmp_path / "stderr").read_text(), what=lingering)
        os.kill(int((tmp_path / "pid").read_text()), signal.SIGKILL)
        assert proxy.wait(30) == 128 + signal.SIGKILL
    assert close_of_hop(tmp_path / "r.jsonl") == f"the client closed stdin; {OUTSIDE_KILL}"


@pytest.mark.parametrize(
    ("ignore_term", "killed"),
    [
        (
            "",
            "(SIGTERM): it did not exit within 0.5 s (--exit-timeout) of the end of its stdin",
        ),
        (
            "1",
            "(SIGKILL): it did not exit within 0.5 s (--exit-timeout) of the end of its stdin, "
            "nor 0.5 s after the SIGTERM",
        ),
    ],
    ids=["SIGTERM", "SIGKILL"],
)
def test_the_wrappers_own_signal_after_exit_timeout_says_so(
    tmp_path: Path, ignore_term: str, killed: str
) -> None:
    options = ("--exit-timeout", "0.5")
    with wrapper(tmp_path, *options, LINGER="1", IGNORE_TERM=ignore_term) as proxy:
        assert proxy.stdin is not None
        proxy.stdin.close()  # the server outlives its stdin (and ignores SIGTERM)
        signum = signal.SIGKILL if ignore_term else signal.SIGTERM
        assert proxy.wait(30) == 128 + signum
    assert (
        close_of_hop(tmp_path / "r.jsonl")
        == f"the client closed stdin; the child was killed {killed}"
    )


def test_each_ending_in_words() -> None:
    """The close line for each order and each sender, without a process."""
    ends = HopEnds()
    ends.client_closes(exited=True)
    assert ends.close_reason(1) == (
        "the child exited with status 1; then the client closed stdin",
        True,
    )
    # Only a signal golem-proxy sent is said to be its own; the first of each number counts.
    ends = HopEnds()
    ends.sent(signal.SIGTERM, PASSED_ON)
    ends.sent(signal.SIGTERM, "later")
    assert ends.close_reason(-15)[0] == "the child was killed by signal 15 (SIGTERM, passed on)"
    assert ends.close_reason(-9)[0] == OUTSIDE_KILL
    assert ends.close_reason(-99)[0] == (
        "the child was killed by signal 99, which golem-proxy did not send"
    )
    ends.output_ended = True
    ends.client_closes(exited=False)
    assert ends.close_reason(0)[0] == (
        "the child's output ended, then the client closed stdin; the child exited with status 0"
    )
