"""Reading the handoff pipe: every record back whole and in order whatever the pipe delivers
at a time, and a large frame's body read record by record, its data whole in a buffer of its
own instead of pieces of reads joined."""

from __future__ import annotations

import fcntl
import os
import random
import select
import threading
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from golem_proxy.live.handoff import HEADER, Kind, Record, encode
from golem_proxy.live.handoff_reader import READ_WHOLE_FROM, PipeRecords, RecordReader

MIB = 1024 * 1024


def body_records(rng: random.Random, sizes: Sequence[int]) -> list[Record]:
    """Records as a 16 MiB answer's come: a request, the body's first chunk the copy way,
    then pieces of up to 1 MiB, with the odd small record and a gap among them."""
    records = []
    for n, size in enumerate(sizes):
        if size < 0:
            records.append(Record(Kind.LOST, 1, 1, float(n), lost=-size))
        else:
            records.append(Record(Kind.DATA, 1, n % 5 == 0, float(n), rng.randbytes(size)))
    return records


SIZES = [66, 65536, MIB, MIB, 983_093, 130_966, MIB, 200, MIB, -4096, MIB, 65_483, MIB, 848, 0]


def joined(records: Sequence[Record]) -> int:
    """Records of `READ_WHOLE_FROM` or more whose data was joined from pieces of reads
    (bytes), where reading whole or a view of one read would have given a view."""
    return sum(1 for r in records if len(r.data) >= READ_WHOLE_FROM and type(r.data) is bytes)


def runs_of_large(records: Sequence[Record]) -> int:
    """Runs of consecutive records of `READ_WHOLE_FROM` or more: the first of each may come
    in a read of everything there is, and straddle it."""
    runs, before = 0, False
    for record in records:
        large = record.kind is Kind.DATA and len(record.data) >= READ_WHOLE_FROM
        runs += large and not before
        before = large
    return runs


def test_a_large_body_through_a_real_pipe_comes_back_whole_and_unjoined() -> None:
    """A writer in another thread writes the records in pieces of every size through a pipe
    of the handoff's size; `PipeRecords` reads until the end. Every record comes back, with
    the reader's offset after each where the stream stood; of the body's records only the
    first of each run of large ones may have been joined (read a megabyte at a time, most
    of them were)."""
    rng = random.Random(25)
    records = body_records(rng, SIZES * 3)
    stream = b"".join(encode(r) for r in records)
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, MIB)

    def write() -> None:
        at = 0
        while at < len(stream):
            at += os.write(write_fd, stream[at : at + rng.choice((25, 4096, 300_000, MIB))])
        os.close(write_fd)

    writer = threading.Thread(target=write)
    writer.start()
    reader = RecordReader()
    pipe = PipeRecords(read_fd, reader)
    os.set_blocking(read_fd, False)
    got, offsets = [], []
    try:
        for _ in range(100_000):  # bounded: a stuck reader fails, it does not hang
            try:
                size, _ = pipe.read()
            except BlockingIOError:
                select.select([read_fd], [], [], 5.0)
                continue
            if not size:
                break
            while (record := reader.next_record()) is not None:
                got.append(record)
                offsets.append(reader.offset)
    finally:
        writer.join(timeout=30)
        os.close(read_fd)
    assert [bytes(r.data) for r in got] == [r.data for r in records]
    assert got == records
    assert offsets[-1] == len(stream)
    assert joined(got) <= runs_of_large(records) < len([r for r in records if len(r.data) > 1])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 300), st.integers(READ_WHOLE_FROM - 2, 3 * READ_WHOLE_FROM)),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.integers(1, 400_000), min_size=1, max_size=30),
)
def test_reads_sized_by_the_reader_give_every_record_at_any_delivery(
    sizes: list[int], deliveries: list[int]
) -> None:
    """The reader's own advice (`read_size`, `data_ahead`) followed against a pipe that
    delivers at most so much at a time: every record comes back, and a large record after a
    large one is always read whole."""
    rng = random.Random(len(sizes))
    records = body_records(rng, sizes)
    stream = b"".join(encode(r) for r in records)
    reader, got, at, turn = RecordReader(), [], 0, 0
    while at < len(stream):
        ahead = reader.data_ahead()
        if ahead:
            # `PipeRecords` fills a buffer of this size over as many reads as it takes.
            chunk: bytes | memoryview = memoryview(bytearray(stream[at : at + ahead]))
        else:
            most = deliveries[turn % len(deliveries)]
            chunk = stream[at : at + min(reader.read_size(1 << 20), most)]
        turn += 1
        at += len(chunk)
        reader.receive_data(chunk)
        while (record := reader.next_record()) is not None:
            got.append(record)
    assert [bytes(r.data) for r in got] == [r.data for r in records]
    assert got == records and reader.offset == len(stream)
    assert joined(got) <= runs_of_large(records)


def test_a_pipe_that_ends_inside_a_record_read_whole_ends_without_it() -> None:
    """The forwarding process killed in the middle of a large record: the read says the pipe
    ended, and the part of the record is not a record."""
    first, second = (Record(Kind.DATA, 1, 1, 0.0, bytes(READ_WHOLE_FROM)) for _ in range(2))
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, MIB)
    os.write(write_fd, encode(first) + encode(second)[:-100])
    os.close(write_fd)
    reader = RecordReader()
    pipe = PipeRecords(read_fd, reader)
    got, ended = [], False
    try:
        for _ in range(20):
            if not pipe.read()[0]:
                ended = True
                break
            while (record := reader.next_record()) is not None:
                got.append(record)
    finally:
        os.close(read_fd)
    assert ended and got == [first]
    # At the records' end for good (a killed session's spool): the part that came is the
    # record's data as far as it goes, a true prefix of the stream.
    pipe.ended()
    assert reader.next_record() is None
    torn = reader.torn()
    assert torn is not None and torn.kind is Kind.DATA and (torn.conn, torn.direction) == (1, 1)
    assert bytes(torn.data) == bytes(second.data)[:-100]
    assert reader.waiting == 0 and reader.torn() is None


def test_only_a_data_record_torn_after_its_header_is_fed() -> None:
    event = encode(Record(Kind.EVENT, 1, 0, 0.0, b"x" * 50))
    data = encode(Record(Kind.DATA, 1, 0, 0.0, b"y" * 50))
    for cut, fed in ((event[:-10], None), (data[: HEADER.size - 1], None), (data[:-10], 40)):
        reader = RecordReader()
        reader.receive_data(cut)
        torn = reader.torn()
        assert (None if torn is None else len(torn.data)) == fed


def test_a_small_record_after_a_large_body_is_not_read_as_part_of_it() -> None:
    """After a large record the next header is read alone; a small record's, coming later,
    is not said to be a body's (the reading loop gathers a quiet pipe's records, not a
    body's)."""
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, MIB)
    os.set_blocking(read_fd, False)
    reader = RecordReader()
    pipe = PipeRecords(read_fd, reader)
    large = Record(Kind.DATA, 1, 1, 0.0, bytes(READ_WHOLE_FROM))
    small = Record(Kind.DATA, 1, 1, 1.0, b"x" * 200)
    try:
        os.write(write_fd, encode(large))
        assert pipe.read() == (HEADER.size + READ_WHOLE_FROM, False)  # as much as there was
        assert reader.next_record() == large
        os.write(write_fd, encode(small))
        header, bulk = pipe.read()
        assert (header, bulk) == (HEADER.size, False)
        assert pipe.read() == (200, False) and reader.next_record() == small
    finally:
        os.close(read_fd)
        os.close(write_fd)
