"""The handoff to an observing process: records through a real pipe, read at any chunking; a
full pipe costs counted bytes (a LOST record before the next data), never a wait or an event;
a reader that is gone costs nothing but the handing on."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_proxy.live.handoff import (
    HEADER,
    HandoffError,
    HandoffWriter,
    Kind,
    Record,
    encode,
)
from golem_proxy.live.handoff_reader import VIEW_FROM, RecordReader
from golem_proxy.live.unrecorded_values import unrecorded_records


@contextmanager
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    try:
        yield read_fd, write_fd
    finally:
        for fd in (read_fd, write_fd):
            with suppress(OSError):
                os.close(fd)


def read_all(fd: int, reader: RecordReader) -> list[Record]:
    """Every record the pipe holds now (the read end made non-blocking)."""
    os.set_blocking(fd, False)
    records = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        reader.receive_data(chunk)
        while (record := reader.next_record()) is not None:
            records.append(record)
    return records


RECORDS = [
    Record(Kind.OPENED, 7, 0, 1.5, b"main 127.0.0.1:5000"),
    Record(Kind.DATA, 7, 0, 1.6, b"\x00\x00\x00\x02{}"),
    Record(Kind.DATA, 7, 1, 1.7, b""),
    Record(Kind.LOST, 7, 1, 1.8, lost=123_456),
    Record(Kind.END, 7, 0, 1.9),
    Record(Kind.ARRIVED, 7, 0, 1.95),
    Record(Kind.UNRECORDED, 7, 1, 1.97, unrecorded_records(["ISSUED-token"], 1 << 20)[0]),
    Record(Kind.CLOSED, 7, 0, 2.0, "reset by the client ✓".encode()),
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=1, max_value=40), st.booleans()), max_size=60))
def test_records_come_back_whole_at_any_chunking(cuts: list[tuple[int, bool]]) -> None:
    """Whatever the chunks, and whether the records are taken after each or after several,
    with the offset after each record where the writer's count stood."""
    encoded = [encode(r) for r in RECORDS]
    ends = [sum(map(len, encoded[: n + 1])) for n in range(len(encoded))]
    stream = b"".join(encoded)
    reader, got, offsets, at = RecordReader(), [], [], 0
    for size, take in [*cuts, (len(stream), True)]:
        reader.receive_data(stream[at : at + size])
        at += size
        while take and (record := reader.next_record()) is not None:
            got.append(record)
            offsets.append(reader.offset)
    assert got == RECORDS
    assert offsets == ends


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=90_000), max_size=20))
def test_large_records_come_back_whole_as_views_at_any_chunking(cuts: list[int]) -> None:
    """Data of `VIEW_FROM` bytes or more comes back as a view of what was read when it lies
    in one chunk, and joined when it spans chunks: the same bytes either way."""
    rng = random.Random(len(cuts))
    records = [
        Record(Kind.DATA, 3, n % 2, float(n), rng.randbytes(size))
        for n, size in enumerate([VIEW_FROM, 70_000, 5, VIEW_FROM - 1, 200_000, 0])
    ]
    stream = b"".join(encode(r) for r in records)
    reader, got, at = RecordReader(), [], 0
    for size in [*cuts, len(stream)]:
        reader.receive_data(stream[at : at + size])
        at += size
        while (record := reader.next_record()) is not None:
            got.append(record)
    assert [bytes(r.data) for r in got] == [r.data for r in records]
    assert got == records and reader.offset == len(stream)
    if not cuts:  # one chunk: every large record is a view, every small one a copy
        assert [isinstance(r.data, memoryview) for r in got] == [
            len(r.data) >= VIEW_FROM for r in records
        ]


def test_a_full_pipe_counts_the_bytes_and_says_so_before_what_follows() -> None:
    rng = random.Random(25)
    with pipe() as (read_fd, write_fd):
        writer = HandoffWriter(write_fd)
        writer.event(Kind.OPENED, 1, 0, 0.0, "main")
        sent = {0: 0, 1: 0}
        handed = 0
        for n in range(400):  # far more than a pipe holds: most are refused, none waits
            chunk = bytes([n % 256]) * rng.randrange(1, 20_000)
            direction = n % 2
            sent[direction] += len(chunk)
            handed += writer.data(1, direction, float(n), chunk)
        assert 0 < handed < 400 and writer.lost_total > 0
        writer.event(Kind.END, 1, 0, 401.0)  # waits for room: never dropped
        reader = RecordReader()
        records = read_all(read_fd, reader)
        writer.data(1, 1, 402.0, b"last")  # room again: the loss is said first
        sent[1] += 4
        writer.event(Kind.CLOSED, 1, 0, 403.0, "clean")
        records += read_all(read_fd, reader)
    assert records[0].kind is Kind.OPENED and records[-1].kind is Kind.CLOSED
    kinds = [r.kind for r in records]
    assert kinds.count(Kind.END) == 1 and Kind.LOST in kinds
    for direction in (0, 1):
        mine = [r for r in records if r.direction == direction and r.kind in (Kind.DATA, Kind.LOST)]
        # Every forwarded byte is either handed on or counted as lost: nothing silently dropped.
        assert sum(len(r.data) + r.lost for r in mine) == sent[direction]
    # The losses are said before the event that follows them, and data after it goes on.
    end = kinds.index(Kind.END)
    assert {r.direction for r in records[:end] if r.kind is Kind.LOST} == {0, 1}
    assert Kind.LOST not in kinds[end:]
    assert records[-2] == Record(Kind.DATA, 1, 1, 402.0, b"last")


def test_a_reader_that_is_gone_costs_the_handing_on_only() -> None:
    with pipe() as (read_fd, write_fd):
        writer = HandoffWriter(write_fd)
        os.close(read_fd)
        assert not writer.data(1, 0, 0.0, b"x" * 100)
        writer.event(Kind.CLOSED, 1, 0, 1.0, "clean")
        assert writer.gone and writer.lost_total == 100
        assert not writer.data(1, 0, 2.0, b"y")


def test_a_reader_gone_while_records_wait_drops_them_without_failing() -> None:
    """Records wait for room (the pipe is full) when the observing process dies: the next
    event finds the pipe closed, and what waited is dropped, not written nor raised over."""
    with pipe() as (read_fd, write_fd):
        writer = HandoffWriter(write_fd, backlog=1 << 24)
        while writer.data(1, 0, 0.0, b"x" * 65536) and not writer.waiting:
            pass  # until the pipe is full and a chunk waits
        assert writer.waiting
        os.close(read_fd)
        writer.event(Kind.END, 1, 0, 1.0)  # flushes first: EPIPE on what waited
        assert writer.gone and not writer.waiting and writer.waiting_bytes == 0
        assert not writer.flush()


@pytest.mark.parametrize(
    "header, why",
    [
        (HEADER.pack(max(Kind) + 1, 1, 0, 0.0, 0), f"unknown record kind {max(Kind) + 1}"),
        (HEADER.pack(Kind.DATA, 1, 2, 0.0, 0), "unknown direction 2"),
        (HEADER.pack(Kind.DATA, 1, 0, 0.0, 2**32 - 1), "a record of 4294967295 bytes"),
    ],
)
def test_a_stream_that_is_not_records_is_an_error_not_an_allocation(
    header: bytes, why: str
) -> None:
    reader = RecordReader()
    reader.receive_data(header)
    with pytest.raises(HandoffError, match=why):
        reader.next_record()


def test_events_are_not_data() -> None:
    with pipe() as (_, write_fd), pytest.raises(ValueError):
        HandoffWriter(write_fd).event(Kind.DATA, 1, 0, 0.0)
