"""``golem-proxy call`` as a user runs it: a subprocess against the headless plugin process."""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import pytest

from golem_proxy.testing.answering_server import answering
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import ROOT, run_cli, run_cli_tty
from tests.support.plugin_fixture import plugin_fixture

plugin = plugin_fixture(seed=11)


def target(plugin: PluginProcess) -> str:
    return f"{plugin.main.host}:{plugin.main.port}"


def test_success_prints_the_result_and_exits_0(plugin: PluginProcess) -> None:
    done = run_cli("call", "ping", "--target", target(plugin))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"alive": True}


def test_params_from_the_argument_reach_the_plugin(plugin: PluginProcess) -> None:
    params = json.dumps({"name": "CallArg", "color": [10, 20, 30]})
    done = run_cli("call", "scene.create_layer", params, "--target", target(plugin))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["full_path"] == "CallArg"


def test_params_from_stdin(plugin: PluginProcess) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "golem_proxy", "call", "scene.create_layer", "-"]
    done = subprocess.run(
        [*command, "--target", target(plugin)],
        input='{"name": "FromStdin"}',
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["full_path"] == "FromStdin"


def test_error_answer_shows_its_code_name_and_exits_1(plugin: PluginProcess) -> None:
    # The plugin's external dispatcher answers an unknown method with -32000, as the real
    # one does.
    done = run_cli("call", "no.such_method", "--target", target(plugin))
    assert done.returncode == 1
    assert done.stdout == "error APPLICATION_ERROR (-32000): Method not found: no.such_method\n"


def test_a_domain_error_shows_its_code_and_details() -> None:
    reply = {
        "id": "d1",
        "result": None,
        "error": {"code": "INVALID_PARAMS", "message": "no name", "details": {"param": "name"}},
    }
    with answering(lambda request_id: json.dumps(reply).encode()) as address:
        done = run_cli("call", "scene.create_layer", "--id", "d1", "--target", address)
    assert done.returncode == 1
    assert done.stdout.startswith("error INVALID_PARAMS: no name\ndetails:\n")
    assert '"param": "name"' in done.stdout


def test_raw_writes_the_exact_response_frame_with_the_given_id(plugin: PluginProcess) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "golem_proxy", "call", "ping", "--raw", "--id", "call-1"]
    done = subprocess.run(
        [*command, "--target", target(plugin)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (length,) = struct.unpack("!I", done.stdout[:4])
    assert length == len(done.stdout) - 4
    assert json.loads(done.stdout[4:]) == {"id": "call-1", "result": {"alive": True}, "error": None}


def test_markup_and_control_characters_in_an_answer_stay_inert(plugin: PluginProcess) -> None:
    name = "[bold red]x\x1b]0;owned\x07"
    done = run_cli(
        "call", "scene.create_layer", json.dumps({"name": name}), "--target", target(plugin)
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "[bold red]x" in done.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("ping", "{nope"), "PARAMS_JSON is not JSON"),
        (("ping", "3"), "PARAMS_JSON must be an object or an array, not a number"),
        (("ping", "--target", "127.0.0.1:1"), "cannot reach 127.0.0.1:1 (connection refused)"),
    ],
)
def test_usage_and_connection_errors_exit_2(args: tuple[str, ...], expected: str) -> None:
    done = run_cli("call", *args)
    assert done.returncode == 2
    assert f"golem-proxy: {expected}" in done.stderr


def call_a_server_that(
    after_request: Callable[[socket.socket], None], *options: str
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``call ping OPTIONS`` against a loopback server that reads the request, then does
    ``after_request`` to the connection instead of answering; returns the run and the port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def serve() -> None:
            peer, _ = server.accept()
            peer.recv(65536)
            after_request(peer)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        done = run_cli("call", "ping", "--target", f"127.0.0.1:{port}", *options)
        thread.join(10)
    return done, port


def _reset(peer: socket.socket) -> None:
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.close()


def test_a_server_that_closes_without_answering_exits_2() -> None:
    done, _ = call_a_server_that(socket.socket.close)
    assert done.returncode == 2
    assert "closed the connection without answering" in done.stderr


def test_a_silent_server_times_out_with_exit_2() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        done = run_cli("call", "ping", "--target", f"127.0.0.1:{port}", "--timeout", "0.5")
    assert done.returncode == 2
    assert "did not answer (waited 0.5 s)" in done.stderr


def _five_bytes_then_nothing(peer: socket.socket) -> None:
    peer.sendall(struct.pack(">I", 40) + b"{")  # a header and one byte of its body
    time.sleep(2)  # past the call's timeout
    peer.close()


def test_a_server_that_stops_mid_answer_is_told_from_one_that_never_answered() -> None:
    """Five bytes of a frame came, then nothing: not "did not answer" (it said so)."""
    done, port = call_a_server_that(_five_bytes_then_nothing, "--timeout", "1")
    assert done.returncode == 2
    said = re.search(
        rf"127\.0\.0\.1:{port} answered 5 bytes of a frame, then nothing for "
        r"(\d+\.\d) s \(waited 1 s\)",
        done.stderr,
    )
    assert said is not None, done.stderr
    assert 0.5 <= float(said.group(1)) <= 1.1


def test_jsonrpc_over_a_unix_socket(tmp_path: Path) -> None:
    """The NDJSON profile on a Unix socket: an integer id, the line framing, the answer."""
    seen: list[bytes] = []

    def answer(line: bytes) -> bytes:
        seen.append(line)
        error = {"code": -32001, "message": "not open"}
        return json.dumps({"jsonrpc": "2.0", "id": json.loads(line)["id"], "error": error}).encode()

    done = call_line_server(tmp_path, answer, "read", '{"path": "a.md"}', "--id", "5")
    assert json.loads(seen[0]) == {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "read",
        "params": {"path": "a.md"},
    }
    assert done.returncode == 1
    assert "ERR_TAB_NOT_OPEN (-32001): not open" in done.stdout


def test_an_answer_that_is_not_utf8_is_malformed_and_exits_1() -> None:
    answer = b'{"id": "\xff\xfe\xc0\xaf", "result": 1}'
    with answering(lambda request_id: answer) as address:
        done = run_cli("call", "ping", "--target", address, "--timeout", "10")
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("malformed answer (invalid-utf8): ")
    assert done.stderr == ""


@pytest.mark.parametrize("given", ["²", "1" * 5000])
def test_an_id_int_cannot_read_is_sent_as_a_string(given: str) -> None:
    seen: list[Any] = []

    def answer(request_id: Any) -> bytes:
        seen.append(request_id)
        return json.dumps({"id": request_id, "result": 1, "error": None}).encode()

    with answering(answer) as address:
        done = run_cli("call", "ping", "--id", given, "--target", address, "--timeout", "10")
    assert done.returncode == 0, done.stderr
    assert seen == [given]


def _peak_rss_bytes(args: list[str], out: Path) -> tuple[int, int]:
    """Run the CLI with ``args``, stdout into ``out``; return (exit code, the child's own
    peak resident size in bytes, from wait4's rusage: no other process counts)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with out.open("wb") as stdout:
        child = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", *args],
            cwd=ROOT,
            env=env,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
        )
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            child.returncode = 0  # reaped above; keeps Popen from waiting again
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024  # Linux: KiB


def test_a_large_answer_prints_within_a_small_multiple_of_its_size(tmp_path: Path) -> None:
    """200,000 small objects (5 MB): indenting them once cost 2.2 GiB; now printing adds at
    most three times the answer's size to what receiving it costs (--raw)."""
    result = [{"i": i, "ok": True} for i in range(200_000)]
    payloads: list[bytes] = []

    def answer(request_id: Any) -> bytes:
        payloads.append(json.dumps({"id": request_id, "result": result, "error": None}).encode())
        return payloads[-1]

    with answering(answer, connections=2) as address:
        args = ["call", "ping", "--target", address, "--timeout", "60"]
        raw_code, raw_peak = _peak_rss_bytes([*args, "--raw"], tmp_path / "raw")
        code, peak = _peak_rss_bytes(args, tmp_path / "pretty")
    assert (raw_code, code) == (0, 0)
    size = len(payloads[0])
    assert peak <= raw_peak + 3 * size, (peak, raw_peak, size)
    printed = (tmp_path / "pretty").read_text(encoding="utf-8")
    assert printed.startswith('[\n  {\n    "i": 0,\n    "ok": true\n  },\n')
    assert json.loads(printed) == result


def test_an_answer_that_is_no_frame_exits_2() -> None:
    # A header declaring 4 GiB: reported at once, never waited for or allocated.
    with answering(lambda request_id: b"\xff\xff\xff\xff{}", framed=False) as address:
        done = run_cli("call", "ping", "--target", address, "--timeout", "10")
    assert done.returncode == 2
    assert done.stderr.startswith(f"golem-proxy: {address} sent a bad frame (")


@pytest.mark.parametrize(("count", "highlighted"), [(3, True), (5000, False)])
def test_a_terminal_gets_colours_only_for_a_short_answer(count: int, highlighted: bool) -> None:
    result = [{"i": i} for i in range(count)]

    def answer(request_id: Any) -> bytes:
        return json.dumps({"id": request_id, "result": result, "error": None}).encode()

    with answering(answer) as address:
        args = ("call", "ping", "--target", address, "--timeout", "10")
        code, shown = run_cli_tty(*args, columns=120, colour=True)
    assert code == 0
    assert ("\x1b[" in shown) is highlighted
    if not highlighted:
        assert json.loads(shown) == result


def test_a_server_that_resets_the_connection_exits_2() -> None:
    done, port = call_a_server_that(_reset, "--timeout", "10")
    assert done.returncode == 2
    expected = f"golem-proxy: connection to 127.0.0.1:{port} failed (connection reset by peer)\n"
    assert done.stderr == expected


def test_a_lone_surrogate_and_c1_controls_in_a_result_print_as_escapes() -> None:
    # JSON allows "\udfff" (UTF-8 cannot carry it) and U+009B, a terminal's CSI.
    answer = b'{"id": %s, "result": {"name": "a\\udfffb\xc2\x9b[2J"}, "error": null}'

    with answering(lambda request_id: answer % json.dumps(request_id).encode()) as address:
        done = run_cli("call", "ping", "--target", address, "--timeout", "10")
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{\n  "name": "a\\udfffb\\x9b[2J"\n}\n'


def test_call_skips_what_a_json_rpc_server_sends_of_its_own(tmp_path: Path) -> None:
    """A server's progress notification and its own request with the very id of the call
    (MCP does both) come first: the answer printed is the reply, not either of them."""

    def answer(line: bytes) -> bytes:
        ident = json.loads(line)["id"]
        own = [
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
            {"jsonrpc": "2.0", "id": ident, "method": "roots/list"},
            {"jsonrpc": "2.0", "id": ident, "result": {"enabled": True}},
        ]
        return b"\n".join(json.dumps(message).encode() for message in own)

    done = call_line_server(tmp_path, answer, "set_vim", '{"enabled": true}', "--raw")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {"enabled": True}}


@contextmanager
def line_server(path: str, answer: Callable[[bytes], bytes]) -> Iterator[str]:
    """A JSON-RPC server on the Unix socket ``path`` for one connection: it reads one line
    and sends back ``answer(line)`` and a newline. Yields the ``unix:PATH`` target."""
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()

        def serve() -> None:
            peer, _ = server.accept()
            with peer:
                peer.sendall(answer(peer.makefile("rb").readline()) + b"\n")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        yield f"unix:{path}"
        thread.join(10)


def call_line_server(
    tmp_path: Path, answer: Callable[[bytes], bytes], *args: str
) -> subprocess.CompletedProcess[str]:
    """``call ARGS --profile jsonrpc-ndjson`` against a `line_server` that answers ``answer``."""
    with line_server(str(tmp_path / "s.sock"), answer) as target:
        return run_cli("call", *args, "--profile", "jsonrpc-ndjson", "--target", target)


def test_a_golem_server_silent_for_seconds_gets_only_the_request() -> None:
    """A GOLEM plugin is silent for ordinary reasons (one client per channel, a request held
    by --intercept, a slow handler): `call` waits for the answer and writes nothing else to
    the port, where another profile's probe would be a bad frame to the plugin and to a proxy
    in between."""
    received: list[bytes] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.1)
        port = server.getsockname()[1]
        stop = threading.Event()

        def serve() -> None:
            first = True
            while not stop.is_set():
                try:
                    peer, _ = server.accept()
                except socket.timeout:
                    continue
                with peer:
                    peer.settimeout(10)
                    if first:  # the call: read its frame, stay silent 3 s, then answer
                        first = False
                        header = peer.recv(4, socket.MSG_WAITALL)
                        body = peer.recv(struct.unpack("!I", header)[0], socket.MSG_WAITALL)
                        received.append(header + body)
                        stop.wait(3)
                        reply = json.dumps({"id": "s1", "result": {"alive": True}, "error": None})
                        peer.sendall(struct.pack("!I", len(reply)) + reply.encode())
                    else:  # anything else that connects: keep what it sends
                        peer.settimeout(1)
                        try:
                            received.append(peer.recv(65536))
                        except socket.timeout:
                            received.append(b"")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        args = ("ping", "--id", "s1", "--target", f"127.0.0.1:{port}", "--timeout", "5")
        done = run_cli("call", *args)
        stop.set()
        thread.join(10)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"alive": True}
    assert len(received) == 1, received
    assert json.loads(received[0][4:]) == {"id": "s1", "method": "ping", "params": {}}
