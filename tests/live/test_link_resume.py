"""The forwarding side of a restarted observing process (link_resume.py, `ObserverLink.resume`):
what crossed while observation was down is counted per connection and direction, every open
connection is taken up at its next frame boundary, exactly, and the connections that came and
went meanwhile are counted. Real pipes, the link driven by hand."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable

from golem_core.framing import Framing
from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionClosed, ConnectionOpened, Direction
from golem_proxy.live.handoff import Kind, Record
from golem_proxy.live.handoff_reader import RecordReader
from golem_proxy.live.link_resume import OpenConnections, Resumption
from golem_proxy.live.observer_link import ObserverLink

from .observer_link_helpers import hand_link, read_records

C2S, S2C = Direction.C2S, Direction.S2C


def _opened(conn: int, t: float = 0.0) -> ConnectionOpened:
    return ConnectionOpened(conn=conn, route="main", t=t, client="c", upstream="u")


def _closed(conn: int, t: float = 1.0) -> ConnectionClosed:
    return ConnectionClosed(conn=conn, route="main", t=t, reason="eof", bytes_c2s=0, bytes_s2c=0)


def _frame(n: int, size: int = 20) -> bytes:
    return GOLEM.encode({"id": n, "method": "echo", "params": {"x": "y" * size}})


def _follow(link: object) -> OpenConnections:
    followed = OpenConnections({}, Framing.LENGTH_PREFIXED)
    link.connections = followed  # type: ignore[attr-defined]
    return followed


def _resume_and_read(
    link: ObserverLink, seq: int = 0, then: Callable[[], None] = lambda: None
) -> tuple[Resumption, list[Record]]:
    """Resume ``link`` into a new pipe, do ``then``, and read what the new pipe got."""
    new_read, new_write = os.pipe()
    os.set_blocking(new_read, False)
    try:
        resumption = link.resume(new_write, seq=seq)
        then()
        return resumption, read_records(link, new_read, RecordReader())
    finally:
        os.close(new_read)


def _resumed(records: list[Record]) -> list[tuple[int, int, int]]:
    return [(r.conn, r.direction, r.lost) for r in records if r.kind is Kind.RESUMED]


def test_a_connection_cut_mid_frame_goes_on_at_its_next_frame_with_the_bytes_counted() -> None:
    with hand_link() as (link, _, read_fd):
        _follow(link)
        reader = RecordReader()
        link.publish(_opened(1))
        first, second, third = _frame(1), _frame(2), _frame(3, 500)
        link.data(1, C2S, first + second[:10], 0.1)  # handed on, then the observer dies
        link.stop()
        link.data(1, C2S, second[10:30], 0.2)  # crosses unobserved
        read_records(link, read_fd, reader)

        def more() -> None:
            link.data(1, C2S, second[30:] + third[:7], 0.3)
            link.data(1, C2S, third[7:], 0.4)

        resumption, records = _resume_and_read(link, 41, more)
    assert isinstance(resumption, Resumption) and resumption.seq == 41
    assert records[0].kind is Kind.RESUME
    told = pickle.loads(records[0].data)
    assert [c.opened.conn for c in told.connections] == [1]
    # The server side was at a boundary: it goes on at once, nothing lost.
    assert _resumed(records) == [(1, 1, 0), (1, 0, len(second) - 10)]
    data = b"".join(bytes(r.data) for r in records if r.kind is Kind.DATA)
    assert data == third  # from the next frame on, byte for byte


def test_a_direction_at_a_boundary_goes_on_at_once_and_an_end_while_down_is_handed_on() -> None:
    with hand_link() as (link, _, read_fd):
        _follow(link)
        link.publish(_opened(1))
        link.data(1, C2S, _frame(1), 0.1)
        link.stop()
        link.data(1, S2C, _frame(9), 0.2)
        link.data(1, S2C, b"", 0.3)
        read_records(link, read_fd, RecordReader())
        _, records = _resume_and_read(link)
    kinds = [(r.kind, r.direction) for r in records]
    assert kinds == [
        (Kind.RESUME, 0),
        (Kind.RESUMED, 0),
        (Kind.RESUMED, 1),
        (Kind.END, 1),
    ]
    assert _resumed(records) == [(1, 0, 0), (1, 1, len(_frame(9)))]


def test_connections_that_came_and_went_while_down_are_counted_and_a_close_waits() -> None:
    with hand_link() as (link, _, read_fd):
        followed = _follow(link)
        link.publish(_opened(1))
        link.data(1, C2S, _frame(1)[:5], 0.1)
        link.stop()
        link.publish(_opened(2, 0.2))
        link.data(2, C2S, _frame(2), 0.2)
        link.publish(_closed(2, 0.3))  # opened and closed unseen
        link.publish(_closed(1, 0.4))  # open when observation stopped: its close waits
        assert followed.unseen == 1
        read_records(link, read_fd, RecordReader())
        _, records = _resume_and_read(link)
    told = pickle.loads(records[0].data)
    assert [c.opened.conn for c in told.connections] == [1]
    assert [r.kind for r in records[1:]] == [Kind.RESUMED, Kind.RESUMED, Kind.CLOSED]
    assert pickle.loads(records[-1].data).conn == 1
    assert len(followed) == 0


def test_a_close_before_the_next_boundary_says_what_was_lost_first() -> None:
    frame = _frame(1, 100)
    with hand_link() as (link, _, read_fd):
        _follow(link)
        link.publish(_opened(1))
        link.data(1, S2C, frame[:50], 0.1)
        link.stop()
        read_records(link, read_fd, RecordReader())

        def more() -> None:
            link.data(1, S2C, frame[50:60], 0.2)  # still the frame in progress
            link.publish(_closed(1, 0.3))

        _, records = _resume_and_read(link, 0, more)
    assert [r.kind for r in records] == [Kind.RESUME, Kind.RESUMED, Kind.RESUMED, Kind.CLOSED]
    assert _resumed(records) == [(1, 0, 0), (1, 1, 10)]


def test_unacknowledged_bytes_at_the_stop_are_told_to_the_new_process() -> None:
    with hand_link() as (link, _, read_fd):
        _follow(link)
        link.publish(_opened(1))
        link.data(1, C2S, _frame(1), 0.1)
        link.stop()
        read_records(link, read_fd, RecordReader())
        resumption, _ = _resume_and_read(link)
    (resumed,) = resumption.connections
    assert resumed.unrecorded > len(_frame(1))  # the open record and the frame's, at least


def test_what_crosses_once_the_pipe_broke_is_counted_for_the_next_process() -> None:
    """The observing process dies: the link learns it from a write that fails, before anyone
    calls `stop`. That chunk, the ones after it and a close meanwhile all reach the next
    process as what crossed unobserved."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    link = ObserverLink(write_fd, lambda: 0.0)
    followed = _follow(link)
    try:
        link.publish(_opened(1))
        link.publish(_opened(2))
        link.data(1, C2S, _frame(1), 0.1)
        read_records(link, read_fd, RecordReader())
        os.close(read_fd)  # the observing process is gone
        second, third = _frame(2), _frame(3)
        link.data(1, C2S, second, 0.2)  # this write fails: nothing of it reached anyone
        assert link.stopped and followed.down
        link.data(1, C2S, third, 0.3)
        link.publish(_closed(2))  # it waits for the next process
        link.publish(_opened(3))  # the dead process never knew it
        assert followed.known() == ((1, "main"), (2, "main"))
        resumption, records = _resume_and_read(link)
    finally:
        os.close(write_fd)
    assert [(c.opened.conn, c.seen) for c in resumption.connections] == [
        (1, True),
        (2, True),
        (3, False),
    ]
    assert (1, 0, len(second) + len(third)) in _resumed(records)
    assert [r.conn for r in records if r.kind is Kind.CLOSED] == [2]


def test_requests_wait_while_more_of_the_clients_frames_crossed_whole_than_answers() -> None:
    followed = OpenConnections({}, Framing.LENGTH_PREFIXED)
    assert followed.answers_waiting(1) is None  # not followed: not known
    followed.opened(_opened(1))
    assert followed.answers_waiting(1) is False
    followed.follow(1, 0, _frame(1) + _frame(2) + _frame(3))  # pipelined
    assert followed.answers_waiting(1) is True
    followed.follow(1, 1, _frame(1))
    followed.follow(1, 1, _frame(2) + _frame(3)[:-1])  # the last answer cut short
    assert followed.answers_waiting(1) is True
    followed.follow(1, 1, _frame(3)[-1:])
    assert followed.answers_waiting(1) is False
    lines = OpenConnections({}, Framing.LINE)
    lines.opened(_opened(2))
    assert lines.answers_waiting(2) is None  # lines are not counted
