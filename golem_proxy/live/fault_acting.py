"""Carrying out what ``--fault`` decided for a frame on a faulted route (fault_relay.py): a
delay held, a request or an answer withheld (recorded or not, an error answered in its turn),
a frame cut short, corrupted or sliced, and the turns of the answers the proxy makes
(`AnswerTurns`), for `FaultRelay`, whose pumps, sends and locks these use."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Callable, Optional

import trio

from golem_core.framing import Frame

from ..events import Direction
from ..proxy_actions import RESET_CUT, TRUNCATE_CUT
from .action_events import ActionEvents
from .answer_turns import AnswerTurns, takes_turn
from .connection import Connection
from .faults import ConnectionFaults, FaultKind, FrameAction
from .intercept import ConnectionIntercept
from .unsent import Unsent, or_now

__all__ = ["FaultActing"]


class FaultActing:
    """Mixed into `FaultRelay`, whose connection, faults and sends these act through."""

    conn: Connection
    faults: Optional[ConnectionFaults]
    intercept: Optional[ConnectionIntercept]
    turns: AnswerTurns
    actions: ActionEvents
    unsent: Unsent
    locks: dict[Direction, trio.Lock]
    scope: trio.CancelScope
    now: Callable[[], float]
    _answer: Callable[[bytes], Awaitable[bool]]

    async def _send(
        self,
        direction: Direction,
        data: bytes,
        piece: int = 0,
        gap: float = 0.0,
        sent_at: Optional[float] = None,
        frame: Optional[Frame] = None,
    ) -> bool:
        raise NotImplementedError

    async def _wait(self, direction: Direction, seconds: float) -> float:
        raise NotImplementedError

    def _takes_turn(self, direction: Direction, frame: Frame) -> bool:
        """Whether ``frame``, decided on or sent, takes a turn (`AnswerTurns`), as the faults
        type it or else as the intercept read it."""
        if self.faults is not None:
            return self.faults.takes_turn(direction, frame.payload)
        typed = self.intercept.typed[direction] if self.intercept is not None else None
        return takes_turn(direction, typed)

    async def _withheld(self, direction: Direction, frame: Frame, sent_at: Optional[float]) -> None:
        """Record a request the proxy withholds (a fault, an intercept), after what its
        direction's writer is writing (`Unsent.in_order`)."""
        t = or_now(sent_at, self.now)
        await self.unsent.in_order(
            direction,
            lambda: self.conn.observe(direction, frame.raw, t, frame),
            lambda: self.conn.observe_unsent_lost(direction, frame.size, t, "withheld"),
        )

    def _unrecorded(self, direction: Direction, learned: tuple[str, ...]) -> None:
        """A frame arrived that is not recorded as it came (a response dropped, a frame
        edited or corrupted): the tap learns ``learned``, the values the rules
        replace in it as it came (`Ruling.learned`, `FrameAction.learned`), before what went
        instead, so that neither that nor a later frame (the next request repeating a token,
        an answer echoing it) shows them (`Connection.unrecorded`)."""
        if learned:
            self.conn.unrecorded(direction, learned, self.now())

    async def _faulted(
        self, direction: Direction, frame: Frame, sent_at: Optional[float] = None
    ) -> bool:
        """Apply the faults decided for one frame (``sent_at``: see `_send`); without
        ``--fault``, send it."""
        if self.faults is None:
            # Counted as the faults count (``--intercept`` may answer a request in its turn).
            turn = self.turns.by_position and self._takes_turn(direction, frame)
            if turn and direction is Direction.C2S:
                self.turns.took(direction)
            going = await self._send(direction, frame.raw, sent_at=sent_at, frame=frame)
            if going and turn and direction is Direction.S2C:
                going = await self._took_turn(direction)
            return going
        # One copy of the wire bytes: `_act` hands the tap the frame decoded here when the
        # fault sends these very bytes (``action.data is raw``), so it is not decoded again.
        raw = frame.raw
        action = self.faults.decide(direction, raw, len(frame.header), frame.payload)
        if direction is Direction.C2S and action.turn and action.withhold is None:
            self.turns.took(direction)  # before it goes: its answer may come back first
        going = await self._act(direction, frame, raw, sent_at, action)
        if going and direction is Direction.S2C and action.turn:
            # Counted once it went (or was withheld): one held behind it goes after it.
            going = await self._took_turn(direction)
        return going

    async def _took_turn(self, direction: Direction) -> bool:
        """A frame that takes a turn (`FrameAction.turn`) went on, or was decided on: count
        it, and send the proxy's answers whose turn came with it. False when the connection
        ends."""
        self.turns.took(direction)
        return direction is Direction.C2S or await self.turns.release(self._answer)

    async def _act(
        self,
        direction: Direction,
        frame: Frame,
        raw: bytes,
        sent_at: Optional[float],
        action: FrameAction,
    ) -> bool:
        """`_faulted` with ``--fault``: carry the decision out (``raw``: the frame's bytes
        the decision was made on)."""
        if action.delay:  # said once the frame went on (`ActionEvents.faults`)
            start = self.now()
            try:
                action.held = await self._wait(direction, action.delay)
            except trio.Cancelled:
                # The connection ended during the hold: the frame is recorded undelivered,
                # then the hold, so that no view takes its receiver (or the server's wait
                # for it) for what kept it.
                action.held = self.now() - start
                if await self.unsent.lost(direction, raw, or_now(sent_at, self.now)):
                    self.actions.delays_ended(direction, action)
                raise
        rule = action.withhold
        if rule is not None:
            if direction is Direction.C2S or action.server_request:
                # Recorded though not forwarded: its sender did send it, and its flow needs it
                # (a server's own request too: no client request is its row).
                await self._withheld(direction, frame, sent_at)
            else:  # a response withheld: never recorded
                self._unrecorded(direction, action.learned)
            if rule.kind is FaultKind.ERROR:
                assert action.reply is not None
                # In its turn: after the plugin's answers to the requests sent before it.
                earlier = self.turns.hold(action.reply, "--fault error")
                if earlier is not None:
                    action.answer_waits(earlier)
                self.actions.faults(direction, action)
                return earlier is not None or await self._send(Direction.S2C, action.reply)
            self.actions.faults(direction, action)
            if rule.kind is FaultKind.RESET:
                self.conn.note(f"fault: reset ({rule.spec})", True)
                self.conn.reset.update(("client", "upstream"))
                # Both streams end by the fault, which is how the requests left unanswered
                # read (`ConnectionTap.cut`), as after ``--fault truncate``.
                for ended in (Direction.S2C, Direction.C2S):
                    self.conn.mark_cut(ended, self.now(), RESET_CUT)
                self.scope.cancel()
                return False
            return True  # dropped
        if action.truncate_at is not None:
            # What was read behind the cut is never sent; as stream bytes after the truncated
            # frame its decoder would take them for its rest, so the close says how many.
            unsent = self.unsent.drop_behind(direction)
            self._unrecorded(direction, action.learned)
            self.actions.faults(direction, action)
            await self._send(direction, action.data[: action.truncate_at], sent_at=sent_at)
            self.conn.eof[direction] = True
            async with self.locks[direction]:
                # The side did not close: what it leaves unanswered is the proxy's doing.
                self.conn.observe_cut(direction, self.now(), TRUNCATE_CUT)
            if direction is Direction.C2S:  # ending the connection, it reads no more answers
                self.conn.mark_cut(Direction.S2C, self.now(), TRUNCATE_CUT)
            self.conn.note(f"fault: truncated a frame ({direction.value})", True)
            if unsent:
                self.conn.add_to_reason(f"{unsent:,} bytes read behind a truncated frame not sent")
            with contextlib.suppress(OSError):
                self.conn.sides(direction)[1].socket.shutdown(trio.socket.SHUT_WR)
            self.scope.cancel()
            return False
        # A corrupted frame is no longer the frame decoded: the tap decodes what is sent.
        sent = frame if action.data is raw else None
        if sent is None:
            self._unrecorded(direction, action.learned)
        going = await self._send(
            direction, action.data, action.slice_size or 0, action.gap, sent_at, sent
        )
        self.actions.faults(direction, action)  # after the frame: on its flow
        return going
