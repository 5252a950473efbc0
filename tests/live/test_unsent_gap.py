"""Bytes read and never sent on that cannot be recorded either (the fallback of
`Unsent.in_order`: their writer's turn never came) become a gap that says so, not one that says
"forwarded, not decoded": a gap's words must be as true as its size."""

from __future__ import annotations

import socket

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event, ObservationLost
from golem_proxy.live import unsent
from golem_proxy.live.connection import Connection
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.net.addresses import Address, Route


def gaps(events: list[Event]) -> list[str]:
    return [event.detail for event in events if isinstance(event, ObservationLost)]


def test_a_gap_of_bytes_never_sent_on_says_so() -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    tap.lose(Direction.S2C, 100, 1.0)  # forwarded, not decoded (the observer was behind)
    tap.report_lost(Direction.S2C, 1.0)
    tap.mark_undelivered(Direction.S2C, "client gone")
    tap.lose(Direction.S2C, 40, 2.0)
    tap.report_lost(Direction.S2C, 2.0)
    assert gaps(events) == [
        "observation lost: 100 bytes on conn #1, s2c (from 1.000 s; forwarded, not decoded)",
        "observation lost: 40 bytes on conn #1, s2c (from 2.000 s; never sent on (client "
        "gone), not decoded)",
    ]


def test_a_gap_partly_never_sent_on_says_how_much() -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append)
    tap.lose(Direction.C2S, 100, 1.0)
    tap.mark_undelivered(Direction.C2S, "connection ended")
    tap.lose(Direction.C2S, 30, 1.5)
    tap.report_lost(Direction.C2S, 2.0)
    (detail,) = gaps(events)
    assert detail.endswith(
        "(from 1.000 s; forwarded, not decoded; 30 of them never sent on (connection ended))"
    )


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
