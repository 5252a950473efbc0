"""A request the plugin never got reads as undelivered, not as sent and unanswered.

A plugin that goes away (restarts while a client's connection sits idle, or closes right after
reading) leaves the client's next bytes to meet a closed socket: the proxy forwards them and the
upstream answers with a reset. Those bytes never reached the plugin, so the recording marks
their frame ``undelivered: upstream gone`` and every view says ``undelivered (upstream gone)``,
never ``unanswered`` (which says the plugin may have acted on it). A request the plugin did
read before it closed stays ``unanswered (upstream closed)``. With observation in the proxy's
process and in a process of its own."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_proxy.events import Direction, FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import interrupt, reap, run_cli, start_cli, wait_for_line
from tests.support.real_rules_client import RealRulesClient
from tests.support.waiting import receive_exactly


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(params=["in-process", "child-process"])
def observer(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def port() -> Iterator[int]:
    yield _free_port()


def _start_proxy(
    upstream_port: int, record: Path, observer: str
) -> tuple[subprocess.Popen[str], int]:
    proxy = start_cli(
        "proxy", "--quiet", "--observer", observer, "--record", str(record),
        "--route", f"127.0.0.1:0=127.0.0.1:{upstream_port}",
    )  # fmt: skip
    listen = int(wait_for_line(proxy, r"127\.0\.0\.1:(\d+) →").group(1))
    return proxy, listen


def _requests(record: Path) -> list[tuple[int, object, str]]:
    """(connection, id, undelivered) of each request frame the recording holds, in order."""
    return [
        (event.conn, getattr(event.message, "id", None), event.undelivered)
        for event in read_recording(str(record)).events
        if isinstance(event, FrameSeen) and event.direction is Direction.C2S
    ]


def _statuses(record: Path) -> list[tuple[int, object, str, str]]:
    """(connection, id, status, undelivered) of each row `show --json` prints."""
    shown = run_cli("show", str(record), "--json")
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines() if line.strip()]
    return [(row["conn"], row["id"], row["status"], row.get("undelivered", "")) for row in rows]


def test_a_request_met_by_a_restarted_plugin_is_undelivered(
    tmp_path: Path, port: int, observer: str
) -> None:
    record = tmp_path / "restart.jsonl"
    plugin = PluginProcess(port=port).start()
    proxy, listen = _start_proxy(port, record, observer)
    try:
        client = RealRulesClient(listen)
        outcomes = [client.call()]
        plugin.stop()  # gone while the client's connection sits idle
        plugin = PluginProcess(port=port).start()
        outcomes.append(client.call())  # meets the dead connection, reset, sent again
        client.close()
        assert interrupt(proxy) == 0
        assert proxy.stdout is not None
        logged = proxy.stdout.read()
        assert proxy.stderr is not None
        closing = proxy.stderr.read()
        verified = run_cli("verify", str(record), "--target", f"127.0.0.1:{port}")
    finally:
        plugin.stop()
        reap(proxy)
    assert outcomes == ["ok", "ok"]
    assert _requests(record) == [(1, "c1", ""), (1, "c2", "upstream gone"), (2, "c2", "")]
    assert _statuses(record) == [
        (1, "c1", "ok", ""),
        (1, "c2", "undelivered (upstream gone)", "upstream gone"),
        (2, "c2", "ok", ""),
    ]
    # The live log says it, quiet as it is: no exchange line ever will.
    [line] = [line for line in logged.splitlines() if "undelivered" in line]
    assert re.search(r"main  #1 +ping +undelivered \(upstream gone\) +48 B →", line), line
    assert "(0 errors, 0 violations; 1 request without an answer (1 never delivered))" in closing
    # verify sends neither; the one the plugin never got cannot have changed what followed.
    said = verified.stdout + verified.stderr
    assert verified.returncode == 0, said
    assert "1 request the plugin never got when recorded not sent (#2 ping undelivered" in said
    assert "may have acted" not in said
    check = run_cli("check", str(record))
    assert "undelivered (upstream gone)" in check.stdout + check.stderr
    assert "unanswered" not in check.stdout + check.stderr


class ClosingPlugin:
    """A GOLEM upstream that reads one request on each connection and closes it unanswered
    (a plugin that dies right after reading), until it read ``requests`` of them (a
    connection that closes before a whole request, the proxy's probe, is not counted)."""

    def __init__(self, requests: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = int(self.listener.getsockname()[1])
        self.read: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, args=(requests,), daemon=True)
        self._thread.start()

    def _serve(self, requests: int) -> None:
        with self.listener:
            for _ in range(4 * requests):  # bounded: probes and strays too
                if len(self.read) == requests:
                    return
                try:
                    sock, _ = self.listener.accept()
                except OSError:
                    return
                with sock:
                    sock.settimeout(10)
                    try:
                        header = receive_exactly(sock, 4)
                        self.read.append(receive_exactly(sock, int.from_bytes(header, "big")))
                    except OSError:
                        continue

    def join(self) -> None:
        self._thread.join(15)


def test_a_request_after_the_plugin_closed_is_undelivered(tmp_path: Path, observer: str) -> None:
    record = tmp_path / "closing.jsonl"
    upstream = ClosingPlugin(requests=2)
    proxy, listen = _start_proxy(upstream.port, record, observer)
    try:
        client = RealRulesClient(listen)
        # The plugin reads c1 and closes: the client reads the end of the stream (not retried)
        # and writes c2 on the same connection, which the proxy forwards and the closed
        # socket refuses with a reset (the client reads the end of the stream first, as
        # directly); c3 then meets the reset, and is sent again on a new connection, which
        # the plugin reads and closes. The client pauses between calls, so that the proxy's
        # reset of it comes before its next write, as the plugin's would directly.
        outcomes = []
        for _ in range(3):
            outcomes.append(client.call())
            time.sleep(0.3)
        client.close()
        upstream.join()
    finally:
        assert interrupt(proxy) == 0
    assert outcomes == ["failed:ConnectionError"] * 3
    # The plugin never read c2: the truth the recording must tell.
    assert [json.loads(body)["id"] for body in upstream.read] == ["c1", "c3"]
    assert _requests(record) == [(1, "c1", ""), (1, "c2", "upstream gone"), (2, "c3", "")]
    assert _statuses(record) == [
        (1, "c1", "unanswered (upstream closed)", ""),
        (1, "c2", "undelivered (upstream gone)", "upstream gone"),
        (2, "c3", "unanswered (upstream closed)", ""),
    ]


class _OneClientPlugin:
    """A GOLEM upstream on a thread of its own that serves one client (`_served`), past the
    proxy's probes (connections that close at once)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = int(self.listener.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with self.listener:
            for _ in range(8):  # bounded: the proxy's probes close at once
                try:
                    sock, _ = self.listener.accept()
                except OSError:
                    return
                with sock:
                    if self._served(sock):
                        return

    def _served(self, sock: socket.socket) -> bool:
        """Serve ``sock``; False when it was not the client (a probe)."""
        raise NotImplementedError

    def join(self) -> None:
        self._thread.join(15)


class HalfClosingPlugin(_OneClientPlugin):
    """A GOLEM upstream that says it will send nothing more (SHUT_WR) on the first connection
    that sends a byte, then reads one request, keeps it (it acted on it) and closes with
    whatever else came still unread: its kernel resets, as a closed socket's does."""

    def __init__(self) -> None:
        self.read: list[bytes] = []
        self.half_closed = threading.Event()
        super().__init__()

    def _served(self, sock: socket.socket) -> bool:
        sock.settimeout(0.5)
        try:
            sock.recv(1, socket.MSG_PEEK)
            return False  # a probe's end of stream, or a stray byte: not the client
        except socket.timeout:
            pass  # open and silent: the client's connection
        sock.settimeout(10)
        sock.shutdown(socket.SHUT_WR)
        self.half_closed.set()
        header = receive_exactly(sock, 4)
        self.read.append(receive_exactly(sock, int.from_bytes(header, "big")))
        return True


def _frame(ident: str, method: str) -> bytes:
    payload = json.dumps({"id": ident, "method": method, "params": {}}).encode()
    return len(payload).to_bytes(4, "big") + payload


def test_a_half_closed_plugin_that_read_a_request_did_get_it(tmp_path: Path, observer: str) -> None:
    """Its reset says some bytes were left unread, not which: the request it read (and acted
    on) reached it, whatever followed; neither is said undelivered."""
    record = tmp_path / "half.jsonl"
    upstream = HalfClosingPlugin()
    proxy, listen = _start_proxy(upstream.port, record, observer)
    try:
        with socket.create_connection(("127.0.0.1", listen), timeout=10) as client:
            assert upstream.half_closed.wait(10)
            time.sleep(0.3)  # the plugin's FIN reaches the proxy (held from the client)
            client.sendall(_frame("A", "scene.create_layer") + _frame("B", "scene.list_layers"))
            upstream.join()
            client.settimeout(5)
            with contextlib.suppress(OSError):
                client.recv(100)
    finally:
        assert interrupt(proxy) == 0
    assert [json.loads(body)["id"] for body in upstream.read] == ["A"]
    assert [undelivered for _, _, undelivered in _requests(record)] == ["", ""]


class SlowPlugin(_OneClientPlugin):
    """A GOLEM upstream that reads one request and answers it once told to (``go``)."""

    def __init__(self) -> None:
        self.got_request = threading.Event()
        self.go = threading.Event()
        super().__init__()

    def _served(self, sock: socket.socket) -> bool:
        sock.settimeout(10)
        try:
            header = receive_exactly(sock, 4)
            receive_exactly(sock, int.from_bytes(header, "big"))
        except OSError:
            return False  # a probe: closed before a whole request
        self.got_request.set()
        self.go.wait(10)
        with contextlib.suppress(OSError):
            sock.sendall(_frame_answer("A"))
            time.sleep(0.5)  # the proxy's write lands before this socket closes
        return True


def _frame_answer(ident: str) -> bytes:
    payload = json.dumps({"id": ident, "result": {"ok": True}, "error": None}).encode()
    return len(payload).to_bytes(4, "big") + payload


def test_an_answer_to_a_client_that_gave_up_and_closed_is_undelivered(
    tmp_path: Path, observer: str
) -> None:
    """The client times out and closes its socket; the plugin's answer comes after: the
    client's kernel refuses it unread, and the recording says the client never got it."""
    record = tmp_path / "gave-up.jsonl"
    upstream = SlowPlugin()
    proxy, listen = _start_proxy(upstream.port, record, observer)
    try:
        with socket.create_connection(("127.0.0.1", listen), timeout=10) as client:
            client.sendall(_frame("A", "scene.list_layers"))
            assert upstream.got_request.wait(10)
        time.sleep(0.3)  # the client's FIN reaches the proxy before the answer does
        upstream.go.set()
        upstream.join()
    finally:
        assert interrupt(proxy) == 0
    answers = [
        event.undelivered
        for event in read_recording(str(record)).events
        if isinstance(event, FrameSeen) and event.direction is Direction.S2C
    ]
    assert answers == ["client gone"]
    assert _statuses(record) == [(1, "A", "ok (undelivered: client gone)", "client gone")]


@pytest.mark.parametrize("rule", ["drop:dir=c2s", "reset:when=before"])
def test_a_request_a_fault_withheld_reads_undelivered(
    tmp_path: Path, observer: str, rule: str
) -> None:
    """Recorded though never forwarded: the plugin never got it, so it is not `unanswered`
    (which says it may have acted on it)."""
    record = tmp_path / "withheld.jsonl"
    upstream = SlowPlugin()
    proxy = start_cli(
        "proxy", "--quiet", "--observer", observer, "--record", str(record), "--fault", rule,
        "--route", f"127.0.0.1:0=127.0.0.1:{upstream.port}",
    )  # fmt: skip
    listen = int(wait_for_line(proxy, r"127\.0\.0\.1:(\d+) →").group(1))
    try:
        with socket.create_connection(("127.0.0.1", listen), timeout=10) as client:
            client.sendall(_frame("A", "scene.create_layer"))
            client.settimeout(1)
            with contextlib.suppress(OSError):
                client.recv(100)  # nothing comes, or the fault's reset
    finally:
        assert interrupt(proxy) == 0
        upstream.go.set()
    assert not upstream.got_request.is_set()
    fault = rule.split(":")[0]
    assert _statuses(record) == [
        (1, "A", f"undelivered (withheld: --fault {fault})", f"withheld: --fault {fault}")
    ]
