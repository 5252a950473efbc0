"""The observer: decodes what the relay forwarded, behind it and never in its way.

The relay hands every forwarded chunk to `Observer.submit`, which never waits: it queues the
chunk, or, when the observer is behind, drops it and notes the gap on the connection's tap.
One task decodes the queue (through each connection's `ConnectionTap`) and publishes events.

Forwarding first, in three ways:

* Decoding waits for a pause in the traffic (``quiet``, at most ``max_delay``): a burst is
  forwarded at full speed and decoded in the pause after it.
* Decoding runs in slices of ``slice_time``; after a slice, if any forwarding task is ready to
  run, it yields for long enough that decoding takes at most ``duty`` of the time
  (``duty_behind`` while the queue holds more than a second of decoding). When nothing else
  is ready, it uses all the time there is. Once the oldest queued chunk has waited
  ``max_trail`` seconds, decoding gets ``duty_late`` of the time: a steady load (8 clients
  calling one after the other) would otherwise leave the observer, and so the recording, a
  second or two behind the wire, all of it lost to a ``kill -9``.
* Memory is bounded by ``budget``: queued chunks plus what every tap holds (partial frames,
  requests waiting for answers), and work by ``max_drain``: the queue holds at most what the
  taps can decode in that many seconds, each chunk at the rate its own connection has shown
  (a flood of tiny frames is cheap in bytes and dear in work). When either is full, or the
  oldest queued chunk is ``max_lag`` seconds old, the observer *sheds*: chunks are forwarded
  but not queued, each connection's tap records the gap (`ObservationLost`), and decoding
  resumes at the next frame boundary once the queue has drained to half. Nothing the observer
  does can make `submit` block, raise or hold more.

An exception while decoding a connection costs that connection's inspection (reported once),
never the relay and never the other connections.
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Callable
from typing import Optional

import trio

from golem_core.decoders import Chunk
from golem_core.framing import LENGTH_HEADER, Frame

from ..events import Direction, Event
from .heap import TRIM_IDLE, TrimPacing, return_memory_to_the_system
from .observer_queue import FIRST_RATE, Item, Lost, Rate, Work, last_queued
from .tap import ConnectionTap

__all__ = ["DEFAULT_BUDGET", "Observer"]

Publish = Callable[[Event], None]

DEFAULT_BUDGET = 256 * 1024 * 1024
"""What the observer may hold, all connections together (``--observer-memory``)."""
MIN_QUEUE = 1024 * 1024
"""The queue may always hold this much, however slow decoding has been."""
RATE_WINDOW = 0.005
"""Seconds of a connection's decoding folded into its rate at once."""
HEAD = LENGTH_HEADER.size
"""Bytes of the first chunk shed of a loss that are queued all the same (`submit`): a
length-prefixed header, in case a frame starts there."""
TRIM_AFTER = 32 * 1024 * 1024
"""Once this much was decoded (or held by connections since closed), the freed heap goes back
to the system when the observer is next idle for `TRIM_IDLE`, and as long past the last burst
as `TrimPacing` asks (longer while bursts keep coming back after short pauses)."""


class Observer:
    """Decodes every connection's forwarded bytes in one task; see the module docstring."""

    def __init__(
        self,
        budget: int = DEFAULT_BUDGET,
        *,
        slice_frames: int = 16,
        quiet: float = 0.002,
        max_delay: float = 0.02,
        duty: float = 0.15,
        duty_behind: float = 0.35,
        duty_late: float = 0.5,
        max_trail: float = 0.03,
        slice_time: float = 0.002,
        max_lag: float = 30.0,
        max_drain: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if budget < 1:
            raise ValueError("the observer's budget must be at least 1 byte")
        self.budget = budget
        self.slice_frames = slice_frames
        self.quiet = quiet
        self.max_delay = max_delay
        self.duty = duty
        self.duty_behind = duty_behind
        self.duty_late = duty_late
        self.max_trail = max_trail
        self.slice_time = slice_time
        self.max_lag = max_lag
        self.max_drain = max_drain
        self.rate = FIRST_RATE
        """Bytes a second the taps have been decoding (a moving average; a first guess)."""
        self.work = 0.0
        """Seconds of decoding queued: each chunk at its own connection's rate."""
        self._rates: dict[ConnectionTap, Rate] = {}
        self._fed_total = 0
        self._clock = clock
        self.backlog = 0
        """Bytes queued, not yet handed to a tap."""
        self.held = 0
        """Bytes the taps held when each was last worked on."""
        self.shedding = False
        self.shed_bytes = 0
        """Bytes forwarded but not observed since the start (all gaps together)."""
        self._tap_held: dict[ConnectionTap, int] = {}
        self._freed = 0
        self._trims = TrimPacing(large=TRIM_AFTER // 8)
        self._open_loss: dict[tuple[ConnectionTap, Direction], Lost] = {}
        self._last_submit = 0.0
        self._queue: collections.deque[Item] = collections.deque()
        self._wakeup = trio.Event()

    @property
    def used(self) -> int:
        """What the observer holds now, as counted against its budget."""
        return self.backlog + self.held

    @property
    def idle(self) -> bool:
        """Everything submitted so far has been decoded and its events published."""
        return not self._queue

    def submit(
        self,
        tap: ConnectionTap,
        direction: Direction,
        data: Chunk,
        t: float,
        frame: Optional[Frame] = None,
    ) -> None:
        """Queue a forwarded chunk (``b""`` for end of stream; ``frame``: the frame it is, as
        the forwarding path decoded it) for decoding, or drop it when the observer is behind.
        Never blocks, never raises."""
        now = self._clock()
        self._last_submit = now
        rate = self._rates.get(tap)
        cost = len(data) / (rate.rate if rate is not None else FIRST_RATE)
        if data and self._over(len(data), cost, now):
            if (tap, direction) not in self._open_loss and len(data) > HEAD:
                # A loss's first bytes are decoded all the same: when a frame starts there,
                # its header says where it ends, so a stream cut inside it is known cut.
                self._queue.append(Work(tap, direction, bytes(data[:HEAD]), t, now, 0.0))
                self.backlog += HEAD
                self._lose(tap, direction, len(data) - HEAD, t)
            else:
                self._lose(tap, direction, len(data), t)
            return
        self._open_loss.pop((tap, direction), None)
        self._queue.append(Work(tap, direction, data, t, now, cost, frame))
        self.backlog += len(data)
        self.work += cost
        self._wakeup.set()

    def lose(
        self, tap: ConnectionTap, direction: Direction, size: int, t: float, unsent: str = ""
    ) -> None:
        """Note ``size`` forwarded bytes that never reached the observer (the handoff to an
        observing process was full), in order with what was submitted before them;
        ``unsent``: they were not forwarded either, and why."""
        self._lose(tap, direction, size, t, unsent)

    def undelivered_last(
        self, tap: ConnectionTap, direction: Direction, size: int, why: str, t: float
    ) -> None:
        """Of what was submitted for ``tap``'s ``direction``, the last ``size`` bytes never
        reached their receiver (``why``; handed on before their write: a spool's): marked
        so where they begin in the queue, as if said before them; what of them the tap was
        fed already, it is told of (`ConnectionTap.undelivered_last`)."""
        at, fed = last_queued(self._queue, tap, direction, size)
        mark = functools.partial(tap.undelivered_last, direction, fed, why)
        self._queue.insert(at, lambda: self._guarded(tap, t, mark))
        self._wakeup.set()

    def submit_event(self, publish: Publish, event: Event) -> None:
        """Publish ``event`` once everything queued before it has been decoded, so that a
        connection's close is never reported ahead of its last frames."""
        self.after_queued(lambda: publish(event))

    def after_queued(self, call: Callable[[], None]) -> None:
        """Call ``call`` once everything queued before it has been decoded and its events
        published."""
        self._queue.append(call)
        self._wakeup.set()

    def forget(self, tap: ConnectionTap) -> None:
        """The connection is closed and its end was queued: stop counting what it holds once
        that end is decoded (called by the relay after its last `submit`)."""
        self._queue.append(lambda: self._release(tap))
        self._wakeup.set()

    def _release(self, tap: ConnectionTap) -> None:
        released = self._tap_held.pop(tap, 0)
        self.held -= released
        self._open_loss.pop((tap, Direction.C2S), None)
        self._open_loss.pop((tap, Direction.S2C), None)
        self._rates.pop(tap, None)
        self._freed += released  # given back once the queue is empty

    def _over(self, size: int, cost: float, now: float) -> bool:
        # The queue may hold ``max_drain`` seconds of decoding, each chunk at the rate its own
        # connection has shown: a flood of tiny frames is cheap in bytes but dear in work, and
        # one connection's small calls must not make another's 16 MiB answers look dear.
        if self.shedding:
            # Resume once the queue drained to half: a gap per chunk would be worse than one.
            if (
                self.used + size <= self.budget // 2
                and (
                    self.backlog + size <= MIN_QUEUE // 2 or self.work + cost <= self.max_drain / 2
                )
                and self._lag(now) <= self.max_lag / 2
            ):
                self.shedding = False
            return self.shedding
        if (
            self.used + size > self.budget
            or (self.backlog + size > MIN_QUEUE and self.work + cost > self.max_drain)
            or self._lag(now) > self.max_lag
        ):
            self.shedding = True
        return self.shedding

    def _learn(self, fed: int, spent: float) -> None:
        """Fold a slice's decoding rate (bytes handed to taps per second) into `rate`."""
        if fed and spent >= 0.0005:
            self.rate += (fed / spent - self.rate) * 0.2

    def _lag(self, now: float) -> float:
        for item in self._queue:
            if isinstance(item, Work):
                return now - item.submitted
        return 0.0

    def _lose(
        self, tap: ConnectionTap, direction: Direction, size: int, t: float, unsent: str = ""
    ) -> None:
        self.shed_bytes += size
        key = (tap, direction)
        loss = self._open_loss.get(key)
        if loss is None:
            loss = self._open_loss[key] = Lost(tap, direction, 0, t)
            self._queue.append(loss)
            self._wakeup.set()
        loss.size += size
        if unsent:
            loss.unsent += size
            loss.why = unsent

    async def run(self) -> None:
        """Decode the queue until cancelled (call `drain_now` afterwards to finish)."""
        while True:
            if not self._queue:
                self._wakeup = trio.Event()
                if self._freed < TRIM_AFTER:
                    await self._wakeup.wait()
                    continue
                quiet = max(TRIM_IDLE, self._trims.wait_left(trio.current_time()))
                with trio.move_on_after(quiet) as idle:
                    await self._wakeup.wait()
                if idle.cancelled_caught:  # a backlog drained and nothing came since
                    self._freed = 0
                    return_memory_to_the_system()
                    self._trims.trimmed(trio.current_time())
                continue
            await self._wait_for_quiet()
            started = time.perf_counter()
            fed = self._fed_total
            self._work_for(self.slice_time)
            spent = time.perf_counter() - started
            self._learn(self._fed_total - fed, spent)
            self._trims.worked(self._fed_total, trio.current_time())
            if trio.lowlevel.current_statistics().tasks_runnable:
                # Forwarding has work waiting: leave it the rest of the time. A queue that
                # would take over a second to decode gets a larger share, so steady traffic is
                # observed whole; a flood past ``max_drain`` is shed instead.
                share = self.share
                await trio.sleep(spent * (1 - share) / share)
            else:
                await trio.lowlevel.checkpoint()

    @property
    def share(self) -> float:
        """The share of the time decoding takes now while forwarding has work waiting:
        ``duty_late`` once the oldest queued chunk has waited ``max_trail`` seconds, else
        ``duty_behind`` with more than a second of decoding queued, else ``duty``."""
        if self._lag(self._clock()) > self.max_trail:
            return self.duty_late
        return self.duty_behind if self.backlog > self.rate else self.duty

    def _work_for(self, seconds: float) -> None:
        deadline = time.perf_counter() + seconds
        while self._queue and time.perf_counter() < deadline:
            self._process_some(self.slice_frames)

    async def _wait_for_quiet(self) -> None:
        """Let forwarding go first: wait until no chunk arrived for ``quiet`` seconds, unless
        the oldest queued chunk has waited ``max_delay``. A burst is then forwarded at full
        speed and decoded in the pause after it."""
        await trio.lowlevel.checkpoint()
        while self._queue:
            now = self._clock()
            quiet_at = self._last_submit + self.quiet
            due_at = now - self._lag(now) + self.max_delay
            if now >= quiet_at or now >= due_at:
                return
            # One timer to the nearer of the two moments: no polling while traffic flows.
            await trio.sleep(min(quiet_at, due_at) - now)

    def drain_now(self, within: Optional[float] = None) -> None:
        """Decode everything queued, synchronously (used at shutdown). With ``within``, decode
        for at most that many seconds: what is still queued then is forwarded traffic the
        observer will never see, so each connection's tap records it as a gap (`lose`), and
        the closes and ends queued behind it are still reported."""
        deadline = None if within is None else self._clock() + within
        while self._queue:
            if deadline is not None and self._clock() >= deadline:
                self._give_up_queued()
                deadline = None
            self._process_some(1 << 30 if deadline is None else self.slice_frames)

    def _give_up_queued(self) -> None:
        """Turn every queued chunk into a gap on its tap; keep the ends of streams and the
        queued actions (a connection's close), which cost nothing to decode."""
        kept: collections.deque[Item] = collections.deque()
        lost: dict[tuple[ConnectionTap, Direction], float] = {}
        for item in self._queue:
            if isinstance(item, Lost):
                if item.tap.failed is None:
                    self._guarded(item.tap, item.t, functools.partial(item.tell, item.tap))
                    lost.setdefault((item.tap, item.direction), item.t)
                continue
            if isinstance(item, Work) and item.data:
                # A chunk half decoded leaves its rest in the decoder: `lose` counts that too.
                size = 0 if item.fed else len(item.data)
                if not item.fed:
                    self.backlog -= size
                    self.work -= item.cost
                self.shed_bytes += size
            else:
                kept.append(item)
                continue
            tap = item.tap
            if tap.failed is None:
                self._guarded(
                    tap, item.t, functools.partial(tap.lose, item.direction, size, item.t)
                )
                lost.setdefault((tap, item.direction), item.t)
        self._open_loss.clear()
        self._queue = kept
        self.work = 0.0  # what is kept costs nothing to decode
        # Said now: a connection cut at the stop has no end of stream queued to say it later.
        for (tap, direction), t in lost.items():
            if tap.failed is None:
                self._guarded(tap, t, functools.partial(tap.report_lost, direction, t))

    def _process_some(self, limit: int) -> int:
        """Work on the head of the queue; returns the budget it used (at least 1)."""
        item = self._queue[0]
        if not isinstance(item, (Work, Lost)):
            self._queue.popleft()
            item()
            return 1
        tap = item.tap
        if isinstance(item, Lost):
            self._queue.popleft()
            if self._open_loss.get((tap, item.direction)) is item:
                del self._open_loss[(tap, item.direction)]
            if tap.failed is None:
                self._guarded(tap, item.t, functools.partial(item.tell, tap))
            return 1
        started = time.perf_counter()
        rate = self._rates.get(tap) or self._rates.setdefault(tap, Rate())
        if not item.fed:
            item.fed = True
            self.backlog -= len(item.data)
            self.work = max(0.0, self.work - item.cost)
            self._freed += len(item.data)
            self._fed_total += len(item.data)
            rate.fed += len(item.data)
            if tap.failed is None:
                self._guarded(
                    tap, item.t, lambda: tap.feed(item.direction, item.data, item.t, item.frame)
                )
        if tap.failed is not None:
            self._queue.popleft()  # this connection's decoding broke: forwarding goes on
            return 1
        used, more = 1, False
        try:
            used, more, _ = tap.step(item.direction, item.t, limit)
        except Exception as exc:  # a decoding bug must cost the inspection, never the relay
            self._fail(tap, exc, item.t)
        rate.spent += time.perf_counter() - started
        if rate.spent >= RATE_WINDOW:  # long enough to mean something: fold it in
            rate.rate += (max(rate.fed, 1) / rate.spent - rate.rate) * 0.3
            rate.fed, rate.spent = 0, 0.0
        if not more:
            self._queue.popleft()
            self._account(tap)
        return max(1, used)

    def _guarded(self, tap: ConnectionTap, t: float, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:
            self._fail(tap, exc, t)

    def _fail(self, tap: ConnectionTap, exc: Exception, t: float) -> None:
        try:
            tap.fail(exc, t)
        except Exception:  # reporting the failure failed too: decoding stays off regardless
            tap.failed = tap.failed or f"{type(exc).__name__}: {exc}"
        self._account(tap)

    def _account(self, tap: ConnectionTap) -> None:
        now_held = 0 if tap.failed is not None else tap.held
        self.held += now_held - self._tap_held.get(tap, 0)
        self._tap_held[tap] = now_held
