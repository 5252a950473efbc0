"""``golem-proxy mcp`` as a process: its stdout is the server's bytes, its exit status the
server's, and it ends the way an MCP client expects (stdin closed, SIGTERM)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.events import ConnectionClosed, FrameSeen, ProcessOutput, ViolationSeen
from golem_proxy.recording.format import read_recording
from tests.support.cli_helpers import reap

from .mcp_helpers import ROOT, environment, start_piped

WRAPPER = [sys.executable, "-m", "golem_proxy", "mcp"]
# Nothing listens there: the servers below never call GOLEM.
NOWHERE = ["--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9"]


def wrapper(
    *args: str, stdin: bytes = b"", timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*WRAPPER, *NOWHERE, *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env=environment(),
        timeout=timeout,
    )


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


ECHO = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"
OBSERVERS = pytest.mark.parametrize("observer", ["in-process", "child-process"])
"""Where the wrapper observes (``--observer``): the hop's bytes and what is recorded of them
are the same either way."""


@OBSERVERS
def test_stdout_is_the_servers_bytes_exactly(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "r.jsonl"
    lines = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n' * 3 + b"\xff\x00 tail\n"
    done = wrapper(
        "--observer", observer, "--record", str(record), "--", *python(ECHO), stdin=lines
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == lines
    events = read_recording(str(record)).events
    closed = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "mcp"]
    assert closed[0].bytes_c2s == closed[0].bytes_s2c == len(lines)
    assert "the client closed stdin" in closed[0].reason


def test_junk_on_the_servers_stdout_is_forwarded_and_flagged(tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    junk = b"Starting server...\n"
    code = f"import sys; sys.stdout.buffer.write({junk!r}); sys.stdout.flush()"
    done = wrapper("--record", str(record), "--", *python(code))
    assert done.returncode == 0, done.stderr
    assert done.stdout == junk
    events = read_recording(str(record)).events
    frames = [e for e in events if isinstance(e, FrameSeen) and e.route == "mcp"]
    assert frames[0].payload == junk.rstrip(b"\n")
    flagged = [e for e in events if isinstance(e, ViolationSeen) and e.route == "mcp"]
    assert any(v.violation.rule == "jsonrpc.response.json" for v in flagged)


@OBSERVERS
def test_the_servers_stderr_is_passed_on_and_recorded(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "r.jsonl"
    code = "import sys; sys.stderr.buffer.write(b'warming up\\n\\xff'); sys.stderr.flush()"
    done = wrapper("--observer", observer, "--record", str(record), "--", *python(code))
    assert done.returncode == 0
    assert b"warming up\n\xff" in done.stderr
    assert done.stdout == b""
    events = read_recording(str(record)).events
    written = b"".join(e.data for e in events if isinstance(e, ProcessOutput))
    assert written == b"warming up\n\xff"


def test_exit_status_is_the_servers() -> None:
    done = wrapper("--", *python("import sys; sys.exit(3)"))
    assert done.returncode == 3
    assert done.stdout == b""


def test_a_server_killed_by_a_signal_exits_as_a_shell_says() -> None:
    done = wrapper("--", *python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    assert done.returncode == 128 + signal.SIGKILL


@OBSERVERS
@pytest.mark.parametrize("recorded", [False, True], ids=["unrecorded", "recorded"])
def test_a_command_that_cannot_start_is_one_line_and_exit_2(
    tmp_path: Path, observer: str, recorded: bool
) -> None:
    record = tmp_path / "r.jsonl"
    options = ["--record", str(record)] if recorded else []
    done = wrapper("--observer", observer, *options, "--", "/nonexistent/golem-mcp-server")
    assert done.returncode == 2
    assert done.stdout == b""
    # Nothing ran: no closing line ("0 exchanges …") before the error, nor after it.
    assert done.stderr.decode().splitlines() == [
        "golem-proxy: mcp: cannot start '/nonexistent/golem-mcp-server' (No such file or directory)"
    ]
    if recorded:  # ended in order, nothing in it, with either observer
        last = json.loads(record.read_text().splitlines()[-1])
        assert (last["kind"], last["reason"], last["exchanges"]) == (
            "session-end",
            "the MCP server did not start: cannot start '/nonexistent/golem-mcp-server' "
            "(No such file or directory)",
            0,
        )


def test_no_command_is_a_usage_error() -> None:
    done = wrapper()
    assert done.returncode == 2
    assert b"no server command" in done.stderr


@OBSERVERS
def test_sigterm_is_passed_to_the_server_and_its_status_returned(observer: str) -> None:
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
        "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
        "while True: time.sleep(0.05)\n"
    )
    process = start_piped(
        [*WRAPPER, *NOWHERE, "--observer", observer, "--", *python(code)], stderr=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"ready\n"
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 7
    finally:
        reap(process)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_a_server_that_ignores_stdin_closing_is_stopped(tmp_path: Path) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "while True: time.sleep(0.05)\n"
    )
    # Bounded: the subprocess timeout fails the test if terminate-then-kill never comes.
    done = wrapper("--exit-timeout", "0.5", "--", *python(code))
    assert done.returncode == 128 + signal.SIGKILL


@OBSERVERS
def test_a_server_that_crashes_mid_call_leaves_a_failed_unanswered_tool_call(
    tmp_path: Path,
    observer: str,
) -> None:
    record = tmp_path / "r.jsonl"
    code = "import sys; sys.stdin.buffer.readline(); sys.exit(1)"
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "boom"}}
    done = wrapper(
        "--observer",
        observer,
        "--record",
        str(record),
        "--",
        *python(code),
        stdin=json.dumps(call).encode() + b"\n",
    )
    assert done.returncode == 1
    [tool_call] = read_tool_calls(str(record))
    assert tool_call.tool == "boom"
    assert tool_call.flow.response is None and tool_call.is_error


@OBSERVERS
def test_the_server_is_pointed_at_the_proxy_and_env_overrides(
    tmp_path: Path, observer: str
) -> None:
    log = tmp_path / "live.log"
    names = ("GOLEM_RHINO_HOST", "GOLEM_RHINO_PORT", "GOLEM_GH_PORT", "EXTRA")
    code = f"import os, sys; sys.stdout.write(' '.join(os.environ.get(k, '-') for k in {names!r}))"
    done = wrapper(
        "--observer",
        observer,
        "--log",
        str(log),
        "--env",
        "EXTRA=x=1",
        "--env",
        "GOLEM_GH_PORT=5",
        "--",
        *python(code),
    )
    assert done.returncode == 0, done.stderr
    host, port, gh_port, extra = done.stdout.decode().split(" ")
    assert (host, gh_port, extra) == ("127.0.0.1", "5", "x=1")
    written = log.read_text()
    assert f"main: 127.0.0.1:{port} → 127.0.0.1:9" in written
    assert "main: " not in done.stderr.decode()  # the live log went to the file


def test_a_bad_env_spec_is_one_line_and_exit_2() -> None:
    done = wrapper("--env", "NOEQUALS", "--", *python("pass"))
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "golem-proxy: mcp --env: 'NOEQUALS' is not NAME=VALUE"


@OBSERVERS
def test_a_flood_of_notifications_is_forwarded_whole(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "r.jsonl"
    line = (
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n'
    )
    code = f"import sys; sys.stdout.buffer.write({line!r} * 10000)"
    done = wrapper("--observer", observer, "--record", str(record), "--", *python(code))
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout == line * 10000
    closed = [e for e in read_recording(str(record)).events if isinstance(e, ConnectionClosed)]
    assert closed[-1].bytes_s2c == len(line) * 10000


def test_a_client_that_never_reads_does_not_hold_the_wrapper_for_ever() -> None:
    # The server blocks on a full pipe; once the client closes stdin the server is stopped
    # (--exit-timeout, then SIGTERM) and what it could not deliver is given up after a
    # bounded drain: the wrapper exits instead of waiting for a reader that never comes.
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n'
    code = f"import sys; sys.stdout.buffer.write({line!r} % (b'x' * 65536) * 200)"
    process = start_piped([*WRAPPER, *NOWHERE, "--exit-timeout", "0.5", "--", *python(code)])
    try:
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(60) == 128 + signal.SIGTERM
    finally:
        reap(process)
        if process.stdout is not None:
            process.stdout.close()


@OBSERVERS
def test_redaction_reaches_the_mcp_hop_before_disk(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "r.jsonl"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"token": "s3cr3t"}}
    lines = json.dumps(call).encode() + b"\n"
    done = wrapper(
        "--observer", observer, "--record", str(record), "--redact", "params.token",
        "--", *python(ECHO), stdin=lines,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == lines  # forwarded as it came
    text = record.read_text(encoding="utf-8")
    assert "s3cr3t" not in text and "tools/call" in text
