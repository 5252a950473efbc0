"""The server loop: oversized headers, disconnects, one client at a time, the
UI timeout and shutdown."""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Any, Callable

from plugin_client import SOCKET_TIMEOUT

from golem_core.dispatcher import Dispatcher
from golem_core.framing import encode_length_prefixed
from golem_core.profiles import GOLEM
from rhino_plugin.server import ChannelServer


def test_oversized_header_closes_only_that_connection(
    plugin: Any, connect: Callable[..., Any], capfd: Any
) -> None:
    victim = connect(plugin.main_address)
    victim.sock.sendall(struct.pack("!I", 64 * 1024 * 1024 + 1))
    assert victim.sock.recv(1) == b""  # closed by the plugin without an answer
    assert connect(plugin.main_address).call("ping") == {"alive": True}
    assert "cannot resynchronise" in capfd.readouterr().err


def test_abrupt_disconnect_mid_frame_keeps_the_server_up(
    plugin: Any, connect: Callable[..., Any]
) -> None:
    frame = GOLEM.encode({"id": "1", "method": "ping", "params": {}})
    with socket.create_connection(plugin.main_address, timeout=SOCKET_TIMEOUT) as sock:
        sock.sendall(frame[:7])
    with socket.create_connection(plugin.main_address, timeout=SOCKET_TIMEOUT) as sock:
        sock.sendall(frame[:2])  # inside the header
    assert connect(plugin.main_address).call("ping") == {"alive": True}


def test_second_client_is_served_after_the_first_disconnects(
    plugin: Any, connect: Callable[..., Any]
) -> None:
    first = connect(plugin.main_address)
    assert first.call("ping") == {"alive": True}
    second = connect(plugin.main_address)  # completes in the listen backlog
    second.sock.sendall(GOLEM.encode({"id": "queued", "method": "ping", "params": {}}))
    second.sock.settimeout(0.5)
    try:
        second.sock.recv(1)
        raise AssertionError("the second client was served while the first was connected")
    except socket.timeout:
        pass
    second.sock.settimeout(SOCKET_TIMEOUT)
    first.close()
    assert second.read_reply() == {"id": "queued", "result": {"alive": True}, "error": None}


def test_slow_handler_times_out_and_later_calls_queue(
    start_plugin: Callable[..., Any], connect: Callable[..., Any]
) -> None:
    plugin = start_plugin(debug_methods=True, ui_timeout=0.5)
    client = connect(plugin.main_address)
    assert client.request("debug.sleep", {"seconds": 1.5})["error"]["code"] == -32603
    # The UI thread is still sleeping: a document call queued behind it times out too, and is
    # answered once the sleep is over.
    assert client.request("scene.list_objects")["error"]["code"] == -32603
    deadline = time.monotonic() + SOCKET_TIMEOUT
    while client.request("scene.list_objects")["error"] is not None:
        assert time.monotonic() < deadline, "the UI thread never came back"
    assert client.call("scene.list_objects")["total"] == 0


def test_debug_methods_are_off_by_default(client: Any) -> None:
    assert client.request("debug.sleep", {"seconds": 0})["error"] == {
        "code": -32000,
        "message": "Method not found: debug.sleep",
    }


def test_shutdown_answers_then_stops_both_channels(
    plugin: Any, connect: Callable[..., Any]
) -> None:
    main = connect(plugin.main_address)
    assert main.call("shutdown") == {"shutdown": "initiated"}
    assert plugin.wait(5.0)
    for address in (plugin.main_address, plugin.gh_address):
        try:
            socket.create_connection(address, timeout=1.0).close()
            raise AssertionError(f"{address} still accepts connections")
        except OSError:
            pass


def test_stop_closes_a_connected_client(plugin: Any, connect: Callable[..., Any]) -> None:
    client = connect(plugin.main_address)
    assert client.call("ping") == {"alive": True}
    stopper = threading.Thread(target=plugin.stop)
    stopper.start()
    stopper.join(SOCKET_TIMEOUT)
    assert not stopper.is_alive()
    assert client.sock.recv(1) == b""


def test_a_frame_nested_too_deep_to_decode_closes_only_that_connection(
    plugin: Any, connect: Callable[..., Any]
) -> None:
    """As the real loop's "unexpected read error": no answer, that client dropped, the
    channel serving the next one."""
    depth = 200_000
    payload = b'{"id":"x","method":"ping","params":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    victim = connect(plugin.main_address)
    victim.sock.sendall(struct.pack("!I", len(payload)) + payload)
    assert victim.sock.recv(1) == b""
    assert connect(plugin.main_address).call("ping") == {"alive": True}


def test_an_unexpected_error_drops_that_client_and_the_channel_serves_on(capfd: Any) -> None:
    def respond(payload: bytes) -> bytes:
        if payload == b"boom":
            raise KeyError("boom")
        return encode_length_prefixed(payload)

    server = ChannelServer("test", "127.0.0.1", 0, Dispatcher(), respond)
    server.start()
    try:
        address = server.address
        for payload, expected in ((b"boom", b""), (b"{}", encode_length_prefixed(b"{}"))):
            with socket.create_connection(address, timeout=SOCKET_TIMEOUT) as sock:
                sock.sendall(encode_length_prefixed(payload))
                got = b""
                while len(got) < len(expected) or not expected:
                    more = sock.recv(65536)
                    if not more:
                        break
                    got += more
                assert got == expected
    finally:
        server.stop()
    assert "unexpected error (KeyError('boom'))" in capfd.readouterr().err
