"""``proxy --observer child-process`` on the routes that decide before they forward:
``--fault`` and ``--enforce-limits`` (``--intercept``: tests/commands/test_intercept_cli.py).
The real command line, the headless plugin upstream, real loopback sockets; each session's
recording is compared, line for line, with the one a single process makes of it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import start_proxy_cli
from golem_core.blocking import MessageReader
from golem_core.errors import TruncatedFrame
from golem_core.messages import ErrorResponse, Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionClosed, FaultInjected, FramingErrorSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.recording_lines import differing_lines

OBSERVERS = ("in-process", "child-process")

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


def _call(port: int, calls: list[dict[str, Any]]) -> list[str]:
    """Send each call on one connection, one at a time; returns what the client got for each
    (``ok``, ``error CODE``, ``malformed``, ``end``, ``reset``, ``truncated``), stopping at
    the first that ends the connection."""
    got: list[str] = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        reader = MessageReader(sock)
        for call in calls:
            try:
                sock.sendall(GOLEM.encode(call))
                answer = reader.read_message(Role.RESPONSE)
            except ConnectionResetError:
                return [*got, "reset"]
            except TruncatedFrame:
                return [*got, "truncated"]
            if answer is None:
                return [*got, "end"]
            if isinstance(answer, ErrorResponse):
                got.append(f"error {answer.error.code}")
            else:
                got.append("ok" if isinstance(answer, Response) else "malformed")
    return got


def _fault_session(port: int) -> list[list[str]]:
    calls = [
        {"id": 1, "method": "scene.get_document_info", "params": {}},
        {"id": 2, "method": "viewport.get_view_info", "params": {}},
        {"id": 3, "method": "scene.list_layers", "params": {}},
        {"id": 4, "method": "scene.list_objects", "params": {}},
    ]
    return [
        _call(port, calls),
        _call(port, [{"id": 5, "method": "scene.create_layer", "params": {"name": "Cut"}}]),
        _call(port, [{"id": 6, "method": "scene.delete_layer", "params": {"name": "Cut"}}]),
    ]


def test_faults_act_alike_and_are_recorded_alike_in_a_child(
    fresh_plugin: Any, tmp_path: Path
) -> None:
    got = {}
    for observer in OBSERVERS:
        plugin = fresh_plugin()
        faults = [arg for spec in FAULTS for arg in ("--fault", spec)]
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0={plugin.main}", "--record", str(tmp_path / observer),
            "--fault-seed", "25", "--observer", observer, *faults,
        )  # fmt: skip
        try:
            got[observer] = _fault_session(cli.port)
        finally:
            out = cli.stop()
        assert cli.process.returncode == 0, cli.stderr
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
    got = {}
    for observer in OBSERVERS:
        plugin = fresh_plugin()
        cli = start_proxy_cli(
            "--route", f"127.0.0.1:0={plugin.main}", "--record", str(tmp_path / observer),
            "--enforce-limits", "--observer", observer,
        )  # fmt: skip
        try:
            got[observer] = _limits_session(cli.port)
        finally:
            cli.stop()
        assert cli.process.returncode == 0, cli.stderr
    assert got["child-process"] == got["in-process"] == (["ok"], b"")
    recording = read_recording(str(tmp_path / "child-process"))
    (closed,) = [e for e in recording.events if isinstance(e, ConnectionClosed)]
    assert closed.reason.startswith("closed by --enforce-limits: c2s malformed frame")
    assert closed.bytes_c2s == len(GOLEM.encode({"id": 1, "method": "scene.get_document_info",
                                                  "params": {}}))  # fmt: skip
    assert [e for e in recording.events if isinstance(e, FramingErrorSeen)] == []
    assert len(recording.exchanges()) == 1
    assert differing_lines(tmp_path / "in-process", tmp_path / "child-process") == []
