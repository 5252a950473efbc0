"""The inline relay path for routes with ``--fault`` rules or ``--intercept``.

Faults act on messages, so frame boundaries and methods must be known before anything is
forwarded: each pump decodes what it receives with the profile's own framing decoder and
forwards frame by frame, applying the faults `ConnectionFaults` decides. Bytes that are not a
complete frame (framing errors, skipped oversized frames) are forwarded as they are. Routes
without faults never come here: their pumps stay on the fast path in `relay`.

The observer is fed exactly the bytes sent to each side, so the recording holds what each
receiver got, at the times the client saw them: a request when its last byte arrived from the
client (a delay or a hold after that is part of the wait the client sees), a response when it
was sent to the client; an exchange's latency is then what the client saw. While the request
pump holds a frame it reads on (read_on.py), so a request the client sends behind a held one
keeps the time it was sent too. The one exception is
a request the proxy withholds, recorded so that its flow exists, and followed by the fault
event that says it was not forwarded (docs/faults.md); and, as on any route, bytes read that
never reached their receiver (a frame still held by a ``delay`` when the connection ended, and
those read behind it: unsent.py) are recorded marked undelivered. With ``--observer
child-process`` the same bytes and events go, in the same order, to the observing process
(`Connection.link`), which decodes them as it does a plain route's; every decision stays here.
Since a request is decoded when it goes on, each read of the client's bytes is marked as it
happens (`Connection.arrived`): the session decides about the frames it completes (the MCP tool call
a GOLEM request belongs to, `attribution`) as they arrived, not as they went on.

An intercepted frame (`intercept`) is held before the faults see it: what the user decides
(the frame as it came, or edited) is what the faults then act on. A held frame is lost, never
sent, when its client goes away while it waits: a reset or a close ends the connection at
once (docs/intercept.md), so the plugin never runs a request for a client that is gone
(intercept_holding.py).
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

import trio

from golem_core.framing import Discarded, EndOfStream, Frame, Framing
from golem_core.profiles import Profile

from ..events import Direction, Event, InterceptKind
from .action_events import ActionEvents
from .answer_turns import AnswerTurns
from .chunks import ChunkReader
from .connection import Connection
from .enforce_limits import stopped_by_limits
from .fault_acting import FaultActing
from .faults import ConnectionFaults
from .intercept import Answer, ConnectionIntercept, Drop
from .intercept_holding import InterceptHolding
from .read_on import Read, ReadOn, ReadOnBudget
from .unsent import Unsent, or_now

__all__ = ["FaultRelay"]


class FaultRelay(FaultActing, InterceptHolding):
    """Both pumps of one connection on a faulted or intercepted route. Writes to a side are
    serialised by a lock, because the request pump also writes to the client (a synthesised
    error, an answer written by hand)."""

    def __init__(
        self,
        profile: Profile,
        cap: Optional[int],
        now: Callable[[], float],
        publish: Callable[[Event], None],
        conn: Connection,
        faults: Optional[ConnectionFaults],
        intercept: Optional[ConnectionIntercept] = None,
        read_on: Optional[ReadOnBudget] = None,  # shared by every connection's pump
    ) -> None:
        self.profile = profile
        self.cap = cap
        self.now = now
        self.conn = conn
        self.actions = ActionEvents(conn, now, publish)
        """Says what the proxy did to the frames (a fault, an intercept's step)."""
        self.faults = faults
        self.intercept = intercept
        self.locks = {Direction.C2S: trio.Lock(), Direction.S2C: trio.Lock()}
        self.scope = trio.CancelScope()
        """What ends the connection: its pumps' own, set when they start (`pump`)."""
        self._held_request: Optional[tuple[Frame, float]] = None
        """A request held by ``--intercept`` now: if it is lost, the client sent it all the
        same, and its flow (unanswered) needs its frame (`_record_held`)."""
        self._held_recorded = False
        """`_held_request` was recorded (the client went away while it was held)."""
        self.unsent = Unsent(conn, self.locks, now)
        """What the pumps read and never sent on, recorded when the connection ends."""
        self._lost_response: Optional[tuple[str, Optional[str]]] = None
        """The `LOST` step of a response held by ``--intercept`` (detail, method), said once
        the answer is recorded: the server sent it all the same, and its flow needs it,
        marked undelivered."""
        made = faults is not None or intercept is not None
        self.turns = AnswerTurns(made and not profile.replies_by_id)
        """The answers the proxy made (``--fault error``, ``--intercept``) waiting for the
        plugin's to earlier requests."""
        self._answer = functools.partial(self._send, Direction.S2C)
        """Sends an answer the proxy made (`AnswerTurns.release`)."""
        self._pumped: set[Direction] = set()
        """The directions whose pumps returned."""
        client = conn.client_reader = ChunkReader(conn.client.socket.fileno())
        conn.decided_at_read = True  # `arrived` at each read, read on behind a held frame too
        self.read_on = ReadOn(client, now, self._arrived, read_on)
        """What the client sends while the request pump holds a frame, read as it comes."""

    async def pump(self, conn: Connection, direction: Direction, scope: trio.CancelScope) -> None:
        """Forward one direction frame by frame until EOF, an error or a closing fault."""
        try:
            await self._pump(conn, direction, scope)
        finally:
            self._pumped.add(direction)
            if len(self._pumped) == len(Direction):  # the connection ended
                self.read_on.release()  # its share of what every connection may read on
                unsent = self.turns.not_sent()
                if unsent:
                    conn.add_to_reason(unsent)

    async def _pump(self, conn: Connection, direction: Direction, scope: trio.CancelScope) -> None:
        self.scope = scope  # both pumps of the connection share it
        requests = direction is Direction.C2S
        reader = self.read_on.reader
        if not requests:
            reader = ChunkReader(conn.sides(direction)[0].socket.fileno())
        decoder = self.profile.new_decoder(self.cap)
        self.unsent.pumping(direction, decoder.held, self.read_on if requests else None)
        while True:
            if conn.link is not None and conn.link.holds(conn.conn):
                await conn.link.until_caught_up(conn.conn)  # the recording trails: backpressure
            try:
                # Read on while a frame was held: met in order, at the time it was read.
                early = self.read_on.take() if requests else None
                data = await reader.read() if early is None else _bytes_of(early[1])
            except OSError as exc:
                await self.unsent.lost_behind(direction)  # a frame it was in the middle of
                if self._holding_response(direction):
                    self._mark_gone("the client reset the connection")
                conn.source_failed(direction, exc, scope)
                return
            except trio.Cancelled:
                await self.unsent.lost_behind(direction)
                raise
            if not data and self._holding_response(direction):
                # The answer held for this client has nobody to go to.
                await self._client_closed()
                return
            conn.last_activity = trio.current_time()
            # When the client sent what completes the frames below (requests only: a
            # response counts when it reaches the client, after any delay).
            sent_at = None
            if requests:
                sent_at = self.now() if early is None else early[0]
            if data:
                decoder.receive_data(data)
                if sent_at is not None and early is None:  # read on: marked as it was read
                    # The frames this completes may go on later (held, delayed, or behind
                    # one that is): what is decided about them as they arrive is decided now.
                    conn.arrived(direction, sent_at)
                    conn.marked_through = reader.taken
            else:
                decoder.receive_eof()
            pending = decoder.events()
            self.unsent.reading(direction, pending, sent_at)
            through = False
            try:
                for event in pending:
                    if isinstance(event, Frame):
                        # Held (intercepted, delayed) by the proxy itself: not idle meanwhile.
                        conn.holding += 1
                        try:
                            going = await self._frame(direction, event, sent_at)
                        finally:
                            conn.holding -= 1
                            conn.last_activity = trio.current_time()
                    elif isinstance(event, EndOfStream):
                        continue
                    else:  # framing errors and skipped bytes are not messages: forward as is
                        going = await self._send(direction, event.raw, sent_at=sent_at)
                        if going and isinstance(event, Discarded) and event.final:
                            # A frame too large to decode, whole: it takes a turn all the same.
                            going = await self._took_turn(direction)
                    if not going:
                        return
                through = True
            finally:
                if not through:  # the connection ends (cancelled, maybe inside a group)
                    await self.unsent.lost_behind(direction)
                self.unsent.read_through(direction)
            if not data:
                if direction is Direction.S2C:
                    self.turns.end()
                    if not await self.turns.release(self._answer):
                        return
                async with self.locks[direction]:
                    conn.end_of_stream(direction, self.now(), scope)
                return

    def _arrived(self, t: float) -> None:
        """The request pump read on at ``t``, behind a frame it holds (`ReadOn`)."""
        self.conn.last_activity = trio.current_time()
        self.conn.arrived(Direction.C2S, t)
        self.conn.marked_through = self.read_on.reader.taken

    async def _wait(self, direction: Direction, seconds: float) -> float:
        """Hold ``direction``'s pump ``seconds`` (a ``delay``, a ``slice``'s gap): the
        request pump reads on meanwhile (`ReadOn`), so what the client sends behind the frame
        keeps the time it was sent. Returns how long it held, as measured."""
        start = self.now()
        if direction is Direction.C2S:
            await self.read_on.during(seconds)
        else:  # an answer's time is when it reaches the client: nothing to read on for
            await trio.sleep(seconds)
        return self.now() - start

    async def _send(
        self,
        direction: Direction,
        data: bytes,
        piece: int = 0,
        gap: float = 0.0,
        sent_at: Optional[float] = None,
        frame: Optional[Frame] = None,
    ) -> bool:
        """Hand ``data`` to inspection and send it (in ``piece``-byte sends ``gap`` seconds
        apart when slicing). The side's lock is held throughout, so nothing else is written
        into the middle of a frame. ``sent_at``: when the client sent a request (its time in
        the recording); None records the time of sending. ``frame``: ``data`` is that frame,
        decoded here, which the tap takes rather than decoding it again (unless it is sent in
        slices). False when the connection ends."""
        if not data:
            return True
        conn = self.conn
        piece = piece or len(data)
        if piece < len(data):
            frame = None  # the tap decodes the slices as they are sent
        turn = self.locks[direction]
        try:
            await turn.acquire()
        except trio.Cancelled:  # the connection ended before its turn: never sent
            await self.unsent.lost(direction, data, or_now(sent_at, self.now))
            raise
        try:
            for start in range(0, len(data), piece):
                chunk = data[start : start + piece]
                seen = self.now() if sent_at is None else sent_at
                if stopped_by_limits(conn, direction, chunk, seen, self.scope, frame):
                    return False
                # Observed as it is sent, so that what never reaches its receiver is recorded
                # undelivered (`Connection.forward`); so are the pieces of a sliced frame that
                # never go, whether the write of one fails, waits for room when the connection
                # ends, or the connection ends between two.
                rest = data[start + piece :]
                try:
                    if not await conn.forward(direction, chunk, seen, self.scope, frame=frame):
                        conn.observe_undelivered(direction, rest, seen)
                        return False
                    conn.awaiting_reply = direction is Direction.C2S
                    if gap and rest:
                        await self._wait(direction, gap)
                except trio.Cancelled:
                    conn.observe_undelivered(direction, rest, seen)
                    raise
        finally:
            turn.release()
        return True

    async def _frame(
        self, direction: Direction, frame: Frame, sent_at: Optional[float] = None
    ) -> bool:
        """Hold the frame if it is intercepted, then apply the faults decided for it
        (``sent_at``: see `_send`). False when the connection ends."""
        if self.intercept is None:
            return await self._faulted(direction, frame, sent_at)
        watch = None
        if direction is Direction.C2S:  # a held response is watched for by the request pump
            watch = self._watch_client
            self._held_request = (frame, or_now(sent_at, self.now))
        try:
            ruling = await self.intercept.hold(
                direction, frame.payload, frame.size, self.now(), self._announce_held, watch
            )
        finally:
            self._held_request, self._held_recorded = None, False
            lost, self._lost_response = self._lost_response, None
            if lost is not None:  # the connection ended (the cancellation, maybe in a group)
                await self.unsent.lost(direction, frame.raw, self.now())
                self._said(direction, InterceptKind.LOST, *lost)
        if ruling is None:
            return await self._faulted(direction, frame, sent_at)
        decision = ruling.decision
        going = True
        if isinstance(decision, (Drop, Answer)):
            if direction is Direction.C2S:
                # Recorded though not forwarded, like a request a fault withholds.
                await self._withheld(direction, frame, sent_at)
            else:  # a response dropped: never recorded
                self._unrecorded(direction, ruling.learned)
        else:
            if ruling.payload is not frame.payload:  # edited: what was sent is recorded
                self._unrecorded(direction, ruling.learned)
                frame = self._framed(ruling.payload)
            going = await self._faulted(direction, frame, sent_at)
        detail, reply, waits = ruling.detail, None, None
        if isinstance(decision, Answer):
            reply = self._framed(ruling.payload)
            # In its turn, as a fault's answer: after the plugin's to the requests before it.
            waits = self.turns.hold(reply.raw, "--intercept")
            if waits is not None:
                answers = "answer" if waits == 1 else "answers"
                detail += f"; its answer waits for {waits:,} earlier {answers}"
        # After the frame, so that the event lands on the flow it decided.
        self._said(direction, ruling.kind, detail, ruling.method, ruling)
        if going and reply is not None and waits is None:
            going = await self._send(Direction.S2C, reply.raw, frame=reply)
        # An answer of the plugin's, decided on: it took its turn all the same.
        decided = direction is Direction.S2C and isinstance(decision, (Drop, Answer))
        if going and decided and self._takes_turn(direction, frame):
            going = await self._took_turn(direction)
        return going

    def _framed(self, payload: bytes) -> Frame:
        """``payload`` framed for sending, as a decoder would have yielded it."""
        raw = self.profile.frame_payload(payload)
        if self.profile.framing is Framing.LINE:  # the payload, then its newline
            return Frame(payload, terminator=raw[len(payload) :])
        return Frame(payload, header=raw[: len(raw) - len(payload)])  # its length, then it


def _bytes_of(read: Read) -> bytes:
    """A read's bytes; its error raised, in its turn."""
    if isinstance(read, OSError):
        raise read
    return read
