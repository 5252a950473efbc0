"""The handoff from an event producer (the trio proxy in its thread, a file reader) to the UI.

`EventBuffer` is the only object both sides touch. Producers `push_many()` from any thread and
never wait: events go into a deque under a short lock, and when the bound is reached they are
dropped and counted instead, so the relay never slows down for the UI. The UI is nudged with
at most one "events ready" call outstanding; after draining it waits a refresh interval before
re-arming, so a flood becomes one batch per refresh instead of one message per event.

`hub_sink()` is the live session's side: the hub hands it every event as it is published,
and it queues them here, so the UI has one queue and one loss counter. `TrioThreadSource` runs
a trio main function in a thread as an `EventSource`, so ``golem-proxy proxy --tui`` can run
the proxy and the app in one process.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import Callable, Optional, Protocol

import trio

from golem_core.profiles import Profile

from ..events import Event

__all__ = [
    "DEFAULT_LIVE_LIMIT",
    "Batch",
    "EventBuffer",
    "EventSource",
    "Progress",
    "SourceInfo",
    "TrioThreadSource",
    "hub_sink",
]

DEFAULT_LIVE_LIMIT = 200_000
"""Events a live UI may have queued before further ones are dropped (and counted)."""


@dataclass(frozen=True)
class SourceInfo:
    """What a source learns once it runs: a live proxy's bound addresses (port 0 becomes a
    real port) and what the client needs to reach it."""

    description: str
    """Replaces the source's description in the status bar."""
    notes: tuple[str, ...] = ()
    """Lines shown above the table (routes, the client environment)."""


@dataclass(frozen=True)
class Progress:
    """How far a source has read: ``done`` of ``total`` bytes of its file."""

    done: int
    total: int

    @property
    def complete(self) -> bool:
        return self.done >= self.total

    @property
    def percent(self) -> int:
        """Whole percent read, 100 only when complete (99.9% is not all of it)."""
        if self.complete:
            return 100
        return min(self.done * 100 // max(self.total, 1), 99)


@dataclass(frozen=True)
class Batch:
    """What one drain took: the events in order, events dropped since the last drain, and
    whether the producer has finished (with its last word)."""

    events: list[Event]
    missed: int
    finished: bool
    reason: str
    more: bool
    """Events are still queued (the drain took at most its limit)."""
    failed: bool = False
    """The producer finished because of an error; ``reason`` says which."""
    info: Optional[SourceInfo] = None
    """New information about the source since the last drain."""
    progress: Optional[Progress] = None
    """How far the source had read when it pushed the last of ``events`` (None: it did not
    say since the last drain)."""


class EventBuffer:
    """A thread-safe, bounded, coalescing queue of events from producers to the UI."""

    def __init__(
        self, limit: Optional[int] = DEFAULT_LIVE_LIMIT, *, wait_over: Optional[int] = None
    ) -> None:
        """``limit``: events queued before further ones are dropped (None: never dropped).
        ``wait_over``: for a producer that may wait (a file reader, never the relay), the
        queued events over which `push_many` waits for the UI to drain, so a reader ahead
        of the screen does not hold the whole file in memory as parsed events."""
        self.limit = limit
        self.wait_over = wait_over
        self.total_missed = 0
        self._lock = threading.Lock()
        self._drained_some = threading.Condition(self._lock)
        self._closed = False
        self._events: deque[Event] = deque()
        self._missed = 0
        self._notify: Optional[Callable[[], None]] = None
        self._nudged = False
        self._finished = False
        self._finish_told = False
        self._reason = ""
        self._failed = False
        self._info: Optional[SourceInfo] = None
        # (events pushed before it, progress): the progress of each push, matched to the
        # events a drain takes, so the UI says how far the file is read for what it shows.
        self._progress: deque[tuple[int, Progress]] = deque()
        self._pushed = 0
        self._drained = 0

    def attach(self, notify: Callable[[], None]) -> None:
        """Set the thread-safe callable that tells the UI events are ready (called at most
        once until the UI calls `rearm()`)."""
        with self._lock:
            self._notify = notify
            call = self._arm_locked()
        if call is not None:
            call()

    def push(self, event: Event) -> bool:
        """Queue one event; False when it was dropped because the buffer is full.

        The live session's path, once per event in its thread: kept to the few steps it
        needs, since that thread is what the relay waits for."""
        if self.wait_over is not None:
            return self.push_many((event,)) == 1
        with self._lock:
            queued = self._queue_locked(event)
            call = None if self._nudged else self._arm_locked()
        if call is not None:
            call()
        return queued

    def push_many(
        self,
        events: Iterable[Event],
        progress: Optional[Progress] = None,
        *,
        wait_over: Optional[int] = None,
    ) -> int:
        """Queue events in order, dropping (and counting) those over the bound; ``progress``
        says how far the source had read after the last of them. Never blocks beyond a short
        lock, unless the buffer's ``wait_over`` (or this call's, for a producer that may wait
        in a buffer whose others may not) says to wait for the UI to drain. Returns how many
        were queued."""
        queued = 0
        with self._lock:
            wait_over = self.wait_over if wait_over is None else wait_over
            if wait_over is not None:
                # Bounded waits, so a producer never outlives a UI that closed the buffer.
                while len(self._events) >= wait_over and not self._closed:
                    self._drained_some.wait(0.5)
            for event in events:
                queued += self._queue_locked(event)
            if progress is not None:
                self._progress.append((self._pushed, progress))
            call = self._arm_locked()
        if call is not None:
            call()
        return queued

    def _queue_locked(self, event: Event) -> bool:
        """Queue ``event``, or count it as missed when the buffer is full (under the lock)."""
        if self.limit is not None and len(self._events) >= self.limit:
            self._missed += 1
            self.total_missed += 1
            return False
        self._events.append(event)
        self._pushed += 1
        return True

    def count_missed(self, count: int) -> None:
        """``count`` events were dropped before they reached this buffer (the UI counts them
        with its own)."""
        if count <= 0:
            return
        with self._lock:
            self._missed += count
            self.total_missed += count
            call = self._arm_locked()
        if call is not None:
            call()

    def finish(self, reason: str = "", *, failed: bool = False) -> None:
        """The producer is done (end of file, proxy stopped); ``reason`` says why, and
        ``failed`` that it is an error the UI should show as one. A later call replaces the
        reason (the proxy's own last word follows its event stream's), but never an error's."""
        with self._lock:
            if self._failed and not failed:
                return
            self._finished = True
            self._reason = reason
            self._failed = failed
            self._finish_told = False
            call = self._arm_locked()
        if call is not None:
            call()

    def describe(self, info: SourceInfo) -> None:
        """Tell the UI what the source has learnt (from any thread)."""
        with self._lock:
            self._info = info
            call = self._arm_locked()
        if call is not None:
            call()

    def drain(self, max_events: Optional[int] = None) -> Batch:
        """Take up to ``max_events`` queued events (all by default) and the drop count."""
        with self._lock:
            if max_events is None or len(self._events) <= max_events:
                events = list(self._events)
                self._events.clear()
            else:
                events = [self._events.popleft() for _ in range(max_events)]
            missed, self._missed = self._missed, 0
            more = bool(self._events)
            if self._finished and not more:
                self._finish_told = True
            info, self._info = self._info, None
            self._drained += len(events)
            self._drained_some.notify_all()
            progress = None
            while self._progress and self._progress[0][0] <= self._drained:
                progress = self._progress.popleft()[1]
            return Batch(
                events, missed, self._finished, self._reason, more, self._failed, info, progress
            )

    def close(self) -> None:
        """The UI is gone: a producer waiting for room stops waiting (and never waits again)."""
        with self._lock:
            self._closed = True
            self._drained_some.notify_all()

    def rearm(self) -> bool:
        """Allow the next nudge. Returns True when something is already waiting (then the
        caller should drain again now; no nudge will come for it)."""
        with self._lock:
            self._nudged = False
            if self._events or self._missed or self._info or self._untold_finish():
                self._nudged = True
                return True
            return False

    @property
    def closed(self) -> bool:
        """The UI is gone (`close`)."""
        with self._lock:
            return self._closed

    @property
    def finished(self) -> bool:
        with self._lock:
            return self._finished and not self._events

    def _untold_finish(self) -> bool:
        return self._finished and not self._finish_told

    def _arm_locked(self) -> Optional[Callable[[], None]]:
        if self._notify is None or self._nudged:
            return None
        if not (self._events or self._missed or self._info or self._untold_finish()):
            return None
        self._nudged = True
        return self._notify


class EventSource(Protocol):
    """Something that delivers events into an `EventBuffer`.

    `run()` is blocking and is called once, in a worker thread; it returns when the source
    is exhausted or after `stop()` (which is called from the UI thread and must be quick)."""

    description: str
    live: bool
    serving: bool
    """Quitting the UI stops a running proxy (so the UI asks first)."""
    buffer_limit: Optional[int]

    def run(self, sink: EventBuffer) -> None: ...

    def stop(self) -> None: ...


def hub_sink(
    buffer: EventBuffer, lighten: Optional[Callable[[Event], Event]] = None
) -> Callable[[Event], None]:
    """What the live session's hub calls with every event as it is published (`EventHub.
    attach_sink`): the event goes straight into ``buffer``, the UI's one bounded queue, whose
    drop count is the one loss counter the UI shows (first through ``lighten``: the large
    payloads the recording holds taken out, `payloads.LeftToRecording`). It never raises into
    the hub (whose caller is the relay's observer): a failure stops the UI's feed alone and
    says so."""
    failed = False

    def push(event: Event) -> None:
        nonlocal failed
        if failed:
            return
        try:
            buffer.push(event if lighten is None else lighten(event))
        except Exception as exc:  # a UI bug costs the UI's feed, never the session
            failed = True
            with contextlib.suppress(Exception):
                buffer.finish(
                    f"the UI stopped taking events ({type(exc).__name__}: {exc})", failed=True
                )

    return push


class TrioThreadSource:
    """Runs ``main(sink)`` under `trio.run` in the worker thread that calls `run()`.

    ``main`` is the proxy: it serves, with `hub_sink(sink)` attached to its event hub.
    `stop()` cancels it. An exception from ``main`` is kept in ``error`` and reported in the
    UI, as ``describe`` renders it (by default, its text)."""

    live = True
    serving = True

    def __init__(
        self,
        main: Callable[[EventBuffer], Awaitable[None]],
        *,
        description: str = "live",
        buffer_limit: Optional[int] = DEFAULT_LIVE_LIMIT,
        describe_error: Callable[[BaseException], str] = str,
        route_profiles: Optional[Mapping[str, Profile]] = None,
    ) -> None:
        self.main = main
        self.route_profiles = None if route_profiles is None else dict(route_profiles)
        """The routes whose taps parse with a profile of their own (the session's layers;
        any other route's with the session's profile): a session that says so has its
        settled flows kept compact (`golem_proxy.tui.compact`; None: as the tap made them)."""
        self.description = description
        self.buffer_limit = buffer_limit
        self.describe_error = describe_error
        self.error: Optional[BaseException] = None
        self._lock = threading.Lock()
        self._token: Optional[trio.lowlevel.TrioToken] = None
        self._scope: Optional[trio.CancelScope] = None
        self._stop_requested = False
        self.done = threading.Event()
        """Set when `run()` has returned (the trio run is over)."""

    def run(self, sink: EventBuffer) -> None:
        try:
            trio.run(self._main, sink)
        except Exception as exc:  # reported, not raised: the UI stays up to show it
            self.error = exc
            sink.finish(self.describe_error(exc), failed=True)
        finally:
            self.done.set()

    async def _main(self, sink: EventBuffer) -> None:
        with trio.CancelScope() as scope:
            with self._lock:
                self._token = trio.lowlevel.current_trio_token()
                self._scope = scope
                if self._stop_requested:
                    scope.cancel()
            await self.main(sink)
        sink.finish("stopped" if scope.cancelled_caught else "proxy exited")

    def stop(self) -> None:
        with self._lock:
            self._stop_requested = True
            token, scope = self._token, self._scope
        if token is None or scope is None:
            return
        with contextlib.suppress(trio.RunFinishedError):
            trio.from_thread.run_sync(scope.cancel, trio_token=token)
