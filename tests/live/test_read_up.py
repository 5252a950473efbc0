"""`ReadUp`: the stdio hop of `golem-proxy mcp` waits for what the MCP server wrote on its
GOLEM connections before a chunk to be handed on, and no longer than that: a connection whose
pump does not read is waited for once, not again at each chunk until it is seen idle, and a
session of idle connections costs a look. Real sockets (a socket pair per connection), trio's
virtual clock for the waits."""

from __future__ import annotations

import os
import socket

import pytest
import trio
import trio.testing

from golem_core.messages import Response
from golem_proxy.events import Direction
from golem_proxy.live.chunks import ChunkReader
from golem_proxy.live.connection import Connection
from golem_proxy.live.read_up import ReadUp
from golem_proxy.live.relay import Proxy
from golem_proxy.net.addresses import Address, Route
from golem_proxy.testing.upstreams import GolemUpstream
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy

ROUTE = Route("main", Address("127.0.0.1", 0), Address("127.0.0.1", 9))


def _connection(number: int) -> tuple[Connection, socket.socket]:
    """A connection whose client side is one end of a socket pair; the other end writes."""
    ours, server = socket.socketpair()
    conn = Connection(number, ROUTE, trio.SocketStream(trio.socket.from_stdlib_socket(ours)))
    conn.client_reader = ChunkReader(ours.fileno())
    return conn, server


async def _pump(conn: Connection) -> None:
    """What a pump does: read what comes, hand it on (`sent`), wait again."""
    assert conn.client_reader is not None
    while True:
        chunk = conn.client_reader.read_ready()
        if chunk is None:
            await conn.client_reader.wait()
            continue
        if not chunk:
            return
        conn.sent[Direction.C2S] += len(chunk)
        await trio.lowlevel.checkpoint()


def test_bytes_written_before_are_handed_on_before_it_returns() -> None:
    async def main() -> None:
        conn, server = _connection(1)
        live = {1: conn}
        read_up = ReadUp()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pump, conn)
            await trio.testing.wait_all_tasks_blocked()
            await read_up.before(live)  # makes the set: nothing waits
            server.sendall(b"x" * 100_000)
            await read_up.before(live)
            assert conn.sent[Direction.C2S] == 100_000
            nursery.cancel_scope.cancel()
        server.close()
        read_up.close()

    trio.run(main)


def test_a_connection_that_does_not_read_is_waited_for_once_until_seen_idle() -> None:
    async def main() -> None:
        clock = trio.lowlevel.current_clock()
        stuck, stuck_server = _connection(1)
        live = {1: stuck}
        read_up = ReadUp(wait=0.25)
        await read_up.before(live)
        stuck_server.sendall(b"held")  # nobody reads it: a pump waiting for its upstream
        began = clock.current_time()
        await read_up.before(live)
        assert clock.current_time() - began >= 0.25  # waited, once
        began = clock.current_time()
        for _ in range(10):
            stuck_server.sendall(b"more")
            await read_up.before(live)
        assert clock.current_time() == began  # not again while it has not caught up
        # Caught up (its pump read everything and waits): waited for again from then on.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pump, stuck)
            await trio.testing.wait_all_tasks_blocked()
            await read_up.before(live)
            stuck_server.sendall(b"y" * 1000)
            await read_up.before(live)
            assert stuck.sent[Direction.C2S] == 4 + 40 + 1000
            nursery.cancel_scope.cancel()
        stuck_server.close()
        read_up.close()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_many_idle_connections_cost_no_wait() -> None:
    async def main() -> None:
        clock = trio.lowlevel.current_clock()
        pairs = [_connection(number) for number in range(1, 201)]
        live = {conn.conn: conn for conn, _ in pairs}
        read_up = ReadUp()
        began = clock.current_time()
        for _ in range(50):
            await read_up.before(live)
        assert clock.current_time() == began
        for conn, server in pairs:
            read_up.remove(conn)
            server.close()
        read_up.close()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def _descriptors() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


@pytest.mark.trio
async def test_a_session_run_in_process_leaves_no_descriptor_open(nursery: trio.Nursery) -> None:
    """A session whose stdio hop looked at its routes (the epoll set made) closes the set when
    it ends: a process running many sessions (the tests, `replay`) kept one a session."""
    upstream = GolemUpstream()
    await nursery.start(upstream.serve)
    before = _descriptors()
    running = await start_proxy(nursery, upstream.address)
    stream = await connect(running.listen)
    client = GolemClient(stream)
    assert isinstance(await client.call({"id": 1, "method": "ping", "params": {}}), Response)
    relay = running.session.source
    assert isinstance(relay, Proxy)
    await relay.settle_routes()  # as the stdio hop does before each chunk: makes the set
    await stream.aclose()
    await stop_proxy(running)
    with trio.move_on_after(10):  # the upstream's side of the connection closes in its time
        while _descriptors() != before:
            await trio.sleep(0.01)
    assert _descriptors() - before == set()
