"""The observer's share of the time while forwarding is busy: small while it keeps up, larger
once what it has queued waits too long. With 15 % and nothing else, 8 clients calling one after
the other left the recording a median 1.3 s (at worst 2.1 s) behind the wire: a ``kill -9``
lost 25 to 60 % of the completed exchanges (bench/kill9_lag.py)."""

from __future__ import annotations

import struct

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event
from golem_proxy.live.observer import Observer
from golem_proxy.live.tap import ConnectionTap

PAYLOAD = b'{"id":"1","method":"ping","params":{}}'
FRAME = struct.pack("!I", len(PAYLOAD)) + PAYLOAD


class Manual:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _observer() -> tuple[Observer, Manual, ConnectionTap]:
    clock = Manual()
    events: list[Event] = []
    observer = Observer(clock=clock, duty=0.15, duty_late=0.5, max_trail=0.03)
    return observer, clock, ConnectionTap(1, "main", GOLEM, events.append)


def test_a_fresh_queue_leaves_forwarding_most_of_the_time() -> None:
    observer, clock, tap = _observer()
    observer.submit(tap, Direction.C2S, FRAME, 1.0)
    clock.now += 0.02
    assert observer.share == 0.15


def test_a_chunk_waiting_past_max_trail_gets_decoding_the_larger_share() -> None:
    observer, clock, tap = _observer()
    observer.submit(tap, Direction.C2S, FRAME, 1.0)
    clock.now += 0.031
    observer.submit(tap, Direction.S2C, FRAME, 1.0)  # fresh chunks behind it change nothing
    assert observer.share == 0.5


def test_once_the_old_chunks_are_decoded_the_share_falls_back() -> None:
    observer, clock, tap = _observer()
    observer.submit(tap, Direction.C2S, FRAME, 1.0)
    clock.now += 0.05
    assert observer.share == 0.5
    observer.drain_now()
    assert observer.share == 0.15
