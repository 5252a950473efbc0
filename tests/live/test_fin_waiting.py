"""A plugin that goes away with requests still waiting for their answers: the client, which is
reading, sees the end at once, as it would directly, whatever answers came before; while the
connection is idle (every request answered) the end is still held until the client acts (see
connection.py). With either observer: the real command line, real loopback sockets."""

from __future__ import annotations

import functools
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import pytest

from bench.processes import observing_processes
from bench.robustness.proxy_cli import ProxyCli, start_proxy_cli
from bench.threaded_server import ThreadedServer
from golem_core.blocking import MessageReader
from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.recording.reader import read_recording

OBSERVERS = [
    pytest.param(("in-process",), id="in-process"),
    pytest.param(("child-process",), id="child-process"),
    pytest.param(("child-process", "--observer-restarts", "0"), id="child-process-no-restart"),
]
"""Each observer; the child process's also with no restart to come, where the forwarding side
follows the frames all the same."""
CLIENT_TIMEOUT = 8.0
"""The client's own timeout: where the end was held, its read waited this long."""
PROMPT = 2.0
"""Directly the end reaches the reading client in milliseconds; well under its timeout here."""


def _call(ident: str) -> bytes:
    return GOLEM.encode({"id": ident, "method": "scene.list_layers", "params": {}})


def _answer(ident: str) -> bytes:
    return GOLEM.encode({"id": ident, "result": {"layers": []}, "error": None})


class AnswersThenCloses(ThreadedServer):
    """A plugin stand-in: reads ``expect`` bytes of requests (all of them, so its close is a
    FIN and not a reset), writes ``answer``, and closes its socket, as a plugin killed in the
    middle of the next call does."""

    def __init__(self, expect: int, answer: bytes) -> None:
        self.expect = expect
        self.answer = answer
        self.close_when: Optional[threading.Event] = None
        """Set: the socket is closed only once it is (the test did something first)."""
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            got = b""
            while len(got) < self.expect and (chunk := conn.recv(65536)):
                got += chunk
            conn.sendall(self.answer)
            if self.close_when is not None:
                self.close_when.wait(20)


def _ended_within(sock: socket.socket, within: float) -> Optional[float]:
    """Seconds until ``sock`` reads its end (EOF or a reset), or None when it did not within
    ``within``."""
    sock.settimeout(within)
    start = time.monotonic()
    try:
        data = sock.recv(65536)
    except ConnectionResetError:
        return time.monotonic() - start
    except socket.timeout:
        return None
    assert data == b"", f"unexpected bytes {data!r}"
    return time.monotonic() - start


def _poll(done: Callable[[], bool], what: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not done():
        assert time.monotonic() < deadline, f"no {what} within {within} s"
        time.sleep(0.05)


def _recorded(record: Path, kind: str) -> Callable[[], bool]:
    return lambda: record.exists() and f'"{kind}"'.encode() in record.read_bytes()


def _gone(proxy_pid: int, observing: int) -> bool:
    return observing not in observing_processes(proxy_pid)


def _kill_observing(proxy_pid: int, record: Path, restarts: int) -> None:
    """Kill the observing process once more than ``restarts`` times, each replacement first
    taking over (the recording says so), until observation stopped for good (it says that)."""
    for killed in range(restarts + 1):
        if killed:
            _poll(_recorded(record, "observation-restarted"), "restart")
        active = observing_processes(proxy_pid)[0]
        os.kill(active, signal.SIGKILL)
        _poll(functools.partial(_gone, proxy_pid, active), "death")
    _poll(_recorded(record, "observation-stopped"), "end of observation")


def _statuses(record: Path) -> list[str]:
    tracker = FlowTracker(GOLEM)
    for event in read_recording(str(record)).events:
        tracker.apply(event)
    return [flow.status(GOLEM) for flow in tracker.flows]


def _proxy(upstream_port: int, record: Path, observer: tuple[str, ...]) -> ProxyCli:
    return start_proxy_cli(
        "--quiet",
        "--observer",
        *observer,
        "--route",
        f"127.0.0.1:0=127.0.0.1:{upstream_port}",
        "--record",
        str(record),
    )


@pytest.mark.parametrize("observer", OBSERVERS)
def test_the_end_reaches_a_client_whose_pipelined_requests_wait(
    tmp_path: Path, observer: tuple[str, ...]
) -> None:
    """Three pipelined calls, the first answered, then the plugin's end: the client, reading
    the second answer, sees the end at once, and the two calls read as unanswered."""
    requests = b"".join(_call(ident) for ident in ("a", "b", "c"))
    record = tmp_path / "pipelined.jsonl"
    with AnswersThenCloses(len(requests), _answer("a")) as plugin:
        cli = _proxy(plugin.port, record, observer)
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
                client.sendall(requests)
                first = MessageReader(client).read_message(Role.RESPONSE)
                assert getattr(first, "id", None) == "a"
                took = _ended_within(client, CLIENT_TIMEOUT)
        finally:
            cli.stop()
    assert took is not None and took < PROMPT, f"the end took {took} s to reach the client"
    assert _statuses(record) == ["ok"] + ["unanswered (upstream closed)"] * 2


@pytest.mark.parametrize("observer", OBSERVERS)
def test_the_end_reaches_a_client_whose_answer_was_cut(
    tmp_path: Path, observer: tuple[str, ...]
) -> None:
    """One call and half its answer, then the plugin's end: the client, reading the rest of
    that answer, sees the end at once; the call reads as unanswered, the half as truncated."""
    answer = _answer("a")
    record = tmp_path / "cut.jsonl"
    with AnswersThenCloses(len(_call("a")), answer[: len(answer) // 2]) as plugin:
        cli = _proxy(plugin.port, record, observer)
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
                client.sendall(_call("a"))
                got = b""
                client.settimeout(10)
                while len(got) < len(answer) // 2:
                    chunk = client.recv(65536)
                    assert chunk, "the end came before the half answer"
                    got += chunk
                took = _ended_within(client, CLIENT_TIMEOUT)
        finally:
            cli.stop()
    assert took is not None and took < PROMPT, f"the end took {took} s to reach the client"
    assert _statuses(record) == ["unanswered (upstream closed)", "truncated"]


@pytest.mark.parametrize("observer", OBSERVERS)
def test_an_idle_connections_end_still_waits_for_the_client(
    tmp_path: Path, observer: tuple[str, ...]
) -> None:
    """Every call answered, then the plugin's end (a restart between calls): the end is held
    until the client sends again, and that send is answered with a reset, on which the client
    reconnects and retries instead of failing a call."""
    record = tmp_path / "idle.jsonl"
    with AnswersThenCloses(len(_call("a")), _answer("a")) as plugin:
        cli = _proxy(plugin.port, record, observer)
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
                client.sendall(_call("a"))
                MessageReader(client).read_message(Role.RESPONSE)
                assert _ended_within(client, 1.0) is None  # held: the client is not told yet
                client.sendall(_call("b"))
                client.settimeout(10)
                with pytest.raises(ConnectionResetError):
                    while client.recv(65536):
                        pass
        finally:
            cli.stop()
    assert _statuses(record) == ["ok", "undelivered (upstream gone)"]


def _answered_then_idle(
    plugin: AnswersThenCloses, cli: ProxyCli, before_close: Callable[[], None]
) -> None:
    """One call answered, ``before_close``, then the plugin's end: it is held from the idle
    client until it calls again, which is answered with a reset."""
    close = plugin.close_when = threading.Event()
    with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
        client.sendall(_call("a"))
        MessageReader(client).read_message(Role.RESPONSE)
        before_close()
        close.set()
        assert _ended_within(client, 1.0) is None  # held: the client is not told yet
        client.sendall(_call("b"))
        client.settimeout(10)
        with pytest.raises(ConnectionResetError):
            while client.recv(65536):
                pass


@pytest.mark.parametrize("restarts", [0, 1], ids=["no-restart", "restarts-used-up"])
def test_an_idle_connections_end_waits_once_observation_stopped_for_good(
    tmp_path: Path, restarts: int
) -> None:
    """The observing process killed for good (no restart left) while the connection is idle,
    then the plugin's end: the frames are still followed, and the end is held as before."""
    record = tmp_path / "stopped.jsonl"
    with AnswersThenCloses(len(_call("a")), _answer("a")) as plugin:
        observer = ("child-process", "--observer-restarts", str(restarts))
        cli = _proxy(plugin.port, record, observer)
        try:
            _answered_then_idle(
                plugin, cli, lambda: _kill_observing(cli.process.pid, record, restarts)
            )
        finally:
            cli.stop()


@pytest.mark.parametrize("observer", OBSERVERS)
def test_an_idle_connections_end_waits_after_an_answer_over_the_cap(
    tmp_path: Path, observer: tuple[str, ...]
) -> None:
    """An answer over ``--max-frame`` (not decoded: skipped, a framing error) still answers
    its call: the plugin's end after it is held from the idle client as after any other."""
    big = GOLEM.encode({"id": "a", "result": {"blob": "x" * 200_000}, "error": None})
    record = tmp_path / "oversized.jsonl"
    with AnswersThenCloses(len(_call("a")), big) as plugin:
        cli = _proxy(plugin.port, record, (*observer, "--max-frame", "100000"))
        try:
            _answered_then_idle(plugin, cli, lambda: None)
        finally:
            cli.stop()
