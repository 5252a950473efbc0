"""At a stop, the observer decodes what is queued for a bounded time: a flood of tiny frames
that forwarded in a moment would otherwise take many seconds to decode (17 MB of 57-byte
notifications: 17 s after Ctrl-C, with a 2 s drain timeout). What it cannot decode in time
is recorded as a gap, and the closes queued behind it are still reported, in order."""

from __future__ import annotations

from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.events import (
    ConnectionClosed,
    Direction,
    Event,
    FrameSeen,
    GapReason,
    ObservationLost,
)
from golem_proxy.live.observer import Observer
from golem_proxy.live.tap import ConnectionTap

NOTE = b'{"jsonrpc":"2.0","method":"tick","params":{}}\n'
CHUNK = NOTE * 1000


class Ticking:
    """A clock that moves a millisecond each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


def _observer_with_a_flood(events: list[Event], chunks: int) -> Observer:
    observer = Observer(clock=Ticking())
    tap = ConnectionTap(1, "main", JSONRPC_NDJSON, events.append)
    for _ in range(chunks):
        observer.submit(tap, Direction.S2C, CHUNK, 0.5)
    closed = ConnectionClosed(
        conn=1,
        route="main",
        reason="proxy shutting down",
        t=1.0,
        bytes_c2s=0,
        bytes_s2c=len(CHUNK) * chunks,
    )
    observer.submit_event(events.append, closed)  # the connection was cut: no end of stream
    observer.forget(tap)
    return observer


def test_what_is_left_when_the_time_is_up_is_a_gap_reported_before_the_close() -> None:
    events: list[Event] = []
    observer = _observer_with_a_flood(events, 40)
    observer.drain_now(0.05)
    assert not observer.backlog and observer.used == 0
    frames = [e for e in events if isinstance(e, FrameSeen)]
    (gap,) = [e for e in events if isinstance(e, ObservationLost)]
    assert gap.reason is GapReason.BEHIND and gap.direction is Direction.S2C
    assert len(frames) < 40 * 1000  # the time ran out before the end
    # Every byte is either a decoded frame or in the gap: nothing silently dropped.
    assert sum(f.size for f in frames) + gap.size == 40 * len(CHUNK)
    assert isinstance(events[-1], ConnectionClosed)
    assert events.index(gap) < len(events) - 1


def test_without_a_limit_everything_queued_is_decoded() -> None:
    events: list[Event] = []
    observer = _observer_with_a_flood(events, 3)
    observer.drain_now()
    assert len([e for e in events if isinstance(e, FrameSeen)]) == 3000
    assert not [e for e in events if isinstance(e, ObservationLost)]
    assert isinstance(events[-1], ConnectionClosed)
