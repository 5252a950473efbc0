"""The link holds only the connections the recording trails on (observer_link.py): a connection
with less than its share of the bytes not acknowledged yet forwards on while a busy one is
held, and is held in turn once the busy one drained; past `CAP` times the byte limit every
connection is held; past ``hold_limit`` the busy one sheds alone and the recording names its
span. Driven by hand: a real pipe, the test reads the records and acknowledges offsets; the
clock is the test's."""

from __future__ import annotations

import trio
import trio.testing

from golem_proxy.events import Direction
from golem_proxy.live.handoff import Kind
from golem_proxy.live.handoff_reader import RecordReader
from golem_proxy.live.link_ledger import (
    BEHIND_AFTER,
    CAP,
    OUTSTANDING_LIMIT,
    QUIET_SHARE,
    RECORD_LIMIT,
    TRAIL_LIMIT,
)
from golem_proxy.live.observer_link import ObserverLink

from .observer_link_helpers import hand_link, read_records

BUSY, QUIET = 1, 2


def _flood(link: ObserverLink, read_fd: int, reader: RecordReader, size: int, t: float) -> None:
    """``size`` bytes of the busy connection, handed on (and read off the pipe), unacknowledged."""
    for _ in range(size // RECORD_LIMIT):
        link.data(BUSY, Direction.S2C, b"n" * RECORD_LIMIT, t)
        read_records(link, read_fd, reader)


def test_a_quiet_connection_is_not_held_while_the_busy_one_is() -> None:
    with hand_link() as (link, _, read_fd):
        reader = RecordReader()
        link.data(QUIET, Direction.C2S, b"q" * 200, 0.0)
        _flood(link, read_fd, reader, OUTSTANDING_LIMIT + RECORD_LIMIT, 0.0)
        assert link.holding
        assert link.holds(BUSY) and not link.holds(QUIET)
        # The quiet one goes on forwarding (and handing on) while the busy one waits.
        for _ in range(20):
            link.data(QUIET, Direction.C2S, b"q" * 200, 0.0)
            assert not link.holds(QUIET)
        assert link.outstanding(QUIET) < link.outstanding(BUSY)
        read_records(link, read_fd, reader)
        link.acknowledged(reader.offset)
        assert not link.holding and not link.holds(BUSY)
        assert link.outstanding(BUSY) == link.outstanding(QUIET) == 0


def test_connections_with_equal_shares_are_all_held() -> None:
    with hand_link() as (link, clock, read_fd):
        reader = RecordReader()
        for conn in (1, 2, 3):
            link.data(conn, Direction.C2S, b"r" * 100, 0.0)
        clock.now = TRAIL_LIMIT * 1.5
        for conn in (1, 2, 3):
            link.data(conn, Direction.C2S, b"r" * 100, clock.now)
        assert link.holding
        assert all(link.holds(conn) for conn in (1, 2, 3))
        read_records(link, read_fd, reader)
        link.acknowledged(reader.offset)
        assert not any(link.holds(conn) for conn in (1, 2, 3))


def test_once_the_busy_connection_drains_the_quiet_one_trailing_is_held_in_turn() -> None:
    with hand_link() as (link, clock, read_fd):
        reader = RecordReader()
        _flood(link, read_fd, reader, OUTSTANDING_LIMIT + RECORD_LIMIT, 0.0)
        drained = reader.offset
        clock.now = TRAIL_LIMIT
        link.data(QUIET, Direction.C2S, b"q" * 100, clock.now)
        assert link.holds(BUSY) and not link.holds(QUIET)
        read_records(link, read_fd, reader)
        clock.now = TRAIL_LIMIT * 2
        link.acknowledged(drained)  # the busy one's bytes only: the quiet one's still trail
        assert link.holding and link.outstanding(BUSY) == 0
        assert link.holds(QUIET) and not link.holds(BUSY)
        link.acknowledged(reader.offset)
        assert not link.holds(QUIET)


def test_connections_that_trail_alike_are_all_held_not_in_turns() -> None:
    with hand_link() as (link, clock, read_fd):
        reader = RecordReader()
        sizes = {conn: 280 + 10 * conn for conn in range(1, 9)}  # 8 clients, a call each
        for conn, size in sizes.items():
            link.data(conn, Direction.C2S, b"c" * size, 0.0)
        clock.now = TRAIL_LIMIT * 1.5
        link.data(8, Direction.S2C, b"a" * 100, clock.now)
        assert link.holding
        # Those under the average have far more than 1/QUIET_SHARE of what the others have.
        assert all(link.holds(conn) for conn in sizes)
        read_records(link, read_fd, reader)


def test_a_quiet_connection_behind_a_flood_that_stands_still_is_not_held_for_its_share() -> None:
    with hand_link() as (link, clock, read_fd):
        reader = RecordReader()
        link.data(QUIET, Direction.C2S, b"q" * 100, 0.0)
        _flood(link, read_fd, reader, OUTSTANDING_LIMIT + RECORD_LIMIT, 0.0)
        flooded = reader.offset
        # The flood's frames take seconds to decode; the quiet connection's calls go into the
        # pipe behind them, far past 1/QUIET_SHARE of the flood's bytes.
        quiet = 0
        clock.now = BEHIND_AFTER
        while quiet * QUIET_SHARE < 2 * OUTSTANDING_LIMIT:
            clock.now += 0.001
            link.data(QUIET, Direction.C2S, b"q" * 1000, clock.now)
            read_records(link, read_fd, reader)
            quiet += 1000
            assert link.holding and link.holds(BUSY) and not link.holds(QUIET)
        # Once the flood's bytes are recorded, the quiet connection's are what the recording
        # trails on: held until they are too.
        link.acknowledged(flooded)
        assert link.outstanding(BUSY) == 0 and link.holds(QUIET)
        link.acknowledged(reader.offset)
        assert not link.holding and not link.holds(QUIET)


def test_behind_a_flood_a_quiet_connection_counts_again_past_the_byte_limit() -> None:
    with hand_link() as (link, clock, read_fd):
        reader = RecordReader()
        _flood(link, read_fd, reader, OUTSTANDING_LIMIT + RECORD_LIMIT, 0.0)
        clock.now = BEHIND_AFTER
        while link.outstanding(QUIET) <= OUTSTANDING_LIMIT * 2:
            link.data(QUIET, Direction.C2S, b"q" * RECORD_LIMIT, clock.now)
            read_records(link, read_fd, reader)
        assert link.holds(QUIET)


def test_floods_standing_still_keep_their_bytes_in_the_shares() -> None:
    with hand_link() as (link, clock, read_fd):
        reader = RecordReader()
        for conn in (BUSY, 3):  # the second's bytes all come after the first's
            for _ in range(OUTSTANDING_LIMIT // RECORD_LIMIT):
                link.data(conn, Direction.S2C, b"n" * RECORD_LIMIT, 0.0)
                read_records(link, read_fd, reader)
        clock.now = BEHIND_AFTER
        link.data(QUIET, Direction.C2S, b"q" * 100, clock.now)
        assert link.holding
        assert link.holds(BUSY) and link.holds(3) and not link.holds(QUIET)


def test_connections_that_trail_alike_and_stand_still_are_all_held() -> None:
    with hand_link() as (link, clock, read_fd):
        sizes = {conn: 280 + 10 * conn for conn in range(1, 9)}
        for conn, size in sizes.items():
            link.data(conn, Direction.C2S, b"c" * size, 0.0)
        clock.now = TRAIL_LIMIT * 1.5
        link.data(8, Direction.S2C, b"a" * 100, clock.now)
        clock.now += BEHIND_AFTER
        link.data(1, Direction.S2C, b"a" * 100, clock.now)
        assert link.holding
        assert all(link.holds(conn) for conn in sizes)
        read_records(link, read_fd, RecordReader())


def test_past_the_cap_in_bytes_every_connection_is_held() -> None:
    with hand_link() as (link, _, read_fd):
        reader = RecordReader()
        # Two connections of equal bytes, and many small ones: together, past the cap.
        _flood(link, read_fd, reader, OUTSTANDING_LIMIT * CAP + RECORD_LIMIT, 0.0)
        link.data(QUIET, Direction.C2S, b"q" * 100, 0.0)
        assert link.holds(QUIET)


def test_past_the_hold_limit_only_the_busy_connection_sheds_and_its_span_is_named() -> None:
    async def main() -> None:
        with hand_link(hold_limit=0.5) as (link, _, read_fd):
            reader = RecordReader()
            _flood(link, read_fd, reader, OUTSTANDING_LIMIT + RECORD_LIMIT, 0.0)
            assert link.holds(BUSY)
            await link.until_caught_up(QUIET)  # not held: returns at once
            await link.until_caught_up(BUSY)  # the autojumping clock: half a second, then
            assert link.sheds_now(BUSY) and not link.holds(BUSY)
            assert not link.sheds_now(QUIET)
            link.data(BUSY, Direction.S2C, b"x" * 300, 0.0)  # counted, not handed on
            link.data(QUIET, Direction.C2S, b"q" * 10, 0.0)  # handed on
            records = read_records(link, read_fd, reader)
            assert [(r.conn, r.kind) for r in records] == [(QUIET, Kind.DATA)]
            link.acknowledged(reader.offset)
            assert not link.shedding
            link.data(BUSY, Direction.S2C, b"y" * 5, 0.0)
            records = read_records(link, read_fd, reader)
        assert [(r.conn, r.kind, r.lost, r.data) for r in records] == [
            (BUSY, Kind.LOST, 300, b""),
            (BUSY, Kind.DATA, 0, b"y" * 5),
        ]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_held_connection_is_let_go_when_the_recording_catches_up() -> None:
    async def main() -> None:
        with hand_link() as (link, _, read_fd):
            reader = RecordReader()
            _flood(link, read_fd, reader, OUTSTANDING_LIMIT + RECORD_LIMIT, 0.0)
            released = []

            async def held() -> None:
                await link.until_caught_up(BUSY)
                released.append(True)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(held)
                await trio.testing.wait_all_tasks_blocked()
                assert not released
                link.acknowledged(reader.offset)
                with trio.fail_after(10):
                    while not released:
                        await trio.sleep(0)
            assert released and not link.shedding

    trio.run(main)


def test_a_connection_held_alone_goes_on_once_a_busier_one_starts() -> None:
    async def main() -> None:
        with hand_link() as (link, clock, read_fd):
            reader = RecordReader()
            link.data(QUIET, Direction.C2S, b"q" * 100, 0.0)
            clock.now = TRAIL_LIMIT * 1.5
            link.data(QUIET, Direction.C2S, b"q" * 100, clock.now)
            assert link.holds(QUIET)  # the only connection: the recording trails on it
            went_on = trio.Event()

            async def quiet() -> None:
                await link.until_caught_up(QUIET)
                went_on.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(quiet)
                await trio.testing.wait_all_tasks_blocked()
                assert not went_on.is_set()
                _flood(link, read_fd, reader, OUTSTANDING_LIMIT // 2, clock.now)
                with trio.fail_after(10):  # nothing acknowledged: the shares let it go
                    await went_on.wait()
            assert link.holds(BUSY) and not link.holds(QUIET)

    trio.run(main)


def test_a_waiting_connection_looks_again_when_the_busy_one_starts_waiting() -> None:
    async def main() -> None:
        with hand_link() as (link, clock, read_fd):
            reader = RecordReader()
            link.data(QUIET, Direction.C2S, b"q" * 1000, 0.0)
            clock.now = TRAIL_LIMIT * 1.5
            link.data(QUIET, Direction.C2S, b"q" * 1000, clock.now)
            went_on = trio.Event()

            async def quiet() -> None:
                await link.until_caught_up(QUIET)
                went_on.set()

            async def busy() -> None:
                await link.until_caught_up(BUSY)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(quiet)
                await trio.testing.wait_all_tasks_blocked()
                link.data(BUSY, Direction.S2C, b"n" * 100, clock.now)  # wakes the quiet one
                await trio.testing.wait_all_tasks_blocked()
                assert not went_on.is_set()  # the busy one has less than the quiet one yet
                # More of the busy one within the same mark: no wake-up for it (at most one a
                # mark); the busy one starting to wait is one.
                _flood(link, read_fd, reader, OUTSTANDING_LIMIT // 2, clock.now)
                await trio.testing.wait_all_tasks_blocked()
                nursery.start_soon(busy)
                with trio.fail_after(10):
                    await went_on.wait()
                assert link.holds(BUSY) and not link.holds(QUIET)
                link.acknowledged(link.writer.handed)
            assert not link.holding

    trio.run(main)
