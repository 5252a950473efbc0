"""A large frame's body moved by the kernel (body_splice.py) on a relay observed in a process
of its own: every byte at the receiver and in the handoff, in order, whatever the chunking, a
handoff pipe that fills, a receiver that goes away and an observing side that goes away.

The relay here is the real one on loopback sockets, handing on to a real pipe whose records
the test reads as the observing process would."""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest
import trio

from golem_core.framing import Framing
from golem_core.profiles import GOLEM
from golem_proxy.live import kernel_pipes
from golem_proxy.live.handoff import Kind, Record
from golem_proxy.live.handoff_reader import RecordReader
from golem_proxy.live.hub import EventHub
from golem_proxy.live.link_resume import OpenConnections
from golem_proxy.live.observer_link import ObserverLink
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.relay import Proxy
from golem_proxy.net.addresses import Address, Route

pytestmark = [
    pytest.mark.trio,
    pytest.mark.skipif(not kernel_pipes.available(), reason="splice and tee are Linux's"),
]

MIB = 1024 * 1024


def golem_frame(body_size: int, seed: int) -> bytes:
    body = random.Random(seed).randbytes(body_size)
    return struct.pack("!I", len(body)) + body


@dataclass
class Handoff:
    """The records read from the handoff pipe so far, each read acknowledged to the link as
    the observing process does (the relay waits for a recording that trails)."""

    read_fd: int
    link: Optional[ObserverLink] = None
    bite: int = 1 << 20
    """The most one read takes."""
    reading: bool = True
    """Read as the relay runs (`keep_reading`); False: the observing side stopped reading."""
    reader: RecordReader = field(default_factory=RecordReader)
    records: list[Record] = field(default_factory=list)

    def read_now(self) -> int:
        try:
            data = os.read(self.read_fd, self.bite)
        except BlockingIOError:
            return 0
        self.reader.receive_data(data)
        while (record := self.reader.next_record()) is not None:
            self.records.append(record)
        if self.link is not None:
            self.link.acknowledged(self.reader.offset)
        return len(data)

    async def keep_reading(self) -> None:
        while True:
            if self.reading and self.read_now():
                await trio.sleep(0)
            else:
                await trio.sleep(0.001)

    def data(self, direction: int) -> bytes:
        return b"".join(
            bytes(r.data) for r in self.records if r.kind is Kind.DATA and r.direction == direction
        )


@dataclass
class Relay:
    proxy: Proxy
    link: ObserverLink
    handoff: Handoff
    listen: Address


@asynccontextmanager
async def relay_to(
    upstream: Address,
    pipe_size: int = MIB,
    bite: int = 1 << 20,
    listen: Optional[Address] = None,
    followed: bool = False,
) -> AsyncIterator[Relay]:
    """A relay to ``upstream`` handing on to a pipe of ``pipe_size`` bytes, read ``bite``
    bytes at a time as it runs; everything left is read once the relay stopped. ``followed``:
    the link follows the frames for a restart, as it does by default (the splicer then reads
    a body's rest from it)."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK)
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, pipe_size)
    proxy = Proxy(
        [Route("main", listen or Address("127.0.0.1", 0), upstream)],
        GOLEM,
        EventHub(),
        ProxyOptions(drain_timeout=0.5),
    )
    link = ObserverLink(write_fd, proxy.now, stall_limit=1.0)
    proxy.link = link
    if followed:
        link.connections = OpenConnections({}, Framing.LENGTH_PREFIXED)
    handoff = Handoff(read_fd, link, bite)
    try:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(proxy.serve)
            nursery.start_soon(link.keep_flushing)
            nursery.start_soon(link.watch_stall)  # as the forwarding process watches
            nursery.start_soon(handoff.keep_reading)
            yield Relay(proxy, link, handoff, bound[0].listen)
            proxy.stop()
            with trio.fail_after(20):
                while proxy.live_connections or (link.writer.waiting and not link.gone):
                    await trio.sleep(0.001)
            nursery.cancel_scope.cancel()
        if handoff.reading:
            while handoff.read_now():
                pass
    finally:
        for fd in (handoff.read_fd, write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


async def serve_once(
    answer: bytes,
    pieces: Callable[[int], int],
    unix_path: str = "",
    *,
    task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept one client (on ``unix_path`` when given, else on a loopback port), read one
    GOLEM request, send ``answer`` in pieces of the sizes ``pieces`` gives, then read until
    the client closes."""
    if unix_path:
        listener = trio.socket.socket(socket.AF_UNIX)
        await listener.bind(unix_path)
        listener.listen(1)
        task_status.started(Address(path=unix_path))
    else:
        listener, address = await loopback_listener()
        task_status.started(address)
    peer, _ = await listener.accept()
    listener.close()
    with peer:
        stream = trio.SocketStream(peer)
        request = await receive(stream, 4)
        await receive(stream, struct.unpack("!I", request)[0])
        sent = 0
        while sent < len(answer):
            step = pieces(sent)
            try:
                await stream.send_all(answer[sent : sent + step])
            except (trio.BrokenResourceError, OSError):
                return  # the proxy reset it (its client went away)
            sent += step
        await read_until_closed(stream)


async def loopback_listener() -> tuple[trio.socket.SocketType, Address]:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    return listener, Address("127.0.0.1", listener.getsockname()[1])


async def read_until_closed(stream: trio.SocketStream) -> None:
    with contextlib.suppress(trio.BrokenResourceError, OSError):
        while await stream.receive_some(65536):
            pass


async def receive(stream: trio.SocketStream, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


async def serve_in_two(
    listener: trio.socket.SocketType,
    first: bytes,
    between: Callable[[trio.socket.SocketType], Awaitable[None]],
    rest: bytes,
) -> None:
    """Accept one client, read its small GOLEM request, send ``first``, await ``between``
    (given the socket), send ``rest``, then read until the client closes."""
    peer, _ = await listener.accept()
    with peer:
        stream = trio.SocketStream(peer)
        await receive(stream, 14)
        await stream.send_all(first)
        await between(peer)
        await stream.send_all(rest)
        await read_until_closed(stream)


def counting_splices(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the bytes each kernel splice moved (the kernel way was taken)."""
    moved: list[int] = []
    real = kernel_pipes.splice

    def counted(source: int, target: int, size: int) -> int:
        done = real(source, target, size)
        moved.append(done)
        return done

    monkeypatch.setattr(kernel_pipes, "splice", counted)
    return moved


@pytest.mark.parametrize("followed", [False, True])
@pytest.mark.parametrize("seed", range(4))
async def test_a_large_body_reaches_the_client_and_the_handoff_whole_in_order(
    monkeypatch: pytest.MonkeyPatch, seed: int, followed: bool
) -> None:
    """Two large answers and a small one sent in one stream, in random pieces: the kernel way
    stops at each body's end (the next header goes the copy way), and the bytes are the same
    at the client and in the handoff's records, in order."""
    moved = counting_splices(monkeypatch)
    rng = random.Random(seed)
    answer = golem_frame(3 * MIB + 17, seed) + golem_frame(9, seed) + golem_frame(MIB, seed + 1)
    async with trio.open_nursery() as nursery:
        upstream = await nursery.start(serve_once, answer, lambda _: rng.randint(1, 700_000))
        async with relay_to(upstream, followed=followed) as relay:
            client = await trio.open_tcp_stream(relay.listen.host, relay.listen.port)
            request = golem_frame(200 * 1024, seed + 2)  # a large request: the copy way
            await client.send_all(request)
            with trio.fail_after(20):
                got = await receive(client, len(answer))
            await client.aclose()
    assert got == answer
    assert relay.handoff.data(0) == request
    assert relay.handoff.data(1) == answer
    assert sum(moved) >= 3 * MIB  # most of the bodies went the kernel's way
    assert not relay.link.gone and relay.link.writer.lost_total == 0


@pytest.mark.parametrize("followed", [False, True])
async def test_a_full_handoff_pipe_keeps_the_records_whole_and_in_order(
    monkeypatch: pytest.MonkeyPatch, followed: bool
) -> None:
    """A small handoff pipe read in small bites: headers and bodies go in part, wait in the
    backlog, and the kernel way and the copy way take turns; the records are the same."""
    moved = counting_splices(monkeypatch)
    answer = golem_frame(6 * MIB, 7) + golem_frame(300_000, 8)
    async with trio.open_nursery() as nursery:
        upstream = await nursery.start(serve_once, answer, lambda _: 1 << 20)
        async with relay_to(upstream, pipe_size=4096, bite=5000, followed=followed) as relay:
            client = await trio.open_tcp_stream(relay.listen.host, relay.listen.port)
            await client.send_all(golem_frame(10, 9))
            with trio.fail_after(30):
                got = await receive(client, len(answer))
            await client.aclose()
    assert bytes(got) == answer
    assert relay.handoff.data(1) == answer
    assert relay.link.writer.lost_total == 0
    assert sum(moved) > 0


async def test_a_client_gone_mid_body_has_the_rest_handed_on_undelivered() -> None:
    """The client reads a little of an 8 MiB answer and resets: what the proxy read and could
    not deliver is handed on after an ``UNDELIVERED`` record; everything handed on is the
    answer's start, in order, and forwarding of that connection ends."""
    answer = golem_frame(8 * MIB, 3)
    async with trio.open_nursery() as nursery:
        upstream = await nursery.start(serve_once, answer, lambda _: 1 << 20)
        async with relay_to(upstream) as relay:
            client = await trio.open_tcp_stream(relay.listen.host, relay.listen.port)
            await client.send_all(golem_frame(10, 4))
            with trio.fail_after(20):
                await receive(client, 100_000)
            client.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.socket.close()
            with trio.fail_after(20):
                while relay.proxy.live_connections:
                    await trio.sleep(0.005)
    records = [r for r in relay.handoff.records if r.direction == 1 or r.kind is Kind.CLOSED]
    kinds = [r.kind for r in records if r.kind in (Kind.DATA, Kind.UNDELIVERED)]
    assert Kind.UNDELIVERED in kinds
    handed = relay.handoff.data(1)
    assert len(handed) > 100_000 and answer.startswith(handed)


async def test_forwarding_goes_on_when_the_observing_side_goes_away() -> None:
    answer = golem_frame(8 * MIB, 5)
    async with trio.open_nursery() as nursery:
        upstream = await nursery.start(serve_once, answer, lambda _: 1 << 20)
        async with relay_to(upstream, pipe_size=65536) as relay:
            client = await trio.open_tcp_stream(relay.listen.host, relay.listen.port)
            await client.send_all(golem_frame(10, 6))
            with trio.fail_after(20):
                got = await receive(client, 2 * MIB)
                relay.handoff.reading = False
                os.close(relay.handoff.read_fd)
                got += await receive(client, len(answer) - len(got))
            await client.aclose()
    assert got == answer
    assert relay.link.gone


async def test_a_followed_connection_is_at_a_frame_boundary_after_a_spliced_body() -> None:
    """The framing the link follows for a restart counts the bytes moved unseen: once the
    answer is through, a restarted observing side takes both directions up at once."""
    answer = golem_frame(4 * MIB, 11)
    async with trio.open_nursery() as nursery:
        upstream = await nursery.start(serve_once, answer, lambda _: 1 << 20)
        async with relay_to(upstream) as relay:
            followed = OpenConnections({}, Framing.LENGTH_PREFIXED)
            relay.link.connections = followed
            client = await trio.open_tcp_stream(relay.listen.host, relay.listen.port)
            await client.send_all(golem_frame(10, 12))
            with trio.fail_after(20):
                got = await receive(client, len(answer))
            assert got == answer
            relay.link.stop()
            read_fd, write_fd = os.pipe2(os.O_NONBLOCK)
            try:
                relay.link.resume(write_fd, 0)
                again = Handoff(read_fd)
                again.read_now()
            finally:
                relay.link.stop()
                os.close(read_fd)
                os.close(write_fd)
            await client.aclose()
    resumed = [r for r in again.records if r.kind is Kind.RESUMED]
    assert sorted(r.direction for r in resumed) == [0, 1]
    assert all(r.lost == 0 for r in resumed)


async def test_unix_socket_routes_move_bodies_the_kernels_way_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    moved = counting_splices(monkeypatch)
    answer = golem_frame(2 * MIB, 13) + golem_frame(5, 14)
    upstream_path, listen_path = str(tmp_path / "up.sock"), str(tmp_path / "in.sock")
    async with trio.open_nursery() as nursery:
        upstream = await nursery.start(serve_once, answer, lambda _: 300_000, upstream_path)
        async with relay_to(upstream, listen=Address(path=listen_path)) as relay:
            client = await trio.open_unix_socket(listen_path)
            await client.send_all(golem_frame(10, 15))
            with trio.fail_after(20):
                got = await receive(client, len(answer))
            await client.aclose()
    assert got == answer and relay.handoff.data(1) == answer
    assert sum(moved) >= MIB


async def test_without_room_for_its_pipes_a_body_goes_the_copy_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pipes smaller than `SPLICE_FROM` (the user's pipe budget spent): the copy way, every
    byte the same; and the kernel's way again for the next body once pipes are large."""
    moved = counting_splices(monkeypatch)
    monkeypatch.setattr(kernel_pipes, "PIPE_SIZE", 4096)
    first, second = golem_frame(2 * MIB, 16), golem_frame(2 * MIB, 17)
    listener, upstream = await loopback_listener()
    room_again = trio.Event()

    async def between(_: trio.socket.SocketType) -> None:
        await room_again.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_in_two, listener, first, between, second)
        async with relay_to(upstream) as relay:
            client = await trio.open_tcp_stream(relay.listen.host, relay.listen.port)
            await client.send_all(golem_frame(10, 18))
            with trio.fail_after(20):
                got = await receive(client, len(first))
                assert not moved  # the first body went the copy way
                monkeypatch.setattr(kernel_pipes, "PIPE_SIZE", MIB)
                room_again.set()
                got += await receive(client, len(second))
            await client.aclose()
    listener.close()
    assert got == first + second and relay.handoff.data(1) == first + second
    assert sum(moved) >= MIB


async def test_tcp_urgent_data_mid_body_is_not_taken_for_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At TCP's urgent mark splice moves nothing while the socket polls readable: the copy
    way's read takes the next bytes (the urgent byte skipped, as without the kernel's way),
    so the answer crosses whole, where the relay spun on the mark until the connection
    ended."""
    moved = counting_splices(monkeypatch)
    answer = golem_frame(2 * MIB, 19)
    cut = 600_000
    listener, upstream = await loopback_listener()
    sent_urgent = trio.Event()

    async def between(peer: trio.socket.SocketType) -> None:
        with trio.fail_after(20):
            while not moved:  # the kernel's way is under way
                await trio.sleep(0.01)
        await peer.send(b"!", socket.MSG_OOB)
        sent_urgent.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_in_two, listener, answer[:cut], between, answer[cut:])
        async with relay_to(upstream) as relay:
            client = await trio.open_tcp_stream(relay.listen.host, relay.listen.port)
            await client.send_all(golem_frame(10, 20))
            with trio.fail_after(20):
                got = await receive(client, len(answer))
            await client.aclose()
    listener.close()
    assert sent_urgent.is_set()
    assert got == answer and relay.handoff.data(1) == answer
