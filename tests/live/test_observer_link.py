"""The forwarding side's bound on how far the recording trails the wire (observer_link.py): the
link holds when what it handed on is not acknowledged in time or in bytes, lets go once the
acknowledgements catch up, sheds past ``hold_limit``, and hands a large chunk on in pieces.
A real pipe; the observing side is this test, reading the records and acknowledging offsets;
the clock is the test's."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from golem_proxy.events import Direction
from golem_proxy.live.handoff import HEADER, Kind
from golem_proxy.live.handoff_reader import RecordReader
from golem_proxy.live.link_ledger import (
    OUTSTANDING_CEILING,
    OUTSTANDING_LIMIT,
    RECORD_LIMIT,
    TRAIL_LIMIT,
)
from golem_proxy.live.observer_link import STALL_LIMIT
from golem_proxy.live.unrecorded_values import UnrecordedValues

from .observer_link_helpers import hand_link, read_records


def test_the_link_holds_past_the_trail_limit_and_lets_go_once_acknowledged() -> None:
    with hand_link() as (link, clock, read_fd):
        reader = RecordReader()
        link.data(1, Direction.C2S, b"x" * 100, 0.0)
        clock.now = TRAIL_LIMIT / 2
        link.data(1, Direction.C2S, b"y" * 100, clock.now)
        assert not link.holding
        clock.now = TRAIL_LIMIT * 1.5
        link.data(1, Direction.C2S, b"z" * 100, clock.now)
        assert link.holding  # the first chunk is unacknowledged for longer than the limit
        read_records(link, read_fd, reader)
        link.acknowledged(HEADER.size + 100)  # the first chunk only: the second is 60 ms old
        assert link.holding
        link.acknowledged(reader.offset)
        assert not link.holding and link.trail() == 0.0


def test_the_link_holds_past_the_outstanding_bytes_however_recent() -> None:
    with hand_link() as (link, _, read_fd):
        reader = RecordReader()
        for _ in range(OUTSTANDING_LIMIT // RECORD_LIMIT + 1):
            link.data(1, Direction.S2C, b"a" * RECORD_LIMIT, 0.0)
            read_records(link, read_fd, reader)  # keep the pipe from filling
        assert link.holding
        link.acknowledged(reader.offset)
        assert not link.holding


def test_the_byte_limit_follows_the_rate_the_observing_process_says_it_gets_through() -> None:
    """Blobs it gets through fast let the relay run up to `OUTSTANDING_CEILING` ahead (the
    next answer forwarded while the last is finished); tiny frames keep `OUTSTANDING_LIMIT`."""
    with hand_link() as (link, _, read_fd):
        reader = RecordReader()
        link.acknowledged(0, rate=1e9)  # 1 GB/s: 60 MB in the trail limit, past the ceiling
        assert link.outstanding_limit == OUTSTANDING_CEILING
        for _ in range(2 * OUTSTANDING_LIMIT // RECORD_LIMIT):
            link.data(1, Direction.S2C, b"a" * RECORD_LIMIT, 0.0)
            read_records(link, read_fd, reader)
        assert not link.holding  # 2 MiB out: under the raised limit
        link.acknowledged(reader.offset, rate=50_000)  # tiny frames: 3 KB in 60 ms
        assert link.outstanding_limit == OUTSTANDING_LIMIT
        for _ in range(OUTSTANDING_LIMIT // RECORD_LIMIT + 1):
            link.data(1, Direction.S2C, b"a" * RECORD_LIMIT, 0.0)
            read_records(link, read_fd, reader)
        assert link.holding
        link.acknowledged(reader.offset, rate=0)  # not known: the limit stays
        assert link.outstanding_limit == OUTSTANDING_LIMIT and not link.holding


def test_what_clients_send_keeps_the_least_byte_limit_whatever_the_rate() -> None:
    """Right after blobs set a high rate, a flood of requests must not cross whole: the
    clients' bytes hold the link past `OUTSTANDING_LIMIT`, the servers' only past the raised
    limit."""
    with hand_link() as (link, _, read_fd):
        reader = RecordReader()
        link.acknowledged(0, rate=1e9)
        assert link.outstanding_limit == OUTSTANDING_CEILING
        for _ in range(2 * OUTSTANDING_LIMIT // RECORD_LIMIT):
            link.data(1, Direction.S2C, b"a" * RECORD_LIMIT, 0.0)
            read_records(link, read_fd, reader)
        assert not link.holding and link.client_outstanding == 0
        for _ in range(OUTSTANDING_LIMIT // RECORD_LIMIT + 1):
            link.data(2, Direction.C2S, b"r" * RECORD_LIMIT, 0.0)
            read_records(link, read_fd, reader)
        assert link.holding and link.holds(2)
        assert link.client_outstanding > OUTSTANDING_LIMIT
        link.acknowledged(reader.offset, rate=1e9)
        assert not link.holding and link.client_outstanding == 0


def test_a_large_chunk_is_handed_on_in_pieces_whole_and_in_order() -> None:
    chunk = bytes(range(256)) * (RECORD_LIMIT * 3 // 256 + 7)
    with hand_link() as (link, _, read_fd):
        link.data(1, Direction.S2C, chunk, 0.0)
        records = read_records(link, read_fd, RecordReader())
    assert all(r.kind is Kind.DATA and len(r.data) <= RECORD_LIMIT for r in records)
    assert len(records) == 4
    assert b"".join(r.data for r in records) == chunk


def test_past_the_hold_limit_the_link_sheds_until_acknowledged_then_says_what_was_lost() -> None:
    async def main() -> None:
        with hand_link(hold_limit=0.5) as (link, clock, read_fd):
            reader = RecordReader()
            link.data(1, Direction.C2S, b"a" * 10, 0.0)
            clock.now = 1.0
            link.data(1, Direction.C2S, b"b" * 10, clock.now)
            assert link.holding
            await link.until_caught_up(1)  # the autojumping clock: half a second, then it sheds
            assert link.sheds_now(1) and not link.holds(1)
            link.data(1, Direction.C2S, b"c" * 10, clock.now)  # counted, not handed on
            link.data(1, Direction.S2C, b"d" * 20, clock.now)
            read_records(link, read_fd, reader)
            link.acknowledged(reader.offset)
            assert not link.shedding
            link.data(1, Direction.S2C, b"e" * 5, clock.now)
            records = read_records(link, read_fd, reader)
        # Both directions' losses come before the connection's next record.
        assert [(r.kind, r.direction, r.lost, r.data) for r in records] == [
            (Kind.LOST, 0, 10, b""),
            (Kind.LOST, 1, 20, b""),
            (Kind.DATA, 1, 0, b"e" * 5),
        ]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_failure_while_handing_on_stops_observation_not_the_relay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever goes wrong in handing on costs the observation, said once, and never raises
    into the relay that called it."""
    reasons: list[str] = []
    with hand_link() as (link, _, _):
        link.on_give_up = reasons.append
        link.data(1, Direction.C2S, b"before", 0.0)

        def broken(*_: object) -> bool:
            raise IndexError("deque index out of range")

        monkeypatch.setattr(link.writer, "data", broken)
        link.data(1, Direction.C2S, b"during", 0.1)  # does not raise
        link.data(1, Direction.S2C, b"after", 0.2)
        assert link.gone and not link.holds(1)
    assert reasons == [
        "handing on to the observing process failed (IndexError: deque index out of range)"
    ]


def test_arrival_marks_are_handed_on_only_to_a_session_that_reads_them() -> None:
    """A faulted or intercepted route marks each read (`Connection.arrived`); only a session
    with an MCP hop decides anything by them, so only its link hands them on."""
    with hand_link() as (link, _clock, read_fd):
        link.arrived(1, Direction.C2S, 0.5)
        assert read_records(link, read_fd, RecordReader()) == []
        link.marks_arrivals = True
        link.arrived(1, Direction.C2S, 0.75)
        records = read_records(link, read_fd, RecordReader())
        assert [(r.kind, r.conn, r.t) for r in records] == [(Kind.ARRIVED, 1, 0.75)]


def test_values_learned_while_a_connection_sheds_wait_and_the_gap_stays_one() -> None:
    """Of frames not recorded as they came, the values the tap must learn are handed on at
    once, but not while their connection sheds: they wait (each value once) and follow the
    gap's ``LOST`` records when it hands on again, so that the gap is said once, not split at
    each of them, and a frame after it that repeats a value is recorded with it hidden."""

    async def main() -> None:
        with hand_link(hold_limit=0.5) as (link, clock, read_fd):
            reader = RecordReader()
            link.unrecorded(1, Direction.S2C, ("TOKEN-zero",), 0.0)
            link.data(1, Direction.C2S, b"a" * 10, 0.0)
            clock.now = 1.0
            link.data(1, Direction.C2S, b"b" * 10, clock.now)
            await link.until_caught_up(1)
            assert link.sheds_now(1)
            link.data(1, Direction.S2C, b"c" * 10, clock.now)
            link.unrecorded(1, Direction.S2C, ("TOKEN-one",), clock.now)
            link.data(1, Direction.S2C, b"d" * 20, clock.now)
            link.unrecorded(1, Direction.S2C, ("TOKEN-two", "TOKEN-one"), clock.now)
            link.data(1, Direction.C2S, b"e" * 5, clock.now)
            before = read_records(link, read_fd, reader)
            link.acknowledged(reader.offset)
            link.data(1, Direction.C2S, b"f" * 5, clock.now)
            after = read_records(link, read_fd, reader)
        assert [r.kind for r in before] == [Kind.UNRECORDED, Kind.DATA, Kind.DATA]
        assert UnrecordedValues().read(before[0].data) == ["TOKEN-zero"]
        assert [(r.kind, r.direction, r.lost) for r in after] == [
            (Kind.LOST, 1, 30),
            (Kind.LOST, 0, 5),
            (Kind.UNRECORDED, 0, 0),
            (Kind.DATA, 0, 0),
        ]
        assert UnrecordedValues().read(after[2].data) == ["TOKEN-two", "TOKEN-one"]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_after_a_full_spool_nothing_holds_until_what_it_held_is_acknowledged() -> None:
    with hand_link(budget=1000, stall_limit=60.0) as (link, clock, read_fd):
        reader = RecordReader()
        link.data(1, Direction.S2C, b"s" * 2000, 0.0)
        assert link.holding  # past the spool's budget
        link.leave_spool()
        spool_end = link.writer.handed
        assert not link.holding and not link.holds(1)
        # Seconds later the observing process still decodes what the spool held: the pipe's
        # records trail behind it, and the relay does not wait for them.
        for n in range(5):
            clock.now = 1.0 + n
            link.data(1, Direction.S2C, b"p" * 100, clock.now)
            read_records(link, read_fd, reader)
            assert not link.holding
        assert link.stall_limit == 60.0
        link.acknowledged(spool_end)
        # From here the pipe's records trail from the moment they could be decoded.
        assert link.stall_limit == STALL_LIMIT and link.trail() == 0.0
        link.data(1, Direction.S2C, b"q" * 100, clock.now)
        assert not link.holding
        clock.now += TRAIL_LIMIT * 1.5
        link.data(1, Direction.S2C, b"r" * 100, clock.now)
        assert link.holding  # as without a spool
        read_records(link, read_fd, reader)
        link.acknowledged(reader.offset)
        assert not link.holding
