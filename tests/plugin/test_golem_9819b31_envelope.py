"""The golem-3dmcp@9819b31 server loop on the wire: what it does with input the handlers never
see (bad frames, odd ids and methods), the UI-thread timeout, and result normalisation."""

from __future__ import annotations

import json
import socket
import struct
from typing import Any, Callable

import pytest
from plugin_client import Client

from golem_core.blocking import MessageReader
from golem_core.messages import Request
from rhino_plugin import HeadlessPlugin
from rhino_plugin.golem_9819b31.envelope import GhServerErrors, MainServerErrors

MAIN_TIMEOUT = (
    "Internal error: run_on_ui_thread: UI thread did not respond within 30 seconds. "
    "Rhino may be busy or a modal dialog may be blocking execution."
)


@pytest.fixture
def faithful(start_plugin: Callable[..., HeadlessPlugin]) -> HeadlessPlugin:
    return start_plugin(seed=3)


def raw_exchange(address: tuple[str, int], payload: bytes) -> Any:
    """Send one frame; return the decoded reply, or None when the plugin closed instead."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.settimeout(10)
        sock.sendall(struct.pack("!I", len(payload)) + payload)
        message = MessageReader(sock).read_message()
        return None if message is None else message.obj


UNANSWERED = [
    b"{not json",
    b"\xff\xfe",
    b"[1, 2, 3]",
    b'"ping"',
    b'{"id": "\\ud800", "method": "ping"}',  # the reply cannot be encoded
]


@pytest.mark.parametrize("payload", UNANSWERED, ids=str)
def test_unreadable_non_object_or_unanswerable_requests_close_the_connection(
    faithful: HeadlessPlugin, payload: bytes
) -> None:
    assert raw_exchange(faithful.main_address, payload) is None
    # The channel goes on serving the next client.
    client = Client(faithful.main_address)
    try:
        assert client.call("ping") == {"alive": True}
    finally:
        client.close()


def test_missing_id_and_method_are_null_and_empty(faithful: HeadlessPlugin) -> None:
    reply = raw_exchange(faithful.main_address, b"{}")
    assert reply == {
        "id": None,
        "result": None,
        "error": {"code": -32000, "message": "Method not found: "},
    }


def test_a_non_string_method_is_looked_up_as_it_is(faithful: HeadlessPlugin) -> None:
    reply = raw_exchange(faithful.main_address, b'{"id": 7, "method": 5}')
    assert reply == {
        "id": 7,
        "result": None,
        "error": {"code": -32000, "message": "Method not found: 5"},
    }
    reply = raw_exchange(faithful.main_address, b'{"id": 8, "method": ["x"]}')
    assert reply["error"] == {"code": -32603, "message": "Internal error: unhashable type: 'list'"}


def test_params_that_are_not_an_object_are_read_as_empty(faithful: HeadlessPlugin) -> None:
    reply = raw_exchange(
        faithful.main_address, b'{"id": "a", "method": "creation.create_point", "params": [1]}'
    )
    assert reply["error"] is None and set(reply["result"]) == {"guid"}


def test_the_reply_is_the_reference_encoding(faithful: HeadlessPlugin) -> None:
    payload = json.dumps({"id": "é", "method": "ping", "params": {}}).encode()
    with socket.create_connection(faithful.main_address, timeout=10) as sock:
        sock.sendall(struct.pack("!I", len(payload)) + payload)
        (length,) = struct.unpack("!I", sock.recv(4))
        body = b""
        while len(body) < length:
            body += sock.recv(length - len(body))
    assert body == '{"id": "é", "result": {"alive": true}, "error": null}'.encode()


def test_list_methods_lists_the_builtins_alone(faithful: HeadlessPlugin, connect: Any) -> None:
    client = connect(faithful.main_address)
    assert client.call("list_methods") == {"methods": ["list_methods", "ping", "shutdown"]}
    # ...while the dispatcher behind it answers all 135 names.
    assert "bounding_box" in client.call("geometry.create_point", x=1)


def test_a_ui_thread_timeout_is_the_servers_internal_error(
    start_plugin: Callable[..., HeadlessPlugin], connect: Any
) -> None:
    plugin = start_plugin(debug_methods=True, ui_timeout=0.3)
    client = connect(plugin.main_address)
    reply = client.request("debug.sleep", {"seconds": 1.0})
    assert reply["result"] is None
    assert reply["error"] == {"code": -32603, "message": MAIN_TIMEOUT}
    # ping goes through the UI thread too, so it waits behind the sleep as in Rhino.
    gh = connect(plugin.gh_address)
    reply = gh.request("debug.sleep", {"seconds": 1.0})
    assert reply["error"] == {
        "code": -32603,
        "message": "GH server: UI thread did not respond within 30 seconds.",
    }
    # gh.ping does not use the UI thread.
    assert gh.call("gh.ping") == {"alive": True, "server": "gh"}


def test_a_falsy_dispatcher_result_is_an_empty_object_on_main_but_kept_on_gh() -> None:
    # server.py sends `result or {}`, gh_server.py `result if result is not None else {}`;
    # the built-ins of server.py are sent as they are.
    request = Request("r", "m", {}, {})
    assert MainServerErrors().success(request, [], False)["result"] == {}
    assert MainServerErrors().success(request, [], True)["result"] == []
    assert GhServerErrors().success(request, [], False)["result"] == []
    assert GhServerErrors().success(request, None, False)["result"] == {}


def test_the_grasshopper_channel_has_its_own_builtins(
    faithful: HeadlessPlugin, connect: Any
) -> None:
    gh = connect(faithful.gh_address)
    assert gh.request("ping", {})["error"] == {"code": -32000, "message": "Method not found: ping"}
    assert gh.call("gh.ping") == {"alive": True, "server": "gh"}
    assert gh.call("scene.get_blocks") == {"blocks": []}


def test_shutdown_on_the_grasshopper_channel_stops_the_plugin(faithful: HeadlessPlugin) -> None:
    client = Client(faithful.gh_address)
    try:
        assert client.call("gh.shutdown") == {"shutdown": "initiated"}
    finally:
        client.close()
    assert faithful.wait(10)
