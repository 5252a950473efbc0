"""The handoff writer's backlog: while the pipe is full, forwarded chunks wait in order (up to
the backlog) instead of being lost; past it, they are counted as lost as without one."""

from __future__ import annotations

import os

from golem_proxy.live.handoff import HandoffWriter, Kind, Record
from golem_proxy.live.handoff_reader import RecordReader


def _read_everything(read_fd: int, writer: HandoffWriter, reader: RecordReader) -> list[Record]:
    """Read the pipe, letting the writer refill it, until nothing waits any more."""
    os.set_blocking(read_fd, False)
    records: list[Record] = []
    while True:
        try:
            reader.receive_data(os.read(read_fd, 1 << 20))
        except BlockingIOError:
            if writer.waiting:
                writer.flush()
                continue
            break
        while (record := reader.next_record()) is not None:
            records.append(record)
    while (record := reader.next_record()) is not None:
        records.append(record)
    return records


def test_chunks_wait_in_order_within_the_backlog_and_are_lost_past_it() -> None:
    read_fd, write_fd = os.pipe()
    try:
        writer = HandoffWriter(write_fd, backlog=4 * 1024 * 1024)
        writer.event(Kind.OPENED, 1, 0, 0.0, b"opened")
        chunks = [bytes([n]) * 100_000 for n in range(30)]  # 3 MB: more than the pipe holds
        assert all(writer.data(1, 0, float(n), chunk) for n, chunk in enumerate(chunks))
        assert writer.waiting and writer.lost_total == 0
        # Past the backlog, bytes are lost and said so, in order, once there is room.
        extra = [b"z" * 1_000_000] * 3
        handed = [writer.data(1, 0, 99.0, chunk) for chunk in extra]
        assert handed.count(False) >= 1 and writer.lost_total == 1_000_000 * handed.count(False)
        writer.event(Kind.CLOSED, 1, 0, 100.0, b"closed")
        records = _read_everything(read_fd, writer, RecordReader())
    finally:
        os.close(read_fd)
        os.close(write_fd)
    data = [r.data for r in records if r.kind is Kind.DATA]
    assert data[:30] == chunks
    lost = [r for r in records if r.kind is Kind.LOST]
    assert sum(r.lost for r in lost) == writer.lost_total
    assert records[0].kind is Kind.OPENED and records[-1].kind is Kind.CLOSED
    assert records[-2].kind is Kind.LOST  # said before the close that follows it
    assert writer.waiting_bytes == 0


def test_a_connections_losses_go_before_its_next_record_and_no_others() -> None:
    """Losses are kept by connection: a connection's next record brings its own (both
    directions), another's stay until theirs, and the session's end brings every one."""
    read_fd, write_fd = os.pipe()
    try:
        writer = HandoffWriter(write_fd, backlog=0)
        writer.lose(1, 0, 1.0, 10)
        writer.lose(2, 0, 2.0, 20)
        writer.lose(1, 1, 3.0, 30)
        writer.lose(1, 0, 4.0, 5)  # counted with the first, from its time
        writer.event(Kind.EVENT, 1, 0, 5.0, b"one")
        writer.event(Kind.SESSION_END, 0, 0, 6.0, b"end")
        records = _read_everything(read_fd, writer, RecordReader())
    finally:
        os.close(read_fd)
        os.close(write_fd)
    seen = [(r.kind, r.conn, r.direction, r.lost, r.t) for r in records]
    assert seen == [
        (Kind.LOST, 1, 0, 15, 1.0),
        (Kind.LOST, 1, 1, 30, 3.0),
        (Kind.EVENT, 1, 0, 0, 5.0),
        (Kind.LOST, 2, 0, 20, 2.0),
        (Kind.SESSION_END, 0, 0, 0, 6.0),
    ]
