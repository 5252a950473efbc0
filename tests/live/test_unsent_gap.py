"""Bytes read and never sent on that cannot be recorded either (the fallback of
`Unsent.in_order`: their writer's turn never came) become a gap that says so, not one that says
"forwarded, not decoded": a gap's words must be as true as its size."""

from __future__ import annotations

import os
import pickle
import socket

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    ObservationLost,
)
from golem_proxy.live import unsent
from golem_proxy.live.connection import Connection
from golem_proxy.live.handoff import HandoffWriter, Kind
from golem_proxy.live.handoff_reader import RecordReader
from golem_proxy.live.handoff_source import HandoffSource
from golem_proxy.live.hub import EventHub
from golem_proxy.live.observer import Observer
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.net.addresses import Address, Route

from .observer_link_helpers import hand_link, read_records


def gaps(events: list[Event]) -> list[str]:
    return [event.detail for event in events if isinstance(event, ObservationLost)]


def test_a_gap_of_bytes_never_sent_on_says_so() -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    tap.lose(Direction.S2C, 100, 1.0)  # forwarded, not decoded (the observer was behind)
    tap.report_lost(Direction.S2C, 1.0)
    tap.lose(Direction.S2C, 40, 2.0, unsent="client gone")
    tap.report_lost(Direction.S2C, 2.0)
    assert gaps(events) == [
        "observation lost: 100 bytes on conn #1, s2c (from 1.000 s; forwarded, not decoded)",
        "observation lost: 40 bytes on conn #1, s2c (from 2.000 s; never sent on (client "
        "gone), not decoded)",
    ]


def test_a_gap_partly_never_sent_on_says_how_much() -> None:
    """The bytes a loss drops with it (a partial frame held) were forwarded: only those said
    unsent are counted so."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    tap.lose(Direction.C2S, 100, 1.0)
    tap.lose(Direction.C2S, 30, 1.5, unsent="connection ended")
    tap.report_lost(Direction.C2S, 2.0)
    (detail,) = gaps(events)
    assert detail.endswith(
        "(from 1.000 s; forwarded, not decoded; 30 of them never sent on (connection ended))"
    )


@pytest.mark.trio
@pytest.mark.parametrize("given_up", [False, True])
async def test_through_the_observer_a_loss_keeps_what_was_never_sent_on(given_up: bool) -> None:
    """Merged into a gap still open, or turned into gaps at once when the drain timeout runs
    out at the stop, the bytes never sent on are still told apart."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    observer = Observer()
    observer.lose(tap, Direction.S2C, 100, 1.0)  # the observer was behind: forwarded
    observer.after_queued(lambda: None)
    observer.lose(tap, Direction.S2C, 40, 2.0, unsent="client gone")
    observer.drain_now(0.0 if given_up else None)
    tap.closing(3.0)
    (detail,) = gaps(events)
    assert detail.startswith("observation lost: 140 bytes")
    assert detail.endswith("forwarded, not decoded; 40 of them never sent on (client gone))")


@pytest.mark.trio
async def test_an_observing_process_is_told_by_an_unsent_record() -> None:
    """``--observer child-process``: the forwarding side's ``UNSENT`` record, in order with
    the chunks, becomes the same gap in the observing process."""
    events: list[Event] = []
    hub = EventHub()
    hub.attach_sink(events.append)
    read_fd, write_fd = os.pipe()
    writer = HandoffWriter(write_fd)
    source = HandoffSource(hub, read_fd, [], GOLEM, ProxyOptions())
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(source.serve)
            opened = ConnectionOpened(
                conn=1, route="main", t=0.0, client="127.0.0.1:1", upstream="127.0.0.1:2"
            )
            writer.event(Kind.OPENED, 1, 0, 0.0, pickle.dumps(opened))
            writer.event(Kind.UNSENT, 1, 1, 0.5, "31 client gone")
            closed = ConnectionClosed(conn=1, route="main", reason="client reset", t=0.6)
            writer.event(Kind.CLOSED, 1, 0, 0.6, pickle.dumps(closed))
            os.close(write_fd)
            write_fd = -1
    finally:
        if write_fd >= 0:
            os.close(write_fd)
        os.close(read_fd)
    (detail,) = gaps(events)
    assert detail.startswith("observation lost: 31 bytes on conn #1, s2c")
    assert detail.endswith("never sent on (client gone), not decoded)")


@pytest.mark.trio
async def test_bytes_whose_writer_never_let_go_are_a_gap_that_says_they_were_not_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The connection ends while the other writer holds the direction's lock past
    `LOST_WAIT`: the frame waiting for its turn is neither sent nor recorded, and its gap says
    both."""
    monkeypatch.setattr(unsent, "LOST_WAIT", 0.05)
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    pairs = [socket.socketpair() for _ in range(2)]
    route = Route("main", Address("127.0.0.1", 0), Address("127.0.0.1", 9))
    conn = Connection(
        1,
        route,
        trio.SocketStream(trio.socket.from_stdlib_socket(pairs[0][0])),
        trio.SocketStream(trio.socket.from_stdlib_socket(pairs[1][0])),
        tap=tap,
        inline=True,
    )
    locks = {direction: trio.Lock() for direction in Direction}
    waiting = unsent.Unsent(conn, locks, trio.current_time)
    frame = GOLEM.encode({"id": 1, "result": "late"})
    held = trio.Event()
    try:
        async with trio.open_nursery() as nursery:

            async def holder() -> None:
                async with locks[Direction.S2C]:
                    held.set()
                    await trio.sleep_forever()

            nursery.start_soon(holder)
            await held.wait()
            with trio.CancelScope() as scope:
                scope.cancel()  # the connection ends while the frame waits for its turn
                await waiting.lost(Direction.S2C, frame, 3.0)
            nursery.cancel_scope.cancel()
    finally:
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
    tap.closing(4.0)
    (detail,) = gaps(events)
    assert f"{len(frame)} bytes" in detail
    assert "never sent on (connection ended), not decoded" in detail
    assert "forwarded" not in detail


def test_the_forwarding_side_says_unsent_bytes_in_order_with_the_rest() -> None:
    with hand_link() as (link, _, read_fd):
        link.data(1, Direction.S2C, b"abc", 0.1)
        link.lose(1, Direction.S2C, 31, 0.2, "client gone")
        link.lose(1, Direction.S2C, 5, 0.3)  # forwarded, not handed on: a count
        link.data(1, Direction.S2C, b"def", 0.4)
        records = read_records(link, read_fd, RecordReader())
    assert [(r.kind, bytes(r.data), r.lost) for r in records] == [
        (Kind.DATA, b"abc", 0),
        (Kind.UNSENT, b"31 client gone", 0),
        (Kind.LOST, b"", 5),
        (Kind.DATA, b"def", 0),
    ]
