"""The recorder: writes the event stream to a recording file, flushed at least every 25 ms.

It is a synchronous sink of the event hub rather than a queued subscriber: each event is
encoded as the observer publishes it, so the recording never trails the observer. The file
writes themselves happen on a thread of their own: writing a 16 MiB frame to disk takes tens of
milliseconds, during which the relay (on the trio thread) keeps forwarding. When the disk falls
``max_queued`` bytes behind, events are not kept but counted, and the recording says so with a
``gap`` line (`EventsMissed`) before the next event it can hold: nothing waits for the disk. A
disk error stops the recording, never the proxy."""

from __future__ import annotations

import sys
import threading
from typing import Callable, Optional

import trio

from ..events import Event, EventsMissed, FrameSeen
from ..recording.format import RecordingWriter
from ..recording.payload_places import PayloadPlaces, place_key, verbatim_line_start

__all__ = ["FLUSH_INTERVAL", "INLINE_WRITE", "TRAILS_BY", "Recorder"]

FLUSH_INTERVAL = 0.025
TRAILS_BY = 0.1
"""How far the file may trail the wire under steady load, what a ``kill -9`` loses: the
observer's lag (bounded by its ``max_trail``, or with ``--observer child-process`` by the
forwarding side's hold, observer_link.py) plus a flush interval. Measured with
bench/kill9_lag.py (8 clients, 10 kills, load 5 to 7): in one process median 66 ms, worst
100 ms; with the observing process of its own median 14 ms, worst 65 ms."""
WRITE_AT = 1024 * 1024
"""Encoded bytes that wake the writing thread before the next periodic flush."""
INLINE_WRITE = 64 * 1024
"""Encoded bytes `after_written` writes itself, on the caller's thread, rather than waking the
writing thread: a few system calls' worth, cheaper than the wake-up (a lock, and the interpreter
passed between threads, up to its 5 ms switch interval when both are busy), which the
observing process of ``--observer child-process`` paid per batch of records it acknowledged."""
MAX_QUEUED = 64 * 1024 * 1024
"""Encoded bytes the disk may trail by; past this, events are counted as missed (memory stays
bounded when the disk is slower than the traffic, and nothing waits for it)."""


class Recorder:
    """Writes events to a `RecordingWriter`; call it with each event (from one thread).
    Events recorded after `close()` are ignored. ``on_error`` is called once, from whichever
    thread met the error (the writing thread for a disk error)."""

    def __init__(
        self,
        writer: RecordingWriter,
        on_error: Optional[Callable[[str], None]] = None,
        *,
        max_queued: int = MAX_QUEUED,
        places: Optional[PayloadPlaces] = None,
    ) -> None:
        """``places``: where to note the place of each large payload written verbatim (a
        live view reads them back from the file rather than keeping them)."""
        self.writer = writer
        self.error: Optional[Exception] = None
        self.on_error = on_error or (lambda text: print(text, file=sys.stderr))
        if max_queued < 1:
            raise ValueError("max_queued must be at least 1 byte")
        self.max_queued = max_queued
        self._write_at = min(WRITE_AT, max_queued)
        self._pieces: list[bytes] = []
        self._queued = 0
        self.missed = 0
        """Events not recorded because the disk was behind (since the last gap line)."""
        self._last_t = 0.0
        self.total_missed = 0
        self._flush_wanted = False
        self._recorded = 0
        """Batches of lines queued so far (an event, with its gap line if any)."""
        self._written = 0
        """Of those, how many are written to the kernel: all of them when equal."""
        self._after_written: list[Callable[[], None]] = []
        self._writing = False
        """Pieces are being written outside the lock, by the writing thread or by
        `after_written` on the caller's thread: the other waits, so that lines reach the file
        in order."""
        self._closing = False
        self._finished = False
        self.places = places
        self._queued_total = 0
        """Bytes queued since the start: where the next line goes, counted from the first
        byte this recorder writes (`places`)."""
        self._written_total = 0
        self._began_at: Optional[int] = None
        self._position_lost = False
        self._lock = threading.RLock()
        """`_changed`'s lock, taken directly where an event is queued: the condition's own
        ``with`` is two calls more in Python for each event of a burst."""
        self._changed = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._write_loop, name="recorder", daemon=True)
        self._thread.start()

    def __call__(self, event: Event) -> None:
        if self.error is not None or self._closing:
            return
        try:
            pieces = self.writer.encode(event)
        except Exception as exc:  # a bug here must not take the relay down
            self._fail(exc)
            return
        if pieces is None:
            return
        size = sum(map(len, pieces))
        with self._lock:
            if self._finished:
                return  # closed from another thread meanwhile: the file is gone
            self._last_t = event.t
            if self._queued + size > self.max_queued and self._queued:
                self.missed += 1
                self.total_missed += 1
                self._changed.notify_all()
                return
            line_size = size
            if self.missed:
                gap = self.writer.encode(
                    EventsMissed(count=self.missed, t=event.t, consumer="recording")
                )
                self.missed = 0
                if gap is not None:
                    self._pieces.extend(gap)
                    size += sum(len(piece) for piece in gap)
            if self.places is not None:
                line_at = self._queued_total + size - line_size  # after the gap line, if any
                _note_place(self.places, event, pieces, line_at)
                self._queued_total += size
            self._pieces.extend(pieces)
            self._queued += size
            self._recorded += 1
            if self._queued >= self._write_at:
                self._changed.notify_all()

    def after_written(self, call: Callable[[], None]) -> None:
        """Call ``call`` once everything recorded so far has reached the kernel: at once (on
        the caller's thread) when it already has, or when nothing more will be written
        (closed, or the recording failed); after writing it here when it is little and the
        writing thread is idle (`INLINE_WRITE`); else on the writing thread, after the flush
        this asks for now."""
        with self._changed:
            # Nothing recorded since the last write (the bytes only filled a partial frame):
            # no round trip through the writing thread, whose wake-up costs more than the
            # bytes (256 of them per 16 MiB answer, each holding the relay).
            if self._all_written():
                pieces: Optional[list[bytes]] = None
            elif self._writing or self._after_written or self._queued > INLINE_WRITE:
                self._after_written.append(call)
                self._flush_wanted = True  # now: the forwarding side may be waiting for it
                self._changed.notify_all()
                return
            else:
                pieces, recorded = self._take_locked()
        if pieces is not None:
            self._write(pieces)
            with self._changed:
                self._wrote_locked(recorded)
                if self._closing or self._flush_wanted or self._queued >= self._write_at:
                    self._changed.notify_all()  # the writing thread waited for this write
        call()

    @property
    def all_written(self) -> bool:
        """Everything recorded so far has reached the kernel, or nothing more will be written
        (closed, or the recording failed): what `after_written` would call at once."""
        with self._changed:
            return self._all_written()

    def _all_written(self) -> bool:
        return self.error is not None or self._closing or self._written == self._recorded

    def flush(self) -> None:
        """Have everything recorded so far written and flushed (without waiting for it)."""
        with self._changed:
            self._flush_wanted = True
            self._changed.notify_all()

    async def flush_periodically(self) -> None:
        """Flush every ``FLUSH_INTERVAL`` seconds until cancelled."""
        while True:
            await trio.sleep(FLUSH_INTERVAL)
            self.flush()

    @property
    def last_t(self) -> float:
        """The ``t`` of the last event recorded (0 before any)."""
        with self._changed:
            return self._last_t

    def close(self, last: Optional[Event] = None) -> None:
        """Write and flush everything recorded (and a last gap line if events were missed),
        then ``last`` (the session's ``session-end`` line: after every other, never counted
        as missed), then close the file."""
        with self._changed:
            if self.missed and self.error is None and not self._finished:
                gap = self.writer.encode(
                    EventsMissed(count=self.missed, t=self._last_t, consumer="recording")
                )
                self.missed = 0
                self._pieces.extend(gap or [])
            if last is not None and self.error is None and not self._finished:
                self._pieces.extend(self.writer.encode(last) or [])
            self._closing = True
            self._changed.notify_all()
        self._thread.join()
        try:
            self.writer.stream.close()
        except Exception as exc:
            self._fail(exc)

    def _write_loop(self) -> None:
        while True:
            with self._changed:
                while self._writing or not (
                    self._closing or self._flush_wanted or self._queued >= self._write_at
                ):
                    self._changed.wait()
                if self._closing and not self._pieces:
                    self._finished = True  # nothing is appended from now on
                    written, self._after_written = self._after_written, []
                    for call in written:
                        call()
                    return
                pieces, recorded = self._take_locked()
                written, self._after_written = self._after_written, []
                self._flush_wanted = False
                self._changed.notify_all()  # room again for a caller waiting on max_queued
            self._write(pieces)
            with self._changed:
                self._wrote_locked(recorded)
            for call in written:
                call()

    def _take_locked(self) -> tuple[list[bytes], int]:
        """Take what is queued to write it outside the lock (`_writing` until
        `_wrote_locked`); returns it and how many batches it completes."""
        pieces, self._pieces = self._pieces, []
        self._queued = 0
        self._writing = True
        return pieces, self._recorded

    def _wrote_locked(self, recorded: int) -> None:
        self._written = recorded
        self._writing = False

    def _write(self, pieces: list[bytes]) -> None:
        # One writer at a time (`_writing`): the writing thread, or `after_written`'s caller.
        if self.error is None:
            try:
                self._check_position()
                self.writer.write_pieces(pieces)
            except Exception as exc:
                self._fail(exc)
                return
            if self.places is not None and not self._position_lost:
                self._written_total += sum(len(piece) for piece in pieces)
                self.places.wrote(self._written_total)

    def _check_position(self) -> None:
        """Where the file's offset is before a write, for the places: learnt at the first
        (a restarted observing process begins after the line the forwarding process wrote
        once this recorder was made), and checked at each later one."""
        places = self.places
        if places is None or self._position_lost:
            return
        position = self.writer.position()
        expected = None if self._began_at is None else self._began_at + self._written_total
        if self._began_at is None and position is not None:
            self._began_at = position
            places.began_at(position)
        elif position is None or position != expected:
            self._position_lost = True
            places.failed("its offset moved under the recorder")

    def _fail(self, exc: Exception) -> None:
        with self._changed:
            if self.error is not None:
                return
            self.error = exc
            self._changed.notify_all()
        if self.places is not None:
            self.places.failed(str(exc))
        self.on_error(f"golem-proxy: recording stopped, the proxy goes on: {exc}")


def _note_place(places: PayloadPlaces, event: Event, pieces: list[bytes], line_at: int) -> None:
    """Note where a large frame's payload will be, when its line (``pieces``, at ``line_at``
    counted from the recorder's first byte) holds it verbatim."""
    if not isinstance(event, FrameSeen) or len(event.payload) < places.smallest:
        return
    start = verbatim_line_start(event.payload, pieces)
    if start is not None:
        places.note(place_key(event), line_at + len(start), len(event.payload), start)
