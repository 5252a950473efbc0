"""The replay server: a trio stand-in for the plugin that answers from a trace.

One listener per channel served by ``trio.serve_listeners``, one task per client connection,
requests answered in order. Framing goes through golem_core decoders; the rules live in
`ReplayEngine`. An oversized header closes the connection, as the plugin does; a forwarded miss
goes to a live plugin over one upstream connection per client connection (its answer picked by
golem_core's `AnswerReader` rule) and can be written to a new trace.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any, Callable, Optional, TypeVar

import trio

from golem_core.answers import Answer
from golem_core.framing import Frame, FrameError
from golem_core.messages import Role
from golem_core.profiles import Profile

from ..events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    ExchangeCompleted,
    FrameSeen,
    SessionEnded,
)
from ..live.log_output import say
from ..net.addresses import Address
from ..net.framed_stream import FramedStream, FramingFailure
from ..net.listeners import Listener, connect, open_listener, reset_when_closed
from ..net.patient_listener import PatientListener
from ..net.sockio import read_some, write_all
from ..recording.format import RecordingWriter, write_private
from ..terminal import counted, safe_text
from .engine import Close, Forward, ReplayEngine, Reply, Unanswered
from .row_numbers import number_all, row_label
from .state_order import ahead_lines

__all__ = ["ForwardError", "Hold", "Overlay", "ReplayServer", "Sleep"]

Sleep = Callable[[float], Awaitable[None]]
Overlay = Callable[[bytes], Optional[Unanswered]]
"""Asked first about each request payload of a connection: `Unanswered` where the plugin
left it so (the engine then is not asked), None to let the engine decide."""
Hold = Callable[[Reply], AbstractAsyncContextManager[None]]
"""Entered around the writing of each reply of a connection (whose next requests wait behind
it): a stand-in's way to send an answer when the recording says it came (`late_hold`)."""
T = TypeVar("T")
RECEIVE_SIZE = 65536
FORWARD_FAILED_CODE = -32603
FORWARD_WAIT = 60.0
"""How long a forwarded request waits for its answer from the live plugin (what comes
meanwhile going on to the client) before the forward fails, rather than the client's
connection waiting for ever on a plugin that answered with another id."""


class ForwardError(Exception):
    """The live plugin could not be reached, or closed without answering."""


class _Upstream:
    """One connection to the live plugin, for one client connection."""

    def __init__(self, stream: trio.SocketStream, profile: Profile, conn: int) -> None:
        self.stream = stream
        self.framed = FramedStream(stream, profile)
        self.conn = conn
        self.sent = 0
        self.received = 0

    async def forward(self, request: Frame, wanted: Any, client: trio.abc.Stream) -> Frame:
        """Send one framed request (whose correlation key is ``wanted``) and return the frame
        that answers it. What the plugin sends before that answers something else (a
        notification, a stale reply) goes on to ``client`` as it comes: nothing is dropped,
        and it is never taken for the answer. The answer comes within `FORWARD_WAIT` seconds,
        or the forward fails: a plugin that answered with another id leaves the client's
        connection served on, not waiting for ever.

        Raises ForwardError when the plugin fails; the client's stream errors pass as they are."""
        await _from_plugin(self.framed.send(request.raw))
        with trio.move_on_after(FORWARD_WAIT):
            while True:
                reading = await _from_plugin(self.framed.receive_reading(wanted))
                if isinstance(reading, Answer):
                    return reading.frame
                await write_all(client, reading.frame.raw)
        waited = f"{FORWARD_WAIT:g} s"
        raise ForwardError(f"live plugin sent no answer with the request's id in {waited}")


async def _from_plugin(step: Awaitable[T]) -> T:
    """``step`` on the live plugin's connection, its failures as ForwardError."""
    try:
        return await step
    except FramingFailure as exc:
        raise ForwardError(f"live plugin sent bad framing: {exc}") from exc
    except EOFError as exc:
        raise ForwardError("live plugin closed the connection without answering") from exc
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
        raise ForwardError(f"live plugin connection failed: {exc}") from exc


class ReplayServer:
    """Serves a `ReplayEngine` on one listener per route.

    ``listen`` maps a trace route name to where it is served; ``upstreams`` (for the forward
    policy) maps a route name to its live plugin; ``sleep`` is what timing waits with (trio's
    own by default, so a MockClock drives it in tests)."""

    def __init__(
        self,
        engine: ReplayEngine,
        listen: Mapping[str, Address],
        *,
        upstreams: Optional[Mapping[str, Address]] = None,
        record_new: Optional[RecordingWriter] = None,
        sleep: Sleep = trio.sleep,
        allow_public: bool = False,
        number_rows: bool = False,
    ) -> None:
        self.engine = engine
        self.number_rows = number_rows
        self._rows_read = trio.Event()
        """Set once the worker has read the row numbers (`_number_rows`)."""
        self._rows_wait_until = 0.0
        """Until when a request waits for them (`ROWS_WAIT` after listening)."""
        """Read the trace's row numbers in a worker thread once listening (`number_all`):
        a long-running replay's misses name rows without the event loop reading the trace."""
        self.profile = engine.profile
        self.listen = dict(listen)
        self.upstreams = dict(upstreams or {})
        self.recorder = record_new
        self.sleep = sleep
        self.allow_public = allow_public
        self.bound: dict[str, Address] = {}
        self.connections = 0
        self._next_upstream_conn = 1
        self._t0 = 0.0
        self._stopped_at = 0.0

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen, report the bound addresses (route → Address) through ``task_status``, and
        serve until cancelled. Raises ListenError when a listener cannot be opened."""
        self._t0 = trio.current_time()
        listeners: list[tuple[str, Listener]] = []
        try:
            for route, address in self.listen.items():
                listener = await open_listener(address, allow_public=self.allow_public)
                listeners.append((route, listener))
                self.bound[route] = listener.address
            # Connections get a nursery of their own, outside the accepting one (as trio's
            # serve_listeners is meant to be used): cancelling the server stops accepting and
            # ends the connections in one scope.
            async with trio.open_nursery() as connections, trio.open_nursery() as accepting:
                for route, listener in listeners:
                    await accepting.start(
                        partial(
                            trio.serve_listeners,
                            partial(self.serve_connection, route),
                            [
                                PatientListener(
                                    listener.listener, f"route {route} ({listener.address})", say
                                )
                            ],
                            handler_nursery=connections,
                        )
                    )
                if self.number_rows:  # the row numbers a miss names, off the event loop
                    self._rows_wait_until = trio.current_time() + ROWS_WAIT
                    connections.start_soon(self._number_rows)
                task_status.started(dict(self.bound))
        finally:
            self._stopped_at = self._now()
            with trio.CancelScope(shield=True):
                for _, listener in listeners:
                    await listener.aclose()
                if self.recorder is not None:
                    self.recorder.flush()

    async def _number_rows(self) -> None:
        exchanges = self.engine.index.trace.exchanges
        await trio.to_thread.run_sync(number_all, exchanges, abandon_on_cancel=True)
        self._rows_read.set()

    async def _rows_or_deadline(self) -> None:
        """Wait for the row numbers while `ROWS_WAIT` after listening has not passed: a
        recording of ordinary size is numbered by then, so its misses name rows; a large
        one's first requests are held no longer than that, and their misses say ``#?``."""
        if self.number_rows and not self._rows_read.is_set():
            with trio.move_on_at(self._rows_wait_until):
                await self._rows_read.wait()

    async def serve_connection(
        self,
        route: str,
        stream: trio.abc.Stream,
        overlay: Optional[Overlay] = None,
        hold: Optional[Hold] = None,
    ) -> None:
        """Answer one client connection on ``route`` until it closes (or must be closed);
        ``overlay`` is asked about each request first, ``hold`` entered around each reply
        from the trace as it is written."""
        self.connections += 1
        decoder = self.profile.new_decoder(skip_oversized=False)
        upstream: Optional[_Upstream] = None
        streak = 0
        try:
            while True:
                chunk = await read_some(stream, RECEIVE_SIZE)
                if chunk:
                    decoder.receive_data(chunk)
                else:
                    decoder.receive_eof()
                streak += 1
                if streak >= 16:  # a client that never pauses must not starve the others
                    streak = 0
                    await trio.lowlevel.checkpoint()
                for event in decoder.events():
                    if isinstance(event, FrameError):
                        return  # oversized header or truncated frame: the plugin closes too
                    if not isinstance(event, Frame):
                        return  # end of stream
                    held = overlay(event.payload) if overlay is not None else None
                    if held is not None:
                        if held.end:
                            await _end_sending(stream, reset_after=held.reset_after)
                            return
                        continue
                    upstream, keep_open = await self._answer(route, stream, event, upstream, hold)
                    if not keep_open:
                        return
                if not chunk:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            with trio.CancelScope(shield=True):
                if upstream is not None:
                    await self._close_upstream(route, upstream)
                await stream.aclose()
            self.connections -= 1

    async def _answer(
        self,
        route: str,
        stream: trio.abc.Stream,
        frame: Frame,
        upstream: Optional[_Upstream],
        hold: Optional[Hold] = None,
    ) -> tuple[Optional[_Upstream], bool]:
        await self._rows_or_deadline()
        decision = self.engine.decide(route, frame.payload)
        if isinstance(decision, Reply):
            if decision.delay > 0:
                await self.sleep(decision.delay)
            if hold is None:
                await write_all(stream, decision.data)
            else:
                async with hold(decision):
                    await write_all(stream, decision.data)
            return upstream, True
        if isinstance(decision, Close):
            return upstream, False
        assert isinstance(decision, Forward)
        request = self.profile.parse(frame.payload, Role.REQUEST)
        try:
            if upstream is None:
                upstream = await self._open_upstream(route)
            started = self._now()
            answer = await upstream.forward(frame, self.profile.correlation_key(request), stream)
        except ForwardError as exc:
            if upstream is not None:
                # A broken or late upstream is not reused: a late answer would be taken for
                # the answer to the next forwarded request. The next miss reconnects.
                with trio.CancelScope(shield=True):
                    await self._close_upstream(route, upstream)
                upstream = None
            reply = self.profile.error(request.id, FORWARD_FAILED_CODE, f"replay: {exc}")
            await write_all(stream, self.profile.encode(reply))
            return upstream, True
        await write_all(stream, answer.raw)
        self.engine.learn_from_forward(decision, answer.payload)
        self._record(route, upstream, frame, answer, started)
        return upstream, True

    def _now(self) -> float:
        return trio.current_time() - self._t0

    def end_recording(self, reason: str) -> None:
        """The replay ended in order (``reason``: how): the recording of what was fetched from
        the live plugin gets its last line, ``session-end``, with what it recorded (the
        caller closes it), at the time the server stopped."""
        recorder = self.recorder
        if recorder is None:
            return
        recorded = self.engine.report.recorded_new
        recorder.write(SessionEnded(t=self._stopped_at, reason=reason, exchanges=recorded))
        recorder.flush()

    async def _open_upstream(self, route: str) -> _Upstream:
        address = self.upstreams.get(route)
        if address is None:
            raise ForwardError(f"no live plugin given for route {route!r}")
        try:
            stream = await connect(address)
        except OSError as exc:
            raise ForwardError(f"cannot reach the live plugin at {address}: {exc}") from exc
        conn = self._next_upstream_conn
        self._next_upstream_conn += 1
        upstream = _Upstream(stream, self.profile, conn)
        if self.recorder is not None:
            self.recorder.write(
                ConnectionOpened(
                    conn=conn, route=route, client="replay", upstream=str(address), t=self._now()
                )
            )
        return upstream

    async def _close_upstream(self, route: str, upstream: _Upstream) -> None:
        await upstream.stream.aclose()
        if self.recorder is not None:
            self.recorder.write(
                ConnectionClosed(
                    conn=upstream.conn, route=route, reason="client closed", t=self._now()
                )
            )
            self.recorder.flush()

    def _record(
        self, route: str, upstream: _Upstream, request: Frame, response: Frame, started: float
    ) -> None:
        if self.recorder is None:
            return
        conn = upstream.conn
        # Written as the trace's own recorder wrote: redacted by its rules, and the secrets
        # the replay met hidden (`ReplayRedaction`), before anything reaches the file.
        redaction = self.engine.redaction
        message = self.profile.parse(request.payload, Role.REQUEST)
        method = getattr(message, "method", None)
        asked = redaction.frame(request.payload, message, Role.REQUEST, method)
        answer = self.profile.parse(response.payload, Role.RESPONSE)
        answered = redaction.frame(response.payload, answer, Role.RESPONSE, method)
        req = FrameSeen(
            conn=conn,
            route=route,
            direction=Direction.C2S,
            index=upstream.sent,
            t=started,
            size=request.size,
            payload=asked.payload,
            message=asked.message,
            redacted=asked.redacted,
            expects_answer=True,
        )
        resp = FrameSeen(
            conn=conn,
            route=route,
            direction=Direction.S2C,
            index=upstream.received,
            t=self._now(),
            size=response.size,
            payload=answered.payload,
            message=answered.message,
            redacted=answered.redacted,
            answers=req.index,
        )
        upstream.sent += 1
        upstream.received += 1
        outcome = self.profile.outcome(req.message, resp.message)
        for event in (
            req,
            resp,
            ExchangeCompleted(conn=conn, route=route, request=req, response=resp, outcome=outcome),
        ):
            self.recorder.write(event)
        self.recorder.flush()
        self.engine.report.recorded_new += 1


async def _end_sending(stream: trio.abc.Stream, *, reset_after: bool) -> None:
    """End our side of ``stream`` as a plugin gone away does, and read the client's until it
    ends: its bytes are refused with a reset (``reset_after``: the caller's close resets),
    else dropped. Raises what the stream raises."""
    if not isinstance(stream, trio.abc.HalfCloseableStream):
        return  # nothing to end but the whole stream, which the caller closes
    await stream.send_eof()
    while await read_some(stream, RECEIVE_SIZE):
        if reset_after:
            if isinstance(stream, trio.SocketStream):
                reset_when_closed(stream)
            return


ROWS_WAIT = 2.0
"""Seconds after it listens that the replay command's requests may wait for the trace's row
numbers (`ReplayServer._rows_or_deadline`): a recording of ordinary size is read in
milliseconds, 100,000 exchanges in several seconds."""


def summary_text(summary: Mapping[str, Any]) -> str:
    """The end-of-run report as a few human lines."""
    # The parts add up to the requests: a miss may have been forwarded (counted among the
    # misses), a malformed request is none of the others.
    lines = [
        f"golem-proxy replay: {counted(summary['requests'], 'request')}: {summary['served']} "
        f"from the trace, {summary['builtins']} built-in, {summary['malformed']} malformed, "
        f"{len(summary['misses'])} missed ({summary['forwarded']} of them forwarded); "
        f"{counted(len(summary['unused']), 'recorded exchange')} unused"
    ]
    redacted = summary.get("redacted_matches", 0)
    if redacted:
        lines.append(
            f"  {counted(redacted, 'call')} matched with redacted values (recorded with "
            "--redact: a «redacted» value matches whatever the request carries there)"
        )
    for miss in summary["misses"][:20]:
        lines.append(f"  miss {miss['route']} {miss['method']}: {miss['message']}")
    # Answered out of recorded order: a warning (the answer may show state not made yet).
    lines += [f"  {line}" for line in ahead_lines(summary.get("ahead", []))]
    for unused in summary["unused"][:20]:
        where = row_label(unused["number"], unused.get("file"))
        lines.append(f"  unused {where} {unused['route']} {unused['method']}")
    hidden = len(summary["unused"]) - 20
    if hidden > 0:
        lines.append(f"  … and {hidden} more unused")
    # Methods, routes and messages come from the trace and the client: inert on a terminal.
    return "\n".join(safe_text(line) for line in lines)


def dump_summary(summary: Mapping[str, Any], path: str, *, overwrite: bool = True) -> None:
    """Write the JSON report to ``path``, readable by its owner only (it quotes requests),
    whole, replacing only a file the user owns, and an existing one only with ``overwrite``.
    Raises OSError."""
    text = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    write_private(path, text.encode("utf-8", "backslashreplace"), overwrite=overwrite)
