"""Driving an `ObserverLink` by hand in the link's tests: a real pipe whose reading end the
test holds, a clock the test sets, and the records the link wrote so far."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from golem_proxy.live.handoff import Record
from golem_proxy.live.handoff_reader import RecordReader
from golem_proxy.live.observer_link import ObserverLink


class Clock:
    """A clock that stands where the test puts it (``now``)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@contextmanager
def hand_link(**limits: float) -> Iterator[tuple[ObserverLink, Clock, int]]:
    """A link writing to a pipe, its clock and the pipe's (non-blocking) reading end; both ends
    are closed on the way out."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    clock = Clock()
    try:
        yield ObserverLink(write_fd, clock, **limits), clock, read_fd  # type: ignore[arg-type]
    finally:
        os.close(read_fd)
        os.close(write_fd)


def read_records(link: ObserverLink, read_fd: int, reader: RecordReader) -> list[Record]:
    """Read the pipe, letting the link's writer refill it, until nothing waits any more."""
    found: list[Record] = []
    while True:
        try:
            reader.receive_data(os.read(read_fd, 1 << 20))
        except BlockingIOError:
            if not link.writer.waiting:
                return found
            link.writer.flush()
        while (record := reader.next_record()) is not None:
            found.append(record)
