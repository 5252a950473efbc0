"""`OutageStandIn` on real loopback sockets: a connection the recording shows accepted and
reset meets the reset at its first exchange, as it did behind the proxy, never at its
connect; one whose server never writes is reset all the same, at the latest as the next call
begins (its reset is its call's, not the next one's)."""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest
import trio

from golem_proxy.net.addresses import Address
from golem_proxy.replay import outage_standin
from golem_proxy.replay.index import load_exchanges
from golem_proxy.replay.mcp_script import ClientStep
from golem_proxy.replay.outage_plan import OutagePlan, RouteOutage
from golem_proxy.replay.outage_standin import OutageStandIn
from golem_proxy.replay.server import ReplayServer
from golem_proxy.replay.setup import ReplayOptions, engine_for
from tests.support.waiting import until

from .traces import modelling_session

pytestmark = pytest.mark.trio

CALL = ClientStep(b"{}", 3, "tools/call", 3, {"name": "list_layers", "arguments": {}})
NEXT = ClientStep(b"{}", 5, "tools/call", 5, {"name": "list_layers", "arguments": {}})
CONNECTIONS = 3


def _ping_frame() -> bytes:
    payload = json.dumps({"id": "00000000-0000-4000-8000-000000000001", "method": "ping"})
    return struct.pack("!I", len(payload)) + payload.encode()


def _ping(sock: socket.socket) -> str:
    """Ping on ``sock``, as the GOLEM-3DMCP server does once connected: ``reset`` when the
    exchange met a reset, else ``answered``."""
    try:
        sock.sendall(_ping_frame())
        sock.recv(4)
    except ConnectionResetError:
        return "reset"
    return "answered"


def _waiting(sock: socket.socket) -> str:
    """What ``sock`` has waiting: ``nothing``, ``bytes``, an ``end`` or a ``reset``."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return "bytes" if sock.recv(1) else "end"
    except BlockingIOError:
        return "nothing"
    except ConnectionResetError:
        return "reset"
    finally:
        sock.settimeout(timeout)


def _still_open(sock: socket.socket) -> bool:
    """Whether ``sock`` has neither bytes, nor an end, nor a reset waiting."""
    return _waiting(sock) == "nothing"


def _connect_and_wait(address: Address) -> str:
    """Connect and read without writing: how the connection ended."""
    with socket.create_connection((address.host, address.port), timeout=10) as sock:
        try:
            return "closed" if not sock.recv(4) else "answered"
        except ConnectionResetError:
            return "reset"


def _standing_in(tmp_path: Path, resets: int) -> OutageStandIn:
    """A stand-in serving a recorded session on a free loopback port, whose plan resets the
    ``resets`` first connections of `CALL`."""
    trace = load_exchanges(str(modelling_session(tmp_path / "session.jsonl")))
    listen = {"main": Address("127.0.0.1", 0)}
    plan = OutagePlan({CALL.index: {"main": RouteOutage(resets=resets)}})
    server = ReplayServer(engine_for(trace, ReplayOptions(reuse_hint=None)), listen)
    return OutageStandIn(server, listen, plan)


async def test_a_reset_connection_meets_its_reset_at_its_first_exchange(tmp_path: Path) -> None:
    standin = _standing_in(tmp_path, CONNECTIONS)
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(standin.run)
        await standin.begin(CALL)
        route = standin._routes["main"]
        address = (bound["main"].host, bound["main"].port)
        for _ in range(CONNECTIONS):
            resets = route.resets
            sock = await trio.to_thread.run_sync(socket.create_connection, address, 10)
            with sock:
                # Accepted, to be reset (the lambda is awaited within its iteration).
                await until(lambda: route.resets < resets)  # noqa: B023
                assert _still_open(sock)  # not before the server has written
                assert await trio.to_thread.run_sync(_ping, sock) == "reset"
        nursery.cancel_scope.cancel()


async def test_a_server_that_never_writes_is_reset_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outage_standin, "RESET_WITHIN", 0.01)
    standin = _standing_in(tmp_path, 1)
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(standin.run)
        await standin.begin(CALL)
        outcome = await trio.to_thread.run_sync(_connect_and_wait, bound["main"])
        nursery.cancel_scope.cancel()
    assert outcome == "reset"


async def test_a_connection_left_to_reset_is_reset_before_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server connected during CALL and wrote nothing there (its tool kept the connection
    for later): the proxy had reset it during CALL, so the server finds it reset, whenever it
    looks, before NEXT is sent; NEXT itself plays no outage, its new connection is served."""
    monkeypatch.setattr(outage_standin, "RESET_WITHIN", 60.0)  # CALL ends long before
    standin = _standing_in(tmp_path, 1)
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(standin.run)
        await standin.begin(CALL)
        route = standin._routes["main"]
        address = (bound["main"].host, bound["main"].port)
        kept = await trio.to_thread.run_sync(socket.create_connection, address, 10)
        with kept:
            await until(lambda: route.resets == 0)  # accepted, to be reset
            assert _still_open(kept)  # not before the server has written, within CALL
            await standin.begin(NEXT)
            await until(lambda: _waiting(kept) == "reset")
        fresh = await trio.to_thread.run_sync(socket.create_connection, address, 10)
        with fresh:
            assert await trio.to_thread.run_sync(_ping, fresh) == "answered"
        nursery.cancel_scope.cancel()
