"""The pipe backlog (pipe_backlog.py) and the handoff writer's records from pipes: bytes that
wait for room in the handoff pipe stay in pipes, in order with the records that wait in
memory, and come out whole."""

from __future__ import annotations

import fcntl
import os
import random
from collections.abc import Iterator

import pytest

from golem_proxy.live import kernel_pipes
from golem_proxy.live.handoff import HandoffWriter, Kind, Record
from golem_proxy.live.handoff_reader import RecordReader
from golem_proxy.live.pipe_backlog import PipeBacklog

pytestmark = pytest.mark.skipif(not kernel_pipes.available(), reason="splice is Linux's")


@pytest.fixture
def source() -> Iterator[tuple[int, int]]:
    """A pipe to fill with the bytes to hand on: (read end, write end)."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK)
    kernel_pipes.resize(write_fd, 1 << 20)
    yield read_fd, write_fd
    os.close(read_fd)
    os.close(write_fd)


def _drain_into(backlog: PipeBacklog, size: int) -> bytes:
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK)
    try:
        kernel_pipes.resize(write_fd, 1 << 20)
        given = backlog.give(write_fd, size)
        return kernel_pipes.drain(read_fd, given)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_the_backlog_is_one_stream_in_order_across_its_pipes(source: tuple[int, int]) -> None:
    backlog = PipeBacklog(pipe_size=4096, most=4)
    rng = random.Random(1)
    sent = b""
    got = b""
    try:
        for _ in range(40):
            piece = rng.randbytes(rng.randint(1, 6000))
            os.write(source[1], piece)
            taken = backlog.take(source[0], len(piece))
            sent += piece[:taken]
            kernel_pipes.drain(source[0], len(piece) - taken)  # past its pipes: not taken
            got += _drain_into(backlog, rng.randint(0, 5000))
        got += _drain_into(backlog, backlog.held)
    finally:
        backlog.clear()
    assert got == sent and backlog.held == 0
    assert len(sent) > 16 * 1024  # it took more than its pipes hold at once, over time


def test_past_its_pipes_the_backlog_takes_no_more(source: tuple[int, int]) -> None:
    backlog = PipeBacklog(pipe_size=4096, most=2)
    os.write(source[1], b"x" * 50_000)
    try:
        taken = backlog.take(source[0], 50_000)
        assert 0 < taken < 50_000 and backlog.held == taken
        assert kernel_pipes.drain(source[0], 50_000 - taken) == b"x" * (50_000 - taken)
    finally:
        backlog.clear()
    assert backlog.held == 0


def _records(read_fd: int, writer: HandoffWriter) -> list[Record]:
    reader = RecordReader()
    found: list[Record] = []
    while True:
        try:
            reader.receive_data(os.read(read_fd, 1 << 20))
        except BlockingIOError:
            if not writer.waiting:
                break
            writer.flush()
        while (record := reader.next_record()) is not None:
            found.append(record)
    return found


def test_records_from_pipes_wait_in_pipes_in_order_with_the_others(
    source: tuple[int, int],
) -> None:
    """A handoff pipe of one page, records from pipes and from memory mixed: what waits for
    room from a pipe waits in the pipe backlog (not in memory), and the reader gets every
    record whole, in order."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK)
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 4096)
    rng = random.Random(2)
    writer = HandoffWriter(write_fd, backlog=64 << 20)
    expected: list[tuple[Kind, bytes]] = []
    try:
        for n in range(30):
            body = rng.randbytes(rng.randint(1, 200_000))
            if n % 3:
                os.write(source[1], body)
                assert writer.data_from_pipe(1, 1, float(n), source[0], len(body))
            else:
                assert writer.data(1, 0, float(n), body)
            expected.append((Kind.DATA, body))
            if n == 10:
                writer.event(Kind.END, 1, 0, float(n))
                expected.append((Kind.END, b""))
        assert writer.piped_bytes > 1 << 20  # waiting in pipes, not copied into memory
        records = _records(read_fd, writer)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert [(r.kind, bytes(r.data)) for r in records] == expected
    assert writer.piped_bytes == 0 and writer.waiting_bytes == 0


def test_a_reader_gone_drops_what_waits_in_pipes(source: tuple[int, int]) -> None:
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK)
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 4096)
    writer = HandoffWriter(write_fd, backlog=64 << 20)
    try:
        os.write(source[1], b"y" * 100_000)
        assert writer.data_from_pipe(1, 1, 0.0, source[0], 100_000)
        assert writer.piped_bytes > 0
        os.close(read_fd)
        assert not writer.flush() and writer.gone
        assert writer.piped_bytes == 0 and not writer.waiting
        os.write(source[1], b"z" * 10)
        assert not writer.data_from_pipe(1, 1, 1.0, source[0], 10)  # counted as lost
        assert writer.lost_total == 10
        with pytest.raises(BlockingIOError):  # and taken out of the source all the same
            os.read(source[0], 1)
    finally:
        os.close(write_fd)


def test_abandoning_the_writer_closes_the_backlogs_pipes(source: tuple[int, int]) -> None:
    """Observation stopped (`ObserverLink.stop`) with bytes waiting in pipes: the pipes are
    closed, not left open for the session's life."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK)
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 4096)
    writer = HandoffWriter(write_fd, backlog=64 << 20)
    try:
        before = len(os.listdir("/proc/self/fd"))
        for n in range(4):
            os.write(source[1], b"w" * 300_000)
            assert writer.data_from_pipe(1, 1, float(n), source[0], 300_000)
        assert writer.piped_bytes > 0 and len(os.listdir("/proc/self/fd")) > before
        writer.abandon()
        assert writer.piped_bytes == 0 and not writer.waiting
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        os.close(read_fd)
        os.close(write_fd)
