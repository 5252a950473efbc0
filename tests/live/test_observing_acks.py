"""The observing process acknowledges an offset only once every line for what came before it
is written to the kernel, and no later: bytes that complete no frame add no line, so their
acknowledgement needs no write (and no round trip through the recorder's thread, which held
the relay ~256 times per 16 MiB answer)."""

from __future__ import annotations

import fcntl
import io
import os
import pickle
import socket
import threading
import time
from collections.abc import Callable

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionOpened, Event
from golem_proxy.live.acknowledger import (
    ACK_AT_ONCE,
    ACK_AT_ONCE_MAX,
    RATE_SLOWED,
    RATE_WINDOW,
    Acknowledger,
    ack_at_once,
)
from golem_proxy.live.handoff import HandoffWriter, Kind
from golem_proxy.live.handoff_source import HandoffSource
from golem_proxy.live.hub import EventHub
from golem_proxy.live.observer_launch import ACK, PIPE_SIZE
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.recorder import INLINE_WRITE, Recorder
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo

HEADER = Header.new("golem", [RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876")])


class CountingStream(io.BytesIO):
    """A disk that counts the writes and flushes reaching it; a write may be held until
    `gate` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.flushes = 0
        self.writing = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def writelines(self, lines: object) -> None:
        self.writing.set()
        self.gate.wait()
        self.writes += 1
        super().writelines(lines)  # type: ignore[arg-type]

    def flush(self) -> None:
        self.flushes += 1
        super().flush()

    def close(self) -> None:  # keep the content readable after close
        pass


def opened(conn: int) -> Event:
    return ConnectionOpened(
        conn=conn, route="main", client="127.0.0.1:50000", upstream="127.0.0.1:9876", t=0.0
    )


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_with_nothing_recorded_since_the_last_write_the_call_is_at_once_without_a_write() -> None:
    stream = CountingStream()
    recorder = Recorder(RecordingWriter(stream, HEADER))
    recorder(opened(1))
    called: list[int] = []
    recorder.after_written(lambda: called.append(stream.getvalue().count(b"\n")))
    wait_until(lambda: bool(called), "the line to be written")
    assert called == [2]  # the header and the event were in the file when it was called
    touched = stream.writes, stream.flushes
    caller = threading.get_ident()
    threads: list[int] = []
    recorder.after_written(lambda: threads.append(threading.get_ident()))
    assert threads == [caller]  # at once, on the caller's thread
    assert (stream.writes, stream.flushes) == touched  # and nothing was written for it
    recorder.close()


def test_a_few_lines_are_written_on_the_callers_thread_without_waking_the_writing_one() -> None:
    stream = CountingStream()
    recorder = Recorder(RecordingWriter(stream, HEADER))
    recorder(opened(1))
    recorder(opened(2))
    writers: list[int] = []
    stream.writelines = lambda lines: (  # type: ignore[method-assign]
        writers.append(threading.get_ident()),
        io.BytesIO.writelines(stream, lines),  # type: ignore[arg-type]
    )
    called: list[int] = []
    recorder.after_written(lambda: called.append(stream.getvalue().count(b"\n")))
    assert called == [3]  # at once: the header and both lines were in the file
    assert writers == [threading.get_ident()]  # written here, in one call
    recorder.close()


def test_a_large_batch_is_left_to_the_writing_thread() -> None:
    stream = CountingStream()
    recorder = Recorder(RecordingWriter(stream, HEADER))
    route = "m" * (INLINE_WRITE + 1)  # one line longer than is written inline
    recorder(
        ConnectionOpened(
            conn=1, route=route, client="127.0.0.1:50000", upstream="127.0.0.1:9876", t=0.0
        )
    )
    caller = threading.get_ident()
    threads: list[int] = []
    recorder.after_written(lambda: threads.append(threading.get_ident()))
    wait_until(lambda: bool(threads), "the line to be written")
    assert threads != [caller]
    assert route.encode() in stream.getvalue()
    recorder.close()


def test_a_line_being_written_is_waited_for_even_though_nothing_is_queued() -> None:
    stream = CountingStream()
    recorder = Recorder(RecordingWriter(stream, HEADER))
    stream.gate.clear()
    stream.writing.clear()
    recorder(opened(1))
    recorder.flush()
    wait_until(stream.writing.is_set, "the writing thread to take the line")
    called = threading.Event()
    recorder.after_written(called.set)  # the queue is empty, the line not written yet
    assert not called.wait(0.05)
    stream.gate.set()
    assert called.wait(10)
    assert stream.getvalue().count(b"\n") == 2
    recorder.close()


@pytest.mark.trio
async def test_the_acknowledgement_of_a_partial_frame_costs_no_write() -> None:
    stream = CountingStream()
    recorder = Recorder(RecordingWriter(stream, HEADER))
    hub = EventHub()
    hub.attach_sink(recorder)
    acknowledged: list[int] = []
    read_fd, write_fd = os.pipe()
    writer = HandoffWriter(write_fd)
    source = HandoffSource(
        hub, read_fd, [], GOLEM, ProxyOptions(), acknowledged.append, lambda: recorder
    )

    async def acknowledged_up_to(offset: int) -> None:
        with trio.fail_after(10):
            while not acknowledged or acknowledged[-1] < offset:
                await trio.sleep(0.005)

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(source.serve)
            writer.event(Kind.OPENED, 1, 0, 0.0, _pickled(opened(1)))
            await acknowledged_up_to(writer.handed)
            assert stream.writes >= 1  # the connection's line was written before that
            touched = stream.writes, stream.flushes
            # The first bytes of a 2 MiB frame: decoded (buffered), nothing to record.
            frame = GOLEM.encode({"id": 1, "result": "x" * (2 * 1024 * 1024)})
            assert writer.data(1, 1, 0.1, frame[:20])
            await acknowledged_up_to(writer.handed)
            assert (stream.writes, stream.flushes) == touched  # no write, not even a flush
            # Its next 32 records of 64 KiB, read a pipe's 1 MiB at a time (as the observing
            # process's pipe is sized): one acknowledgement per 256 KiB and per read, not one
            # per record, and the last offset is acknowledged.
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)  # type: ignore[attr-defined]
            before = len(acknowledged)
            writer.backlog = len(frame)
            for start in range(20, 20 + 32 * 65536, 65536):
                assert writer.data(1, 1, 0.2, frame[start : start + 65536])
            while not writer.flush():
                await trio.lowlevel.wait_writable(write_fd)
            await acknowledged_up_to(writer.handed)
            assert len(acknowledged) - before <= 16
            assert (stream.writes, stream.flushes) == touched
            os.close(write_fd)
            write_fd = -1
    finally:
        if write_fd >= 0:
            os.close(write_fd)
        os.close(read_fd)
        recorder.close()


def _pickled(event: Event) -> bytes:
    return pickle.dumps(event, pickle.HIGHEST_PROTOCOL)


def test_each_acknowledgement_carries_the_bytes_a_second_of_this_process_s_time() -> None:
    """Measured over at least `RATE_WINDOW` of the process's time, so that a batch read at
    once (cheap) and the frame it completes (dear) count together."""
    cpu = [0.0]
    ours, theirs = socket.socketpair()
    with ours, theirs:
        acknowledge = Acknowledger(ours, cpu=lambda: cpu[0])
        cpu[0] = RATE_WINDOW / 2
        acknowledge(1_000_000)  # half a window: no rate yet
        cpu[0] = RATE_WINDOW * 2
        acknowledge(4_000_000)  # 4 MB in two windows: 40 MB/s
        acknowledge(3_000_000)  # older than what was sent: nothing
        cpu[0] = RATE_WINDOW * 2.5
        acknowledge(5_000_000)  # a short window: the last rate stands
        got = b""
        while len(got) < 3 * ACK.size:
            got += theirs.recv(4096)
    sent = [ACK.unpack_from(got, at) for at in range(0, len(got), ACK.size)]
    assert sent == [(1_000_000, 0), (4_000_000, 40_000_000), (5_000_000, 40_000_000)]


def test_a_window_under_way_that_is_slower_lowers_the_rate_at_once() -> None:
    """Tiny frames after fast blobs: the rate falls after `RATE_SLOWED` of the slower work,
    not a whole window later; a faster window under way does not raise it early."""
    cpu = [0.0]
    ours, theirs = socket.socketpair()
    with ours, theirs:
        acknowledge = Acknowledger(ours, cpu=lambda: cpu[0])
        cpu[0] = RATE_WINDOW
        acknowledge(10_000_000)  # 200 MB/s
        cpu[0] = RATE_WINDOW + RATE_SLOWED / 2
        acknowledge(10_001_000)  # too short to say
        cpu[0] = RATE_WINDOW + RATE_SLOWED * 2
        acknowledge(10_002_000)  # 2 kB in 20 ms: 100 kB/s
        cpu[0] = RATE_WINDOW * 2
        acknowledge(20_000_000)  # the window ends: its own rate
        cpu[0] = RATE_WINDOW * 2 + RATE_SLOWED * 2
        acknowledge(40_000_000)  # faster under way: the last rate stands
        got = b""
        while len(got) < 5 * ACK.size:
            got += theirs.recv(4096)
    rates = [ACK.unpack_from(got, at)[1] for at in range(0, len(got), ACK.size)]
    assert rates[:2] == [200_000_000] * 2 and rates[3:] == [200_000_000] * 2
    assert abs(rates[2] - 100_000) <= 1


def test_acknowledgements_come_further_apart_at_the_rate_of_blobs() -> None:
    """An eighth of the forwarding side's byte limit at the rate last said: tiny frames keep
    the smallest step, 16 MiB answers are acknowledged every 2 MiB rather than every 256 KiB."""
    assert ack_at_once(0) == ACK_AT_ONCE
    assert ack_at_once(2_000_000) == ACK_AT_ONCE  # tiny frames
    assert ack_at_once(300_000_000) == ACK_AT_ONCE_MAX  # viewport captures' blobs
    assert ACK_AT_ONCE < ack_at_once(50_000_000) < ACK_AT_ONCE_MAX
    cpu = [0.0]
    ours, theirs = socket.socketpair()
    with ours, theirs:
        acknowledge = Acknowledger(ours, cpu=lambda: cpu[0])
        assert acknowledge.at_once() == ACK_AT_ONCE
        cpu[0] = RATE_WINDOW
        acknowledge(15_000_000)  # 300 MB/s
        assert acknowledge.at_once() == ACK_AT_ONCE_MAX
        cpu[0] = RATE_WINDOW + RATE_SLOWED * 2
        acknowledge(15_002_000)  # tiny frames under way, 100 kB/s: the rate sent falls
        assert acknowledge.at_once() == ACK_AT_ONCE
