"""``proxy --observer child-process`` on the routes that decide before they forward:
``--fault``, ``--enforce-limits`` and ``--intercept-timeout`` (``--intercept`` driven from
stdin: tests/commands/test_intercept_cli.py), and a route that is a Unix socket on both sides.
The real command line, the headless plugin upstream, real loopback sockets; each session's
recording is compared, line for line, with the one a single process makes of it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.blocking import MessageReader
from golem_core.messages import ErrorResponse, Request, Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    FaultInjected,
    FramingErrorSeen,
    InterceptStep,
    ViolationSeen,
)
from golem_proxy.live.observer_link import STALL_LIMIT
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.call_outcomes import call_outcomes
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.recording_lines import differing_lines
from tests.live.observer_child_helpers import observed_proxy, pipelined_echoes, wait_for
from tests.live.test_observer_trail import _recorded_kinds as recorded_kinds
from tests.live.test_observer_trail import _session as trail_session
from tests.live.test_observer_trail import _stalled as stalled

OBSERVERS = ("in-process", "child-process")
T = TypeVar("T")

FAULTS = (
    "delay:ms=30,method=scene.get_document_info",
    "error:code=TIMEOUT,method=viewport.get_view_info",
    "slice:size=64,dir=s2c,method=scene.list_layers",
    "corrupt:bytes=2,dir=s2c,method=scene.list_objects",
    "truncate:dir=s2c,method=scene.create_layer",
    "reset:when=before,method=scene.delete_layer",
)


@pytest.fixture
def fresh_plugin() -> Iterator[Any]:
    """A factory of headless plugins, each in the same state (one per observer compared)."""
    started: list[PluginProcess] = []

    def start() -> PluginProcess:
        plugin = PluginProcess(seed=25).start()
        started.append(plugin)
        return plugin

    yield start
    for plugin in started:
        plugin.stop()


def _fault_session(port: int) -> list[list[str]]:
    calls = [
        {"id": 1, "method": "scene.get_document_info", "params": {}},
        {"id": 2, "method": "viewport.get_view_info", "params": {}},
        {"id": 3, "method": "scene.list_layers", "params": {}},
        {"id": 4, "method": "scene.list_objects", "params": {}},
    ]
    return [
        call_outcomes(port, calls),
        call_outcomes(port, [{"id": 5, "method": "scene.create_layer", "params": {"name": "Cut"}}]),
        call_outcomes(port, [{"id": 6, "method": "scene.delete_layer", "params": {"name": "Cut"}}]),
    ]


def _each_observer(
    fresh_plugin: Any, tmp_path: Path, session: Callable[[int], T], *options: str
) -> tuple[dict[str, T], dict[str, str]]:
    """Run ``session`` (given the proxy's port) through ``proxy`` with ``options`` to a fresh
    plugin, once per observer place, each recording to ``tmp_path``/<place>; returns what
    ``session`` returned and the proxy's log, by place. Asserts each proxy exits 0."""
    got: dict[str, T] = {}
    logs: dict[str, str] = {}
    for observer in OBSERVERS:
        plugin = fresh_plugin()
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0={plugin.main}", "--record", str(tmp_path / observer),
            *options, "--observer", observer,
        )  # fmt: skip
        try:
            got[observer] = session(cli.port)
        finally:
            logs[observer] = cli.stop()
        assert cli.process.returncode == 0, cli.stderr
    return got, logs


def test_faults_act_alike_and_are_recorded_alike_in_a_child(
    fresh_plugin: Any, tmp_path: Path
) -> None:
    faults = [arg for spec in FAULTS for arg in ("--fault", spec)]
    got, logs = _each_observer(
        fresh_plugin, tmp_path, _fault_session, "--fault-seed", "25", *faults
    )
    for out in logs.values():
        assert "fault error viewport.get_view_info" in out  # logged by whichever observes
    assert got["child-process"] == got["in-process"]
    assert got["in-process"][0] == ["ok", "error TIMEOUT", "ok", "malformed"]
    assert got["in-process"][1:] == [["truncated"], ["reset"]]
    recording = read_recording(str(tmp_path / "child-process"))
    kinds = [e.fault for e in recording.events if isinstance(e, FaultInjected)]
    # The delay acts both ways (no dir=): on the request and on its answer.
    assert kinds == ["delay", "delay", "error", "slice", "corrupt", "truncate", "reset"]
    assert [e.method for e in recording.exchanges()] == [
        "scene.get_document_info", "viewport.get_view_info", "scene.list_layers",
        "scene.list_objects",
    ]  # fmt: skip
    assert differing_lines(tmp_path / "in-process", tmp_path / "child-process") == []


def _limits_session(port: int) -> tuple[list[str], bytes]:
    """A good call, then a frame that is not JSON: returns what the client got for the call
    and what it read after the bad frame (nothing: the connection is closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        reader = MessageReader(sock)
        sock.sendall(GOLEM.encode({"id": 1, "method": "scene.get_document_info", "params": {}}))
        answer = reader.read_message(Role.RESPONSE)
        first = ["ok" if isinstance(answer, Response) else repr(answer)]
        sock.sendall(GOLEM.frame_payload(b'{"id": 2, "method": "scene.list_layers", ]'))
        try:
            after = sock.recv(65536)
        except ConnectionResetError:
            after = b"reset"
    return first, after


def test_enforce_limits_closes_the_connection_before_forwarding_in_a_child(
    fresh_plugin: Any, tmp_path: Path
) -> None:
    got, _ = _each_observer(fresh_plugin, tmp_path, _limits_session, "--enforce-limits")
    assert got["child-process"] == got["in-process"] == (["ok"], b"")
    recording = read_recording(str(tmp_path / "child-process"))
    (closed,) = [e for e in recording.events if isinstance(e, ConnectionClosed)]
    assert closed.reason.startswith("closed by --enforce-limits: c2s malformed frame")
    assert closed.bytes_c2s == len(GOLEM.encode({"id": 1, "method": "scene.get_document_info",
                                                  "params": {}}))  # fmt: skip
    assert [e for e in recording.events if isinstance(e, FramingErrorSeen)] == []
    assert len(recording.exchanges()) == 1
    assert differing_lines(tmp_path / "in-process", tmp_path / "child-process") == []


class UnixEchoPlugin:
    """A GOLEM peer on a Unix socket that answers every request with its params (a thread per
    connection): the upstream of a route that is Unix on both sides."""

    def __init__(self, path: Path) -> None:
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen()
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            reader = MessageReader(conn)
            with contextlib.suppress(OSError):
                while (message := reader.read_message(Role.REQUEST)) is not None:
                    assert isinstance(message, Request)
                    conn.sendall(GOLEM.encode({"id": message.id, "result": message.params}))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        self._acceptor.join(10)


def test_a_unix_route_on_both_sides_is_faulted_and_observed_in_a_child(tmp_path: Path) -> None:
    private = tmp_path / "run"
    private.mkdir(mode=0o700)
    upstream = UnixEchoPlugin(private / "plugin.sock")
    record = tmp_path / "unix.jsonl"
    listen = private / "proxy.sock"
    try:
        cli = start_proxy_cli(
            "--route", f"unix:{listen}=unix:{private / 'plugin.sock'}", "--record", str(record),
            "--fault", "error:code=TIMEOUT,method=viewport.*", "--observer", "child-process",
        )  # fmt: skip
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(10)
                sock.connect(str(listen))
                reader = MessageReader(sock)
                got = []
                for n, method in enumerate(["scene.echo", "viewport.capture", "scene.echo"]):
                    sock.sendall(GOLEM.encode({"id": n, "method": method, "params": {"n": n}}))
                    got.append(reader.read_message(Role.RESPONSE))
        finally:
            cli.stop()
    finally:
        upstream.close()
    assert cli.process.returncode == 0, cli.stderr
    assert isinstance(got[0], Response) and got[0].result == {"n": 0}
    assert isinstance(got[1], ErrorResponse) and got[1].error.code == "TIMEOUT"
    assert isinstance(got[2], Response) and got[2].result == {"n": 2}
    recording = read_recording(str(record))
    assert [e.method for e in recording.exchanges()] == ["scene.echo", "viewport.capture",
                                                          "scene.echo"]  # fmt: skip
    assert [e.fault for e in recording.events if isinstance(e, FaultInjected)] == ["error"]
    (opened,) = [e for e in recording.events if isinstance(e, ConnectionOpened)]
    assert opened.client == f"unix:pid={os.getpid()}"
    assert opened.upstream == f"unix:{private / 'plugin.sock'}"


def test_an_intercept_timeout_releases_held_frames_in_a_child(
    fresh_plugin: Any, tmp_path: Path
) -> None:
    """Held frames wait in the forwarding process, and its timer sends them on; with no
    console at all (stdin is /dev/null here)."""
    plugin = fresh_plugin()
    record = tmp_path / "timeout.jsonl"
    cli = start_proxy_cli(
        "--route", f"127.0.0.1:0={plugin.main}", "--record", str(record),
        "--intercept", "~q", "--intercept-timeout", "0.2", "--observer", "child-process",
    )  # fmt: skip
    try:
        got = call_outcomes(cli.port, [{"id": n, "method": "scene.list_layers", "params": {}}
                               for n in range(2)])  # fmt: skip
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert got == ["ok", "ok"]
    recording = read_recording(str(record))
    steps = [e.fault for e in recording.events if isinstance(e, InterceptStep)]
    assert steps == ["intercept:held", "intercept:timeout"] * 2
    assert len(recording.exchanges()) == 2


@pytest.mark.parametrize("route", ["--fault", "--intercept"])
def test_a_pipelined_burst_on_a_deciding_route_is_recorded_whole_in_a_child(
    tmp_path: Path, route: str
) -> None:
    """20,000 requests in one burst on a route that forwards frame by frame: the child falls
    behind, the pumps wait for it (as a plain route's do) rather than shed, so every exchange
    is recorded, each answer paired with its request."""
    record = tmp_path / "burst.jsonl"
    count = 20_000
    rule = "delay:ms=1,method=nothing" if route == "--fault" else "~m nothing"
    with observed_proxy(record, "-q", route, rule, "--observer", "child-process") as cli:
        try:
            pipelined_echoes(cli.port, count)
        finally:
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    recording = read_recording(str(record))
    exchanges = recording.exchanges()
    assert len(exchanges) == count
    assert all(e.request.message.id == e.response.message.id for e in exchanges)
    assert [e for e in recording.events if isinstance(e, ViolationSeen)] == []


@pytest.mark.parametrize(
    "route", [("--fault", "delay:ms=1,method=nothing"), ("--intercept", "~m nothing")]
)
def test_a_stopped_observer_holds_a_deciding_route_which_resumes_with_nothing_lost(
    tmp_path: Path, route: tuple[str, str]
) -> None:
    """The pumps that forward frame by frame wait for a recording that trails, as a plain
    route's do (tests/live/test_observer_trail.py): without it, answers went on while the
    observing process was stopped."""

    def stop_and_continue(client: Any, observer: int) -> None:
        os.kill(observer, signal.SIGSTOP)
        try:
            wait_for(lambda: stalled(client), timeout=STALL_LIMIT / 2, what="a hold")
        finally:
            os.kill(observer, signal.SIGCONT)

    record = tmp_path / "held.jsonl"
    run = trail_session(record, stop_and_continue, *route)
    assert "observation stopped" not in run.stderr
    kinds = recorded_kinds(record)
    assert "gap" not in kinds and "unobserved" not in kinds
    assert len(read_recording(str(record)).exchanges()) == run.answered
