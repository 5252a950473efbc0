"""``proxy --fault error`` against a client that pipelines its requests and reads the answers
in order, as GOLEM's does: the answer the proxy makes in the plugin's place goes after the
plugin's answers to the requests sent before it, so the client pairs each answer with the
request it answers. The headless plugin in its own process, and scripted ones for answers it
cannot give (a wrong id, one too large to decode, none at all), both observers."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.robustness.proxy_cli import ProxyCli, start_proxy_cli
from bench.threaded_server import ThreadedServer
from golem_core.profiles import GOLEM, MCP
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli
from tests.support.plugin_fixture import plugin_fixture
from tests.support.waiting import receive_exactly

plugin = plugin_fixture(seed=5, scope="module", extra_args=("--debug-methods",))


def _request(ident: str, method: str, params: dict[str, Any]) -> bytes:
    return GOLEM.frame_payload(
        json.dumps({"id": ident, "method": method, "params": params}).encode()
    )


def _answers(client: socket.socket, count: int) -> list[dict[str, Any]]:
    """The next ``count`` answers, in the order the client reads them."""
    answers = []
    for _ in range(count):
        size = struct.unpack("!I", receive_exactly(client, 4))[0]
        answers.append(json.loads(receive_exactly(client, size)))
    return answers


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_an_injected_error_waits_for_the_answers_to_earlier_pipelined_requests(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "turns.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observer", observer, "--fault", "error:code=TIMEOUT,message=busy,method=ping",
    )  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", cli.port), timeout=10) as client:
            # The plugin takes 0.3 s over the first; the proxy answers the second itself.
            client.sendall(
                _request("slow-1", "debug.sleep", {"seconds": 0.3})
                + _request("err-2", "ping", {})
                + _request("ok-3", "scene.list_layers", {})
                + _request("err-4", "ping", {})
            )
            answers = _answers(client, 4)
            # Nothing waits before it now: the proxy's answer goes at once.
            client.sendall(_request("err-5", "ping", {}))
            answers += _answers(client, 1)
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert [(a["id"], a.get("error") is not None) for a in answers] == [
        ("slow-1", False),
        ("err-2", True),
        ("ok-3", False),
        ("err-4", True),
        ("err-5", True),
    ]
    # The recording holds them in the order the client got them, each paired with its request.
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    sent = [line["id"] for line in lines if line["kind"] == "frame" and line["dir"] == "s2c"]
    assert sent == ["slow-1", "err-2", "ok-3", "err-4", "err-5"]
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(row["method"], row["status"]) for row in rows] == [
        ("debug.sleep", "ok"),
        ("ping", "TIMEOUT (--fault error)"),
        ("scene.list_layers", "ok"),
        ("ping", "TIMEOUT (--fault error)"),
        ("ping", "TIMEOUT (--fault error)"),
    ]


class ScriptedPlugin(ThreadedServer):
    """A plugin that runs ``script`` on each connection (the proxy's probes, which send
    nothing, aside), then keeps it open until `done`."""

    def __init__(self, script: Callable[[socket.socket], None]) -> None:
        self.script = script
        self.done = threading.Event()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                if not conn.recv(1, socket.MSG_PEEK):
                    return
                self.script(conn)
            except OSError:
                return
            self.done.wait(10)

    def close(self) -> None:
        self.done.set()
        super().close()


def _read_request(conn: socket.socket) -> dict[str, Any]:
    size = struct.unpack("!I", receive_exactly(conn, 4))[0]
    request: dict[str, Any] = json.loads(receive_exactly(conn, size))
    return request


def _answer(ident: str, result: Any) -> bytes:
    return GOLEM.frame_payload(json.dumps({"id": ident, "result": result}).encode())


def _faulted(plugin: ScriptedPlugin, record: Path, observer: str, *more: str) -> ProxyCli:
    return start_proxy_cli(
        "--route", f"main@127.0.0.1:0=127.0.0.1:{plugin.port}", "--record", str(record),
        "--observer", observer, "--fault", "error:code=TIMEOUT,message=busy,method=ping", *more,
    )  # fmt: skip


def _fault_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if " fault error " in line]


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_an_answer_with_a_wrong_id_takes_its_turn_all_the_same(
    tmp_path: Path, observer: str
) -> None:
    """The client takes the plugin's answer for its first request's, whatever id it carries:
    the proxy's error goes after it, not once an answer with the first request's id comes
    (never, here)."""

    def script(conn: socket.socket) -> None:
        first, third = _read_request(conn), _read_request(conn)
        conn.sendall(_answer(f"not-{first['id']}", "A") + _answer(third["id"], "C"))

    record = tmp_path / "wrong-id.jsonl"
    with ScriptedPlugin(script) as plugin:
        cli = _faulted(plugin, record, observer)
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=5) as client:
                client.sendall(
                    _request("a1", "scene.list_layers", {})
                    + _request("b2", "ping", {})
                    + _request("c3", "scene.list_layers", {})
                )
                answers = _answers(client, 3)
        finally:
            plugin.done.set()  # the plugin closes: nothing left to drain
            log = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert [(a["id"], a.get("error") is not None) for a in answers] == [
        ("not-a1", False),
        ("b2", True),
        ("c3", False),
    ]
    # Held when the fault hit, its line says so, not that it answered.
    [line] = _fault_lines(log)
    assert line.endswith("withheld request: ping id=b2 (48 bytes); its answer TIMEOUT: busy"
                         " waits for 1 earlier answer"), line  # fmt: skip


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_an_answer_too_large_to_decode_takes_its_turn(tmp_path: Path, observer: str) -> None:
    """An answer over ``--max-frame`` goes on as bytes the proxy skips, never decoded: it is
    the answer the client reads all the same, and the error behind it goes after it."""

    def script(conn: socket.socket) -> None:
        first = _read_request(conn)
        conn.sendall(_answer(first["id"], {"blob": "x" * 500}))

    record = tmp_path / "oversized.jsonl"
    with ScriptedPlugin(script) as plugin:
        cli = _faulted(plugin, record, observer, "--max-frame", "200")
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=5) as client:
                client.sendall(_request("a1", "scene.list_layers", {}) + _request("b2", "ping", {}))
                answers = _answers(client, 2)
        finally:
            plugin.done.set()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert [(a["id"], a.get("error") is not None) for a in answers] == [
        ("a1", False),
        ("b2", True),
    ]


def test_an_answer_a_delay_holds_goes_before_the_error_behind_it(tmp_path: Path) -> None:
    """The plugin's answer is decided on at once, and goes 0.3 s later (``delay``): it counts
    once it went, so the errors behind it go after it, and after each other in order."""

    def script(conn: socket.socket) -> None:
        for _ in range(2):
            conn.sendall(_answer(_read_request(conn)["id"], "ok"))

    with ScriptedPlugin(script) as plugin:
        cli = _faulted(
            plugin, tmp_path / "delayed.jsonl", "in-process",
            "--fault", "delay:ms=300,dir=s2c,method=scene.list_layers",
        )  # fmt: skip
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=5) as client:
                client.sendall(
                    _request("a1", "scene.list_layers", {})
                    + _request("b2", "ping", {})
                    + _request("c3", "scene.list_objects", {})
                    + _request("d4", "ping", {})
                )
                answers = _answers(client, 4)
        finally:
            plugin.done.set()
            log = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert [a["id"] for a in answers] == ["a1", "b2", "c3", "d4"]
    assert [line.split("; ")[-1] for line in _fault_lines(log)] == [
        "its answer TIMEOUT: busy waits for 1 earlier answer",
        "its answer TIMEOUT: busy waits for 3 earlier answers",  # a1, b2, c3
    ]


def test_a_client_that_pairs_replies_by_id_gets_the_error_at_once(tmp_path: Path) -> None:
    """An MCP client hands each reply to the request of its id: the error waits for nothing,
    not for the answer to a call the server never answers (one the client cancelled)."""

    def script(conn: socket.socket) -> None:
        conn.recv(65536)  # the call, never answered

    def line(obj: dict[str, Any]) -> bytes:
        return (json.dumps(obj) + "\n").encode()

    with ScriptedPlugin(script) as plugin:
        cli = start_proxy_cli(
            "--profile", "mcp", "--route", f"127.0.0.1:0=127.0.0.1:{plugin.port}",
            "--fault", "error:code=-32000,message=busy,method=ping",
        )  # fmt: skip
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=3) as client:
                call = {"name": "slow", "arguments": {}}
                client.sendall(
                    line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
                    + line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 1}})
                    + line({"jsonrpc": "2.0", "id": 2, "method": "ping"})
                )  # fmt: skip
                reply = json.loads(client.makefile("rb").readline())
        finally:
            plugin.done.set()
            cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert MCP.replies_by_id
    assert (reply["id"], reply["error"]["message"]) == (2, "busy")


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_an_answer_still_held_when_the_connection_ends_is_said_not_sent(
    tmp_path: Path, observer: str
) -> None:
    """The plugin works on the first request when a fault resets the connection: the error
    held behind it never goes, and the close, the log and the request's row say so."""

    def script(conn: socket.socket) -> None:
        _read_request(conn)  # never answered

    record = tmp_path / "ended.jsonl"
    with ScriptedPlugin(script) as plugin:
        cli = _faulted(plugin, record, observer, "--fault", "reset:method=quit")
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=5) as client:
                client.sendall(
                    _request("a1", "scene.list_layers", {})
                    + _request("b2", "ping", {})
                    + _request("c3", "quit", {})
                )
                with pytest.raises(ConnectionResetError):
                    assert not client.recv(1)  # reset, nothing sent first
        finally:
            plugin.done.set()  # the plugin closes: nothing left to drain
            log = cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    [line] = _fault_lines(log)
    assert "; its answer TIMEOUT: busy waits for 1 earlier answer" in line, line
    [closed] = [line for line in log.splitlines() if " closed: " in line]
    assert "1 answer of --fault error not sent: the connection ended first" in closed, closed
    lines = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    [close] = [line for line in lines if line["kind"] == "close"]
    assert "1 answer of --fault error not sent: the connection ended first" in close["reason"]
    shown = run_cli("show", "--json", str(record))
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(row["method"], row["status"]) for row in rows][:2] == [
        ("scene.list_layers", "unanswered (truncated by --fault reset)"),
        ("ping", "undelivered (withheld: --fault error)"),
    ]


def test_an_answer_still_held_when_the_proxy_stops_is_said_not_sent(tmp_path: Path) -> None:
    """The proxy stops (its drain runs out) while the plugin works on the first request: the
    close says why it ended, then that the error held behind it was never sent."""
    third = threading.Event()

    def script(conn: socket.socket) -> None:
        _read_request(conn)  # never answered
        _read_request(conn)
        third.set()  # forwarded after the error was held: the proxy reads in order

    with ScriptedPlugin(script) as plugin:
        cli = _faulted(plugin, tmp_path / "stopped.jsonl", "in-process", "--drain-timeout", "0.5")
        try:
            with socket.create_connection(("127.0.0.1", cli.port), timeout=5) as client:
                client.sendall(
                    _request("a1", "scene.list_layers", {})
                    + _request("b2", "ping", {})
                    + _request("c3", "scene.list_layers", {})
                )
                assert third.wait(10)
                log = cli.stop()
        finally:
            plugin.done.set()
            cli.kill()
    assert cli.process.returncode == 0, cli.stderr
    [line] = _fault_lines(log)
    assert "; its answer TIMEOUT: busy waits for 1 earlier answer" in line, line
    [closed] = [line for line in log.splitlines() if " closed: " in line]
    assert closed.split(" closed: ")[1].startswith(
        "proxy shutting down; 1 answer of --fault error not sent: the connection ended first"
    ), closed
