"""golem_core.blocking over a real socketpair (bounded by socket timeouts)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from golem_core.blocking import MessageReader, recv_message, send_message
from golem_core.errors import FrameTooLarge, TruncatedFrame
from golem_core.messages import Request, Response, Role
from golem_core.profiles import GOLEM, JSONRPC_NDJSON


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    a.settimeout(5)
    b.settimeout(5)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_send_and_read_round_trip(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    obj = {"id": "a", "method": "scene.rename", "params": {"name": "日本 é"}}
    send_message(a, obj)
    message = MessageReader(b).read_message(Role.REQUEST)
    assert isinstance(message, Request)
    assert message.obj == obj


def test_two_frames_in_one_recv_are_kept(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    first = GOLEM.encode({"id": 1, "result": {}, "error": None})
    second = GOLEM.encode({"id": 2, "result": {"x": 1}, "error": None})
    a.sendall(first + second)
    a.shutdown(socket.SHUT_WR)
    reader = MessageReader(b)
    one = reader.read_message(Role.RESPONSE)
    two = reader.read_message(Role.RESPONSE)
    assert isinstance(one, Response) and one.id == 1
    assert isinstance(two, Response) and two.id == 2 and two.result == {"x": 1}
    assert reader.read_message() is None


def test_frame_split_across_sends(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    data = GOLEM.encode({"id": "x", "result": {"p": "v" * 1000}, "error": None})

    def send_in_pieces() -> None:
        for i in range(0, len(data), 7):
            a.sendall(data[i : i + 7])

    # Many tiny sends can fill a socketpair's buffer: send from a thread while reading.
    sender = threading.Thread(target=send_in_pieces, daemon=True)
    sender.start()
    frame = MessageReader(b).read_frame()
    sender.join(5)
    assert frame is not None and frame.raw == data


def test_oversized_header_raises_frame_too_large(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(struct.pack("!I", 67_108_865))
    with pytest.raises(FrameTooLarge) as info:
        MessageReader(b).read_frame()
    assert info.value.declared == 67_108_865 and info.value.limit == 67_108_864


def test_custom_cap(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(GOLEM.encode({"id": 1, "result": {"x": "y" * 100}, "error": None}))
    with pytest.raises(FrameTooLarge):
        MessageReader(b, cap=64).read_frame()


def test_close_mid_frame_raises_truncated(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(struct.pack("!I", 100) + b'{"id":')
    a.close()
    with pytest.raises(TruncatedFrame):
        MessageReader(b).read_frame()


def test_close_mid_header_raises_truncated(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(b"\x00\x00")
    a.close()
    with pytest.raises(TruncatedFrame):
        MessageReader(b).read_frame()


def test_clean_close_is_none(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.close()
    assert MessageReader(b).read_message() is None
    assert recv_message(b) is None


def test_recv_message_and_line_profile(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    send_message(a, {"jsonrpc": "2.0", "id": 1, "result": {}}, JSONRPC_NDJSON)
    message = recv_message(b, JSONRPC_NDJSON)
    assert isinstance(message, Response) and message.id == 1
    send_message(a, {"jsonrpc": "2.0", "id": 2, "result": {}}, JSONRPC_NDJSON)
    a.close()
    reader = MessageReader(b, JSONRPC_NDJSON)
    assert isinstance(reader.read_message(), Response)
    assert reader.read_message() is None


def test_oversized_line_raises_frame_too_large(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(b"x" * 100 + b"\n")
    with pytest.raises(FrameTooLarge):
        MessageReader(b, JSONRPC_NDJSON, cap=50).read_frame()


def test_ask_passes_over_frames_that_answer_something_else(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    # What the server sends before the answer: another id's reply, a request of its own.
    b.sendall(
        JSONRPC_NDJSON.encode({"jsonrpc": "2.0", "id": 1, "result": "stale"})
        + JSONRPC_NDJSON.encode({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
        + JSONRPC_NDJSON.encode({"jsonrpc": "2.0", "id": 2, "result": "fresh"})
    )
    reader = MessageReader(a, JSONRPC_NDJSON)
    answer = reader.ask({"jsonrpc": "2.0", "id": 2, "method": "m"})
    assert answer is not None and answer.obj["result"] == "fresh"
    assert reader.answers.unrelated == 2
    sent = MessageReader(b, JSONRPC_NDJSON).read_message(Role.REQUEST)
    assert sent is not None and sent.obj["id"] == 2


def test_ask_returns_none_when_the_server_closes_first(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    b.sendall(GOLEM.encode({"method": "note"}))
    b.shutdown(socket.SHUT_WR)
    assert MessageReader(a).ask({"id": "x", "method": "m", "params": {}}) is None
