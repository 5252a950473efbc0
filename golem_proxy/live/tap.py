"""The tap: decodes a copy of every byte the relay forwarded and turns it into events.

Per connection, one incremental decoder per direction, one correlator pairing responses with
requests, and the profile's contract checks. The tap never sits on the forwarding path: the
relay hands it chunks after sending them, and a single `TapWorker` decodes them when the relay
has nothing runnable (forwarding first), falling back to fair sharing once its backlog grows.
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, Union

import trio

from golem_core.catalogue import MethodCatalogue
from golem_core.contract import Violation, violation
from golem_core.framing import NEED_DATA, Discarded, EndOfStream, Frame, FrameError
from golem_core.messages import Malformed, MalformedKind, Request, Role, method_of
from golem_core.pairing import R_ORPHAN_RESPONSE as R_ORPHAN
from golem_core.pairing import Correlator
from golem_core.profiles import Profile

from ..events import (
    BytesDiscarded,
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
    FramingErrorSeen,
    ViolationSeen,
)
from .redact import Redactor

__all__ = ["ConnectionTap", "TapVerdict", "TapWorker"]

Publish = Callable[[Event], None]

ELIDE_FRAMES_OVER = 1024 * 1024
"""Frames larger than this are typed with their long opaque strings elided (live view only)."""
ELIDE_STRINGS_OVER = 64 * 1024

# Fatal for --enforce-limits: the frame cannot be trusted to mean what it says.
_ENFORCED_MALFORMED = (MalformedKind.INVALID_UTF8, MalformedKind.INVALID_JSON)


@dataclass(frozen=True)
class TapVerdict:
    """Why a connection must be closed under ``--enforce-limits`` (None: keep going)."""

    reason: str


@dataclass
class _RequestContext:
    frame: FrameSeen
    violations: list[Violation]


class ConnectionTap:
    """Decoding state of one connection (both directions). Feed it with `process`."""

    def __init__(
        self,
        conn: int,
        route: str,
        profile: Profile,
        publish: Publish,
        *,
        catalogue: Optional[MethodCatalogue] = None,
        redactor: Optional[Redactor] = None,
        cap: Optional[int] = None,
    ) -> None:
        self.conn = conn
        self.route = route
        self.profile = profile
        self.publish = publish
        self.catalogue = catalogue
        self.redactor = redactor
        self._decoders = {
            Direction.C2S: profile.new_decoder(cap),
            Direction.S2C: profile.new_decoder(cap),
        }
        self._frame_index = {Direction.C2S: 0, Direction.S2C: 0}
        self._correlator: Correlator[_RequestContext] = Correlator(profile)
        self.failed: Optional[str] = None
        """Why decoding stopped for this connection (a bug in the tap), or None."""

    def process(self, direction: Direction, data: bytes, t: float) -> Optional[TapVerdict]:
        """Decode a forwarded chunk (``b""`` means end of stream) and publish all its events.
        Returns a verdict naming the first frame that breaks the limits, if any."""
        self.feed(direction, data)
        verdict: Optional[TapVerdict] = None
        more = True
        while more:
            _, more, found = self.step(direction, t, 1 << 30)
            verdict = verdict or found
        return verdict

    def feed(self, direction: Direction, data: bytes) -> None:
        """Hand a forwarded chunk (``b""``: end of stream) to the direction's decoder."""
        decoder = self._decoders[direction]
        if data:
            decoder.receive_data(data)
        else:
            decoder.receive_eof()

    def step(
        self, direction: Direction, t: float, limit: int
    ) -> tuple[int, bool, Optional[TapVerdict]]:
        """Handle at most ``limit`` decoder events. Returns how many it handled, whether more
        are ready (call again before feeding this direction again) and any limits verdict."""
        decoder = self._decoders[direction]
        verdict: Optional[TapVerdict] = None
        for used in range(limit):
            event = decoder.next_event()
            if event is NEED_DATA:
                return used, False, verdict
            found = self._handle(direction, event, t)
            verdict = verdict or found
            if isinstance(event, EndOfStream):
                return used + 1, False, verdict
        return limit, True, verdict

    def fail(self, exc: BaseException) -> None:
        """Stop decoding this connection after an unexpected error, saying so once."""
        self.failed = f"{type(exc).__name__}: {exc}"
        print(
            f"golem-proxy: decoding of connection {self.conn} stopped ({self.failed}); "
            "its bytes are still forwarded",
            file=sys.stderr,
        )

    def outstanding(self) -> int:
        return len(self._correlator)

    def _handle(self, direction: Direction, event: object, t: float) -> Optional[TapVerdict]:
        if isinstance(event, Frame):
            return self._frame(direction, event, t)
        if isinstance(event, FrameError):
            self.publish(
                FramingErrorSeen(
                    self.conn,
                    self.route,
                    direction,
                    t,
                    event.kind,
                    event.detail,
                    event.raw,
                    event.recoverable,
                    event.declared_length,
                )
            )
            found = self.profile.frame_violation(event)
            self.publish(ViolationSeen(self.conn, self.route, direction, None, t, found))
            return TapVerdict(f"{direction.value} {event.kind.value} frame: {event.detail}")
        if isinstance(event, Discarded):
            self.publish(
                BytesDiscarded(self.conn, self.route, direction, t, event.raw, event.final)
            )
        return None

    def _frame(self, direction: Direction, frame: Frame, t: float) -> Optional[TapVerdict]:
        role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
        payload = frame.payload
        elided = 0
        if len(payload) > ELIDE_FRAMES_OVER:
            # A blob (an image, a mesh) is not materialised for the live view: the typing and
            # the checks do not depend on its content, and the recording keeps its bytes.
            message, elided = self.profile.parse_elided(payload, role, ELIDE_STRINGS_OVER)
        else:
            message = self.profile.parse(payload, role)
        violations = self.profile.check_message(message, payload)
        if self.catalogue is not None and isinstance(message, Request):
            violations.extend(self.catalogue.check_request(message))
        # A response is paired first, so that method-scoped redaction rules apply to it too.
        pending = None if role is Role.REQUEST else self._correlator.match_response(message)
        request = pending.context if pending is not None else None
        redacted: tuple[str, ...] = ()
        if self.redactor and not isinstance(message, Malformed):
            method = method_of(request.frame.message if request else message)
            full = self.profile.parse(payload, role) if elided else message
            obj, redacted = self.redactor.apply(full.obj, method)
            if redacted:
                elided = 0
                payload = self.profile.encode_payload(obj)
                message = self.profile.parse(payload, role)
        index = self._frame_index[direction]
        self._frame_index[direction] = index + 1
        seen = FrameSeen(
            self.conn,
            self.route,
            direction,
            index,
            t,
            frame.size,
            payload,
            message,
            redacted,
            elided,
        )
        self.publish(seen)
        for found in violations:
            self.publish(ViolationSeen(self.conn, self.route, direction, index, t, found))
        if role is Role.REQUEST:
            self._correlator.add_request(message, _RequestContext(seen, violations))
        elif request is None:
            orphan = violation(
                R_ORPHAN, f"response id {message.id!r} answers no outstanding request", "$.id"
            )
            self.publish(
                ViolationSeen(self.conn, self.route, direction, index, t, orphan, orphan=True)
            )
        else:
            exchange_violations = self.profile.check_exchange(request.frame.message, message)
            for found in exchange_violations:
                self.publish(ViolationSeen(self.conn, self.route, direction, index, t, found))
            every = (*request.violations, *violations, *exchange_violations)
            self.publish(ExchangeCompleted(self.conn, self.route, request.frame, seen, every))
        if isinstance(message, Malformed) and message.kind in _ENFORCED_MALFORMED:
            return TapVerdict(f"{direction.value} malformed frame: {message.detail}")
        return None


@dataclass
class _Work:
    tap: ConnectionTap
    direction: Direction
    data: bytes
    t: float
    fed: bool = False
    in_decoder: bool = False
    submitted: float = 0.0


class TapWorker:
    """Runs every connection's tap in one task, behind forwarding.

    Chunks queue here after the relay sent them. The worker waits for a pause in the traffic
    (``quiet``), at most ``max_delay``, then decodes a slice of ``slice_frames`` frames and
    yields: pumps woken by I/O forward first, decoding fills the time the relay waits for a
    peer, and a chunk of a thousand pipelined frames is decoded over many slices, never in one
    long stall. When it falls behind (``soft_limit`` bytes queued, or chunks waiting four times
    ``max_delay``) it takes ``catch_up_slice`` seconds per turn, so the recording's lag stays
    bounded. Past ``hard_limit`` queued bytes, `submit` callers wait: the one point where the
    relay slows, rather than let memory grow without bound."""

    def __init__(
        self,
        hard_limit: int = 256 * 1024 * 1024,
        slice_frames: int = 16,
        *,
        quiet: float = 0.002,
        max_delay: float = 0.02,
        soft_limit: int = 4 * 1024 * 1024,
        catch_up_slice: float = 0.005,
    ) -> None:
        self.hard_limit = hard_limit
        self.slice_frames = slice_frames
        self.quiet = quiet
        self.max_delay = max_delay
        self.soft_limit = soft_limit
        self.catch_up_slice = catch_up_slice
        self._last_submit = 0.0
        self.backlog = 0
        # Work to decode, or an event to publish once everything before it is decoded.
        self._queue: collections.deque[Union[_Work, tuple[Publish, Event]]] = collections.deque()
        self._wakeup = trio.Event()
        self._room = trio.Event()
        self._idle = trio.Event()
        self._idle.set()

    async def submit(self, tap: ConnectionTap, direction: Direction, data: bytes, t: float) -> None:
        """Queue a forwarded chunk (``b""`` for end of stream). Verdicts are not acted on
        here: outside ``--enforce-limits`` the proxy only reports."""
        while data and self.backlog >= self.hard_limit:  # an end of stream never waits
            if self._room.is_set():
                self._room = trio.Event()
            await self._room.wait()
        self._queue.append(_Work(tap, direction, data, t, submitted=trio.current_time()))
        self._last_submit = trio.current_time()
        self.backlog += len(data)
        self._wake()

    def submit_event(self, publish: Publish, event: Event) -> None:
        """Publish ``event`` once everything queued before it has been decoded, so that a
        connection's close is never reported ahead of its last frames."""
        self._queue.append((publish, event))
        self._wake()

    def _wake(self) -> None:
        if self._idle.is_set():
            self._idle = trio.Event()
        self._wakeup.set()

    async def drained(self) -> None:
        """Wait until everything submitted so far has been decoded."""
        await self._idle.wait()

    async def run(self) -> None:
        """Process the queue until cancelled (call `drain_now` afterwards to finish)."""
        while True:
            if not self._queue:
                self._idle.set()
                self._wakeup = trio.Event()
                await self._wakeup.wait()
                continue
            await self._wait_for_quiet()
            if self._behind():
                # Falling behind (traffic outpaces decoding): take a longer slice so the
                # recording's lag stays bounded, at the price of some forwarding latency.
                deadline = time.perf_counter() + self.catch_up_slice
                while self._queue and time.perf_counter() < deadline:
                    self._process_some(self.slice_frames)
                continue
            budget = self.slice_frames
            while budget > 0 and self._queue:
                budget -= self._process_some(budget)

    def _behind(self) -> bool:
        return (
            self.backlog >= self.soft_limit
            or trio.current_time() - self._oldest_submit() >= 4 * self.max_delay
        )

    async def _wait_for_quiet(self) -> None:
        """Let forwarding go first: wait until no chunk arrived for ``quiet`` seconds, unless
        the oldest queued chunk has waited ``max_delay`` or the backlog passed ``soft_limit``.
        A burst is then forwarded at full speed and decoded in the pause after it."""
        await trio.lowlevel.checkpoint()
        while self._queue and self.backlog < self.soft_limit:
            now = trio.current_time()
            quiet_at = self._last_submit + self.quiet
            due_at = self._oldest_submit() + self.max_delay
            if now >= quiet_at or now >= due_at:
                return
            # One timer to the nearer of the two moments: no polling while traffic flows.
            await trio.sleep_until(min(quiet_at, due_at))

    def _oldest_submit(self) -> float:
        for item in self._queue:
            if isinstance(item, _Work):
                return item.submitted
        return trio.current_time()

    def drain_now(self) -> None:
        """Decode everything queued, synchronously (used at shutdown)."""
        while self._queue:
            self._process_some(1 << 30)
        self._idle.set()

    def _process_some(self, limit: int) -> int:
        """Work on the head of the queue; returns the budget it used (at least 1)."""
        item = self._queue[0]
        if isinstance(item, tuple):
            self._queue.popleft()
            publish, event = item
            publish(event)
            return 1
        if not item.fed:
            item.fed = True
            self.backlog -= len(item.data)
            if self.backlog < self.hard_limit:
                self._room.set()
        if item.tap.failed is not None:
            self._queue.popleft()  # this connection's decoding broke: forwarding goes on
            return 1
        try:
            if not item.in_decoder:
                item.in_decoder = True
                item.tap.feed(item.direction, item.data)
            used, more, _ = item.tap.step(item.direction, item.t, limit)
        except Exception as exc:  # a decoding bug must cost the inspection, never the relay
            item.tap.fail(exc)
            self._queue.popleft()
            return 1
        if not more:
            self._queue.popleft()
        return max(1, used)
