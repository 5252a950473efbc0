"""The observer's share of the time while forwarding is busy: small while it keeps up, larger
once what it has queued waits too long. With 15 % and nothing else, 8 clients calling one after
the other left the recording a median 1.3 s (at worst 2.1 s) behind the wire: a ``kill -9``
lost 25 to 60 % of the completed exchanges (bench/kill9_lag.py)."""

from __future__ import annotations

import struct

import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event, FrameSeen, ObservationLost
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


def test_one_connections_small_calls_do_not_make_anothers_big_answer_look_dear() -> None:
    """The queue holds ``max_drain`` seconds of decoding. Costed at one rate for every
    connection, the rate small calls had shown (2.2 MB/s measured in the bench) made the first
    16 MiB answer on another connection look like 7 s of work, and it was shed although it
    decodes in a fraction of that. Each connection is now costed at its own rate."""
    events: list[Event] = []
    observer = Observer()
    calls = ConnectionTap(1, "main", GOLEM, events.append)
    answers = ConnectionTap(2, "main", GOLEM, events.append)
    payload = b'{"id":"1","result":{"image":"' + b"A" * (16 * 1024 * 1024) + b'"}}'
    big = struct.pack("!I", len(payload)) + payload

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(observer.run)
            for _ in range(20_000):
                observer.submit(calls, Direction.C2S, FRAME, 1.0)
            with trio.fail_after(60):  # the small calls decoded: their rate is known
                while observer.backlog or observer.used > observer.held:
                    await trio.sleep(0.01)
                while len([e for e in events if isinstance(e, FrameSeen)]) < 20_000:
                    await trio.sleep(0.01)
            for at in range(0, len(big), 65536):  # arrives faster than anything decodes it
                observer.submit(answers, Direction.S2C, big[at : at + 65536], 2.0)
            assert not observer.shedding and observer.shed_bytes == 0
            nursery.cancel_scope.cancel()

    trio.run(main)
    observer.drain_now()
    assert not [e for e in events if isinstance(e, ObservationLost)]
