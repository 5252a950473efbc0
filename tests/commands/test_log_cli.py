"""``golem-proxy proxy`` as a user runs it, with a terminal that misbehaves (a pipe nobody
reads) and peers that send text a terminal must not take literally (lone surrogates, escape
sequences): the proxy keeps forwarding, keeps serving the next client, and prints them safely."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from bench.threaded_server import ThreadedServer
from golem_proxy.net.addresses import Address
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

ROOT = Path(__file__).resolve().parents[2]
TITLE_AND_CLEAR = "\x1b]0;PWNED\x1b\\\x1b[2J"
DROPPED = re.compile(rb"golem-proxy: (\d+) log lines dropped \(output was blocked for [\d.]+ s\)")


plugin = plugin_fixture(seed=5)


class ProxyProcess:
    """``python -m golem_proxy proxy`` with its stdout a pipe that the test reads only when
    it says so (`read_until`), like a ``| less`` the operator paused."""

    def __init__(self, tmp_path: Path, upstream: Address, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
        env.pop("FORCE_COLOR", None)
        self.stderr_path = tmp_path / "stderr.txt"
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "golem_proxy", "proxy"),
                    *("--route", f"main@127.0.0.1:0={upstream}", *args),
                ],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
            )
        assert self.process.stdout is not None
        self.fd = self.process.stdout.fileno()
        self.out = bytearray()
        started = self.read_until(re.compile(rb"main: 127\.0\.0\.1:(\d+) .*Ctrl-C to stop", re.S))
        self.port = int(started.group(1))

    def read_until(self, pattern: re.Pattern[bytes], timeout: float = 30) -> re.Match[bytes]:
        """Read stdout until ``pattern`` matches what was read so far."""
        deadline = time.monotonic() + timeout
        while True:
            found = pattern.search(self.out)
            if found is not None:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(f"no {pattern.pattern!r} in time")
            if self._readable(min(left, 0.5)):
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    self._fail(f"stdout ended without {pattern.pattern!r}")
                self.out += chunk

    def _fail(self, why: str) -> NoReturn:
        raise AssertionError(
            f"{why}: stdout {bytes(self.out[-2000:])!r}, "
            f"stderr {self.stderr_path.read_bytes()[-2000:]!r}"
        )

    def _readable(self, timeout: float) -> bool:
        return bool(select.select([self.fd], [], [], timeout)[0])

    def close_stdout(self) -> None:
        """Go away as a reader, like ``| head`` once it has its lines."""
        assert self.process.stdout is not None
        self.process.stdout.close()

    def stop(self) -> int:
        """Ctrl-C, read the rest of stdout (if still reading), return the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        if self.process.stdout is not None and self.process.stdout.closed:
            return self.process.wait(30)
        remaining, _ = self.process.communicate(timeout=30)
        self.out += remaining
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture
def started() -> Iterator[list[ProxyProcess]]:
    running: list[ProxyProcess] = []
    yield running
    for proxy in running:
        proxy.kill()


def start(
    started: list[ProxyProcess], tmp_path: Path, upstream: Address, *args: str
) -> ProxyProcess:
    proxy = ProxyProcess(tmp_path, upstream, *args)
    started.append(proxy)
    return proxy


def frame(payload: bytes) -> bytes:
    return struct.pack("!I", len(payload)) + payload


def roundtrip(port: int, payload: bytes) -> dict[str, Any]:
    """Send one raw frame on a new connection; return the decoded reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(frame(payload))
        header = receive_exactly(sock, 4)
        (length,) = struct.unpack("!I", header)
        reply = json.loads(receive_exactly(sock, length))
        assert isinstance(reply, dict)
        return reply


def assert_next_client_works(port: int) -> None:
    with GolemClient("127.0.0.1", port, timeout=20) as client:
        assert client.send_command("ping", timeout=20) is not None


def test_a_proxy_whose_stdout_nobody_reads_keeps_forwarding(
    plugin: PluginProcess, tmp_path: Path, started: list[ProxyProcess]
) -> None:
    proxy = start(started, tmp_path, plugin.main, "--log-buffer", "100")
    # From here on nobody reads stdout: after ~64 KiB of log the pipe is full.
    exchanges = 2000
    done = 0
    with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
        for number in range(exchanges):
            result = client.send_command("ping", timeout=20)
            assert result is not None, number
            done += 1
    assert done == exchanges
    assert_next_client_works(proxy.port)  # a new client is not stuck behind the log either
    # The reader comes back: the log says what it lost, once it can.
    found = proxy.read_until(DROPPED)
    assert int(found.group(1)) > 0
    assert proxy.process.poll() is None
    assert proxy.stop() == 0


def test_a_closed_stdout_stops_the_log_not_the_proxy(
    plugin: PluginProcess, tmp_path: Path, started: list[ProxyProcess]
) -> None:
    proxy = start(started, tmp_path, plugin.main)
    proxy.close_stdout()
    with GolemClient("127.0.0.1", proxy.port, timeout=20) as client:
        for number in range(200):
            assert client.send_command("ping", timeout=20) is not None, number
    assert_next_client_works(proxy.port)
    assert proxy.process.poll() is None
    assert proxy.stop() == 0
    # Quietly: no BrokenPipeError, no traceback; only the closing summary.
    said = proxy.stderr_path.read_text().splitlines()
    assert len(said) == 1 and said[0].startswith("golem-proxy proxy: "), said


class ErrorUpstream(ThreadedServer):
    """A plugin that answers every request with an error whose code and message hold a lone
    surrogate (as a JSON escape, which is legal JSON)."""

    @property
    def address(self) -> Address:
        return Address("127.0.0.1", self.port)

    def serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                while True:
                    (length,) = struct.unpack("!I", receive_exactly(conn, 4))
                    request = json.loads(receive_exactly(conn, length))
                    error = {"code": "\udfff", "message": f"no \ud800 for {request.get('method')}"}
                    reply = {"id": request.get("id"), "result": None, "error": error}
                    conn.sendall(frame(json.dumps(reply).encode()))
            except (AssertionError, OSError):
                return


@pytest.fixture
def error_upstream() -> Iterator[ErrorUpstream]:
    with ErrorUpstream() as upstream:
        yield upstream


@pytest.fixture(params=[(), ("--verbose",)], ids=["normal", "verbose"])
def loudness(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The log's options: the normal log, then the verbose one."""
    options: tuple[str, ...] = request.param
    return options


@pytest.fixture
def error_proxy(
    error_upstream: ErrorUpstream,
    tmp_path: Path,
    started: list[ProxyProcess],
    loudness: tuple[str, ...],
) -> ProxyProcess:
    """A proxy logging with ``loudness`` in front of an `ErrorUpstream`."""
    return start(started, tmp_path, error_upstream.address, *loudness)


def test_a_lone_surrogate_method_is_logged_and_the_proxy_keeps_serving(
    error_proxy: ProxyProcess, loudness: tuple[str, ...]
) -> None:
    # An upstream that answers (the real plugin closes the connection instead: its error
    # message repeats the method, which it cannot encode).
    proxy = error_proxy
    reply = roundtrip(proxy.port, b'{"id":"s2","method":"\\udfff"}')  # the 33-byte frame
    assert reply["id"] == "s2" and reply["error"] is not None
    proxy.read_until(re.compile(rb"\\udfff +\S+"))  # the method, as visible text
    assert roundtrip(proxy.port, b'{"id":"s3","method":"ping"}')["id"] == "s3"  # still serving
    if loudness:
        proxy.read_until(re.compile(rb'"method": "\\udfff"'))  # the verbose frame preview
    assert proxy.process.poll() is None
    assert proxy.stop() == 0


def test_a_lone_surrogate_in_an_error_reply_is_logged_and_the_proxy_keeps_serving(
    error_proxy: ProxyProcess,
) -> None:
    proxy = error_proxy
    for number in range(2):  # the second connection proves the first did no harm
        reply = roundtrip(proxy.port, b'{"id":"e%d","method":"x\\ud800"}' % number)
        assert reply["id"] == f"e{number}"
        assert reply["error"]["message"] == "no \ud800 for x\ud800"
    both = proxy.read_until(re.compile(rb"(?s)no \\ud800 for x\\ud800.*no \\ud800 for x\\ud800"))
    # The error code, escaped; a code that is not ASCII names its kind (it may look like "OK").
    assert b"  error (code \\udfff)  " in both.group(0)
    assert proxy.process.poll() is None
    assert proxy.stop() == 0


def test_an_escape_sequence_method_prints_as_text(
    plugin: PluginProcess, tmp_path: Path, started: list[ProxyProcess]
) -> None:
    proxy = start(started, tmp_path, plugin.main, "--verbose")
    request = {"id": "t1", "method": TITLE_AND_CLEAR}
    reply = roundtrip(proxy.port, json.dumps(request).encode())
    assert reply["id"] == "t1"
    assert_next_client_works(proxy.port)
    assert proxy.stop() == 0
    assert b"\\x1b]0;PWNED\\x1b\\\\x1b[2J" in proxy.out
    assert b"\x1b" not in proxy.out  # not one raw escape reached the terminal


def test_colours_on_a_terminal(plugin: PluginProcess) -> None:
    controller, terminal = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        env.pop(name, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", "proxy", "--route", f"127.0.0.1:0={plugin.main}"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(terminal)
    try:
        seen = bytearray()
        deadline = time.monotonic() + 30
        while b"Ctrl-C to stop" not in seen and time.monotonic() < deadline:
            if select.select([controller], [], [], 0.5)[0]:
                seen += os.read(controller, 65536)
        assert b"Ctrl-C to stop" in seen
        assert b"\x1b[" in seen  # styled, as on any terminal
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        os.close(controller)
