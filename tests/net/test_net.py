"""Listening on a Unix socket: the socket file appears only once it accepts connections."""

from __future__ import annotations

import os
import socket
import tempfile
import threading

import pytest
import trio

from golem_proxy.net.addresses import parse_address
from golem_proxy.net.listeners import ListenError, open_listener

pytestmark = pytest.mark.trio


def connect_as_soon_as_it_appears(path: str, found: list[str], stop: threading.Event) -> None:
    """What a client that waits for the socket file does: connect the moment it exists."""
    while not stop.is_set():
        if os.path.lexists(path):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                try:
                    client.connect(path)
                    found.append("connected")
                except OSError as exc:
                    found.append(f"refused: {exc}")
            return


async def test_a_client_racing_the_listener_is_never_refused() -> None:
    with tempfile.TemporaryDirectory() as directory:
        for attempt in range(20):
            path = os.path.join(directory, f"s{attempt}.sock")
            found: list[str] = []
            stop = threading.Event()
            racer = threading.Thread(target=connect_as_soon_as_it_appears, args=(path, found, stop))
            racer.start()
            listener = await open_listener(parse_address(f"unix:{path}"))
            try:
                await trio.to_thread.run_sync(racer.join, 5)
            finally:
                stop.set()
                await listener.aclose()
            assert found == ["connected"]
            assert not any(name.endswith(".binding") for name in os.listdir(directory))


async def test_a_socket_bound_meanwhile_is_not_replaced() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "s.sock")
        first = await open_listener(parse_address(f"unix:{path}"))
        try:
            with pytest.raises(ListenError, match="in use"):
                await open_listener(parse_address(f"unix:{path}"))
        finally:
            await first.aclose()
        assert not os.path.lexists(path)


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
async def test_a_directory_others_may_write_to_is_refused(mode: int) -> None:
    """Someone who may write to the directory could swap the socket file (as root too: /tmp
    is root's own, and anyone writes there)."""
    with tempfile.TemporaryDirectory() as directory:
        os.chmod(directory, mode)
        with pytest.raises(ListenError, match="others may write to it"):
            await open_listener(parse_address(f"unix:{os.path.join(directory, 's.sock')}"))
        assert os.listdir(directory) == []


async def test_a_directory_owned_by_someone_else_is_refused() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to hand a directory to another user")
    with tempfile.TemporaryDirectory() as directory:
        os.chown(directory, 4242, 4242)
        with pytest.raises(ListenError, match="not owned by you"):
            await open_listener(parse_address(f"unix:{os.path.join(directory, 's.sock')}"))
