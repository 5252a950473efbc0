"""The server's output on its way to the client through ``golem-proxy mcp``: its end reaches
the client when the server closes it, and what the client never took (it stopped reading, or
took nothing once the server had exited) is recorded undelivered, never as delivered."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.events import ConnectionClosed, Direction, FrameSeen, FramingErrorSeen
from golem_proxy.live.stdio_ends import DRAIN_TIMEOUT, UNDELIVERED_AFTER_EXIT
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import wait_for
from tests.support.cli_helpers import reap, run_cli

from .mcp_helpers import ROOT, environment

OBSERVERS = pytest.mark.parametrize("observer", ["in-process", "child-process"])
NOWHERE = ["--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9"]

ANSWERS_EACH_LINE = (
    "import json, sys\n"
    "for line in sys.stdin.buffer:\n"
    "    ident = json.loads(line)['id']\n"
    "    answer = {'jsonrpc': '2.0', 'id': ident, 'result': {'n': ident}}\n"
    "    sys.stdout.buffer.write(json.dumps(answer).encode() + b'\\n')\n"
    "    sys.stdout.buffer.flush()\n"
)


def wrapper_command(record: Path, observer: str, server: str) -> list[str]:
    return [
        sys.executable, "-m", "golem_proxy", "mcp", *NOWHERE, "--observer", observer,
        "--record", str(record), "--", sys.executable, "-c", server,
    ]  # fmt: skip


def start_wrapper(
    record: Path,
    observer: str,
    server: str,
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """The wrapper around ``server``, as an MCP client starts it: its stdin a pipe."""
    return subprocess.Popen(
        wrapper_command(record, observer, server),
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=stderr,
        cwd=ROOT,
        env=environment(),
    )


def request(ident: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n' % ident


@OBSERVERS
def test_the_client_sees_the_end_when_the_server_closes_its_stdout(
    tmp_path: Path, observer: str
) -> None:
    """The server closes its stdout and runs on until its stdin ends: its client sees the
    end of the output at once, as it would without the wrapper (it waited for the exit)."""
    server = (
        "import os, sys\n"
        'os.write(1, b\'{"jsonrpc":"2.0","method":"notifications/hello"}\\n\')\n'
        "os.close(1)\n"
        "sys.stdin.buffer.read()\n"
    )
    process = start_wrapper(tmp_path / "r.jsonl", observer, server)
    assert process.stdin is not None and process.stdout is not None
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(process.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    try:
        reader.join(timeout=30)
        assert not reader.is_alive(), "no end of the output while the server runs on"
        assert got == [b'{"jsonrpc":"2.0","method":"notifications/hello"}\n']
        assert process.poll() is None  # the server still runs: so does the wrapper
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        reap(process)
        reader.join(timeout=5)


@OBSERVERS
def test_answers_the_client_never_read_are_recorded_undelivered(
    tmp_path: Path, observer: str
) -> None:
    """The client closed its end of our stdout: the server's answers are drained and
    recorded, each undelivered ("client gone"), and the close counts none of them as sent."""
    record = tmp_path / "r.jsonl"
    read_end, write_end = os.pipe()
    os.close(read_end)  # the client reads nothing, ever
    process = start_wrapper(
        record, observer, ANSWERS_EACH_LINE, stdout=write_end, stderr=subprocess.PIPE
    )
    os.close(write_end)
    assert process.stdin is not None and process.stderr is not None
    try:
        process.stdin.write(request(1) + request(2))
        process.stdin.close()
        assert process.wait(timeout=60) == 0
        errors = process.stderr.read().decode()
    finally:
        reap(process)
        process.stderr.close()
    assert "the client stopped reading" in errors
    events = read_recording(str(record)).events
    answers = [
        e for e in events if isinstance(e, FrameSeen) and e.route == "mcp" and not e.is_request
    ]
    assert [a.message.id for a in answers] == [1, 2]
    assert [a.undelivered for a in answers] == ["client gone", "client gone"]
    (closed,) = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "mcp"]
    assert closed.bytes_s2c == 0 and closed.abnormal
    assert "not delivered: the client stopped reading" in closed.reason
    shown = run_cli("show", str(record)).stdout
    assert shown.count("(undelivered: client gone)") == 2, shown


@OBSERVERS
def test_the_last_answer_a_client_does_not_take_after_the_exit_is_recorded_whole_undelivered(
    tmp_path: Path, observer: str
) -> None:
    """The server writes an answer larger than a pipe holds (not larger than the pipes and the
    wrapper's read hold: it could not exit) and exits; the client takes nothing for longer
    than the drain waits. The wrapper exits, says how much it did not
    deliver, and the recording has the answer whole, undelivered: not a frame the server cut
    short (the drain's deadline used to cut the write and the record alike)."""
    record = tmp_path / "r.jsonl"
    server = (
        "import sys\n"
        "line = sys.stdin.buffer.readline()\n"
        'body = \'{"jsonrpc":"2.0","id":1,"result":{"text":"\' + \'x\' * 150000 + \'"}}\'\n'
        "sys.stdout.buffer.write(body.encode() + b'\\n')\n"
    )
    process = start_wrapper(record, observer, server, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    try:
        process.stdin.write(request(1))
        process.stdin.flush()
        assert process.wait(timeout=30 + DRAIN_TIMEOUT) == 0
        delivered = process.stdout.read()
        errors = process.stderr.read().decode()
    finally:
        reap(process)
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()
    assert 0 < len(delivered) < 150_000
    assert "bytes of the server's output not delivered" in errors
    events = read_recording(str(record)).events
    assert not [e for e in events if isinstance(e, FramingErrorSeen)]
    (answer,) = [
        e for e in events if isinstance(e, FrameSeen) and e.route == "mcp" and not e.is_request
    ]
    assert answer.message.id == 1 and len(answer.payload) == 150_045
    assert answer.undelivered == UNDELIVERED_AFTER_EXIT
    assert answer.delivered_bytes == len(delivered)
    (closed,) = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "mcp"]
    assert closed.bytes_s2c == len(delivered)
    assert f"{150_046 - len(delivered)} bytes of its output not delivered" in closed.reason


@OBSERVERS
def test_a_call_written_after_the_server_closed_its_stdin_is_recorded_undelivered(
    tmp_path: Path, observer: str
) -> None:
    """The server stops reading (closes its stdin) and says so; the client's next call is
    recorded, marked never delivered ("server gone"), and not counted as sent."""
    record, go = tmp_path / "r.jsonl", tmp_path / "go"
    server = (
        "import os, time\n"
        "os.close(0)\n"
        'os.write(1, b\'{"jsonrpc":"2.0","method":"notifications/closed"}\\n\')\n'
    ) + _until_exists(go)
    process = start_wrapper(record, observer, server)
    assert process.stdin is not None and process.stdout is not None
    try:
        assert b"notifications/closed" in process.stdout.readline()
        process.stdin.write(request(7))
        process.stdin.flush()
        wait_for(lambda: b'"id":7,' in record.read_bytes(), timeout=20, what="the call recorded")
        go.touch()
        assert process.wait(timeout=60) == 0
    finally:
        go.touch()
        reap(process)
        for stream in (process.stdin, process.stdout):
            stream.close()
    events = read_recording(str(record)).events
    (call,) = [
        e
        for e in events
        if isinstance(e, FrameSeen) and e.route == "mcp" and e.direction is Direction.C2S
    ]
    assert call.message.id == 7 and call.undelivered == "server gone"
    (closed,) = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "mcp"]
    assert closed.bytes_c2s == 0


@OBSERVERS
def test_what_the_client_says_once_the_server_closed_its_stdin_is_read_and_recorded(
    tmp_path: Path, observer: str
) -> None:
    """The server closed its stdin and runs on: every call the client sends after is read
    (the client never blocks on a full pipe) and recorded never delivered, the later ones
    too (they were read by nobody and in no recording)."""
    record, go = tmp_path / "r.jsonl", tmp_path / "go"
    server = (
        "import os, time\n"
        "os.close(0)\n"
        'os.write(1, b\'{"jsonrpc":"2.0","method":"notifications/closed"}\\n\')\n'
        "deadline = time.monotonic() + 30\n"
        f"while not os.path.exists({str(go)!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
    )
    process = start_wrapper(record, observer, server)
    assert process.stdin is not None and process.stdout is not None
    try:
        assert b"notifications/closed" in process.stdout.readline()
        for ident in (7, 8, 9):
            process.stdin.write(request(ident))
            process.stdin.flush()
            said = b'"id":%d,' % ident
            wait_for(
                lambda said=said: said in record.read_bytes(),
                timeout=20,
                what=f"call {ident} in the recording",
            )
        go.touch()
        assert process.wait(timeout=60) == 0
    finally:
        go.touch()
        reap(process)
        for stream in (process.stdin, process.stdout):
            stream.close()
    events = read_recording(str(record)).events
    calls = [
        e
        for e in events
        if isinstance(e, FrameSeen) and e.route == "mcp" and e.direction is Direction.C2S
    ]
    assert [(call.message.id, call.undelivered) for call in calls] == [
        (ident, "server gone") for ident in (7, 8, 9)
    ]
    (closed,) = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "mcp"]
    assert closed.bytes_c2s == 0


STOPS_READING_ONCE_FULL = (
    "import fcntl, os, struct, sys, termios, time\n"
    "capacity = fcntl.fcntl(0, 1032)  # F_GETPIPE_SZ\n"
    "deadline = time.monotonic() + 30\n"
    "def unread():\n"
    "    return struct.unpack('i', fcntl.ioctl(0, termios.FIONREAD, b'1234'))[0]\n"
    "while unread() < capacity and time.monotonic() < deadline:\n"
    "    time.sleep(0.01)\n"
    "left = unread()\n"
    "os.close(0)\n"
    'note = \'{"jsonrpc":"2.0","method":"closed","params":{"unread":%d}}\\n\'\n'
    "os.write(1, (note % left).encode())\n"
)


def _until_exists(go: Path) -> str:
    """Server code that runs on until ``go`` exists (30 s at most): the calls it did not take
    are read while it runs, "server gone" rather than gone with its exit."""
    return (
        "deadline = time.monotonic() + 30\n"
        f"while not os.path.exists({str(go)!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
    )


@OBSERVERS
def test_calls_still_waiting_for_a_full_pipe_when_the_server_closes_it_are_undelivered(
    tmp_path: Path, observer: str
) -> None:
    """The server reads nothing until its stdin's pipe is full, then closes it: the calls the
    pipe took are delivered (the kernel had them), the one cut at its end and those after it,
    still in the wrapper's hands, are recorded never delivered ("server gone"), with the
    bytes of each that went, and not counted as sent."""
    record, go = tmp_path / "r.jsonl", tmp_path / "go"
    process = start_wrapper(record, observer, STOPS_READING_ONCE_FULL + _until_exists(go))
    assert process.stdin is not None and process.stdout is not None
    calls = [_padded_call(ident, 10_000) for ident in range(1, 9)]
    try:
        process.stdin.write(b"".join(calls))  # more than the server's pipe takes
        process.stdin.flush()
        note = json.loads(process.stdout.readline())
        wait_for(lambda: b'"id":8,' in record.read_bytes(), timeout=20, what="the last call")
        go.touch()
        assert process.wait(timeout=60) == 0
    finally:
        go.touch()
        reap(process)
        for stream in (process.stdin, process.stdout):
            stream.close()
    delivered = note["params"]["unread"]  # the server read nothing: the pipe held it all
    assert 0 < delivered < sum(map(len, calls))
    events = read_recording(str(record)).events
    seen = [
        e
        for e in events
        if isinstance(e, FrameSeen) and e.route == "mcp" and e.direction is Direction.C2S
    ]
    assert [e.message.id for e in seen] == list(range(1, 9))
    start = 0
    for call, frame in zip(calls, seen):
        end = start + len(call)
        if end <= delivered:
            assert frame.undelivered == "" and frame.delivered_bytes == 0
        else:
            assert frame.undelivered == "server gone"
            assert frame.delivered_bytes == max(0, delivered - start)
        start = end
    assert any(frame.undelivered for frame in seen)
    (closed,) = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "mcp"]
    assert closed.bytes_c2s == delivered


def _padded_call(ident: int, size: int) -> bytes:
    """A ``tools/call`` line of ``size`` bytes."""
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"pad":"' % ident
    tail = b'"}}\n'
    return head + b"x" * (size - len(head) - len(tail)) + tail


@OBSERVERS
def test_a_grandchild_writing_on_after_the_server_exited_does_not_hold_the_wrapper(
    tmp_path: Path, observer: str
) -> None:
    """The server exits at once, leaving a process it started that writes to the stderr it
    inherited, for a while: the wrapper ends once the client took nothing for the drain's
    timeout, as it did before the drain learned to wait while bytes move."""
    pid_file = tmp_path / "grandchild.pid"
    server = (
        "import subprocess, sys\n"
        "ticks = 'for i in $(seq 40); do echo tick >&2; sleep 0.25; done'\n"
        "child = subprocess.Popen(['sh', '-c', ticks], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
    )
    process = start_wrapper(tmp_path / "r.jsonl", observer, server, stdout=subprocess.DEVNULL)
    try:
        assert process.wait(timeout=5 * DRAIN_TIMEOUT) == 0
    finally:
        reap(process)
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)


HELD_RELAY = """
import sys
import trio
from golem_proxy.live import stdio_relay


DELAY = float(sys.argv[1])


async def held(self):  # the recording trailing the wire: the relay waits for it
    await trio.sleep(DELAY)


stdio_relay.StdioRelay._caught_up = held
from golem_proxy.cli import main

sys.argv = ["golem-proxy", *sys.argv[2:]]
sys.exit(main())
"""


def test_the_drain_does_not_give_up_while_the_relay_waits_for_the_recording(
    tmp_path: Path,
) -> None:
    """After each chunk the relay waits for the recording longer than the drain's timeout
    (as `--observer child-process` holds it while the recording trails): the wait is not the
    client taking nothing, and a client that reads gets every line."""
    script = tmp_path / "held.py"
    script.write_text(HELD_RELAY, encoding="utf-8")
    server = (
        "import sys, time\n"
        "for i in range(2):\n"
        '    sys.stdout.write(\'{"jsonrpc":"2.0","method":"n%d"}\\n\' % i)\n'
        "    sys.stdout.flush()\n"
        "    time.sleep(0.2)\n"
    )
    command = wrapper_command(tmp_path / "r.jsonl", "in-process", server)
    done = subprocess.run(
        [sys.executable, str(script), str(DRAIN_TIMEOUT + 0.5), *command[3:]],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env=environment(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(b"\n") == 2
    assert b"not delivered" not in done.stderr
