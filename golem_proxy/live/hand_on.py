"""How a proxied connection hands what it forwards to inspection: in this process (its tap,
decoded on the forwarding path with ``--enforce-limits`` or queued for the observer) or
through the handoff to an observing process of its own (its link). Every route's pumps reach
inspection only through these methods, whatever the observer mode, so that the bytes, what
was decided about them (undelivered, cut, withheld) and the close arrive in the order they
happened. `Connection` (connection.py) has them; the sockets are its business."""

from __future__ import annotations

import functools
from typing import Callable, Optional

from golem_core.framing import Frame

from ..events import ConnectionClosed, Direction, Event, ProxyAction
from .observer import Observer
from .observer_link import ObserverLink
from .tap import ConnectionTap

__all__ = ["HandsToInspection"]


class HandsToInspection:
    """The inspection side of a `Connection`: see the module docstring."""

    conn: int
    tap: Optional[ConnectionTap]
    observer: Optional[Observer]
    inline: bool
    link: Optional[ObserverLink]
    cut_marked: set[Direction]

    def _undelivered_why(self, direction: Direction) -> str:
        """Why bytes of ``direction`` never reached their receiver, when the caller does not
        say (`Connection` knows which side is gone)."""
        raise NotImplementedError

    def observe(
        self, direction: Direction, data: bytes, t: float, frame: Optional[Frame] = None
    ) -> None:
        """Hand forwarded bytes (``b""``: end of stream; ``frame``: they are that frame, as the
        forwarding path decoded it) to inspection. Never blocks.

        Every route hands bytes on once their write is done (`forward`), so that bytes that
        never went are marked before them (`observe_undelivered`), also with
        ``--enforce-limits``: its check comes before the write
        (`enforce_limits.stopped_by_limits`), and what is recorded comes after it, from a tap
        of its own. Decoding the frame once, before the
        write, would publish it before it is known whether it was delivered."""
        if self.link is not None:
            self.link.data(self.conn, direction, data, t)
            return
        tap = self.tap
        if tap is None:
            return
        if self.inline:
            # Decoded here, never shed, as the check before it was.
            if tap.failed is None:
                try:
                    tap.process(direction, data, t, frame)
                except Exception as exc:  # a decoding bug costs the inspection, not the relay
                    tap.fail(exc, t)
        elif self.observer is not None:
            self.observer.submit(tap, direction, data, t, frame)

    def observe_undelivered(
        self, direction: Direction, data: bytes, t: float, why: Optional[str] = None
    ) -> None:
        """Hand to inspection bytes read for ``direction``'s receiver that never reached it
        (writing them failed, the connection ended while they waited, or ``--enforce-limits``
        blocked them), marked so: the frames they end are recorded undelivered, saying
        ``why`` (by default "client gone" when that side reset or a write to it failed, else
        "connection ended")."""
        if not data:
            return
        why = why or self._undelivered_why(direction)
        if self.link is not None:
            self.link.undelivered(self.conn, direction, why, t)
        elif self.tap is not None and self.inline:
            self.tap.mark_undelivered(direction, why)
        elif self.tap is not None and self.observer is not None:
            self.observer.after_queued(functools.partial(self.tap.mark_undelivered, direction, why))
        self.observe(direction, data, t)

    def observe_cut(self, direction: Direction, t: float, how: str) -> None:
        """Hand to inspection the end of ``direction``'s stream that the proxy made itself
        (``how``: ``--fault truncate``), not its source: what it leaves unanswered says so
        (`ConnectionTap.cut`)."""
        self.mark_cut(direction, t, how)
        self.observe(direction, b"", t)

    def mark_cut(self, direction: Direction, t: float, how: str) -> None:
        """`observe_cut` for an end of ``direction``'s stream handed on later, whenever the
        connection ends (the proxy ends it, and reads no more of that side)."""
        self.cut_marked.add(direction)
        if self.link is not None:
            self.link.cut(self.conn, direction, how, t)
        elif self.tap is not None and self.inline:
            self.tap.cut(direction, how)
        elif self.tap is not None and self.observer is not None:
            self.observer.after_queued(functools.partial(self.tap.cut, direction, how))

    def observe_unsent_lost(
        self, direction: Direction, size: int, t: float, why: Optional[str] = None
    ) -> None:
        """``size`` bytes read for ``direction``'s receiver that never reached it and cannot be
        handed to inspection either (their writer's turn never came: `Unsent.in_order`): a
        gap (`observe_lost`) that says they were not sent on, and ``why`` (by default as
        `observe_undelivered` says it)."""
        self.observe_lost(direction, size, t, unsent=why or self._undelivered_why(direction))

    def observe_lost(self, direction: Direction, size: int, t: float, unsent: str = "") -> None:
        """``size`` bytes of ``direction`` read and never handed to inspection, nor marked:
        recorded as a gap (``unobserved``), the stream taken up at the next frame;
        ``unsent``: they were not sent on either, and why (the gap says so)."""
        if size <= 0:
            return
        if self.link is not None:
            self.link.lose(self.conn, direction, size, t, unsent)
        elif self.tap is not None and self.inline:
            self.tap.lose(direction, size, t, unsent)
        elif self.tap is not None and self.observer is not None:
            self.observer.lose(self.tap, direction, size, t, unsent)

    def arrived(self, direction: Direction, t: float) -> None:
        """Bytes of ``direction`` read at ``t`` (their time in the recording) complete frames
        that may be forwarded, so decoded, only later (held by ``--intercept``, ``--fault
        delay``, or behind such a frame): mark the moment in order with what was observed
        so far, so that what is decided about a frame as it arrives (the MCP tool calls in
        flight when the server sent it) is decided then (`ConnectionTap.arrived`). Never
        blocks."""
        if self.link is not None:
            self.link.arrived(self.conn, direction, t)
            return
        tap = self.tap
        if tap is None or tap.annotate is None:
            return
        if self.inline:
            tap.arrived(direction, t)
        elif self.observer is not None:
            self.observer.after_queued(functools.partial(tap.arrived, direction, t))

    def unrecorded(self, direction: Direction, learned: tuple[str, ...], t: float) -> None:
        """A frame of ``direction`` arrived that is not recorded as it came (held and dropped,
        edited, a fault's): its tap learns, in order with what was observed so far,
        ``learned``, the values redaction replaces in it, found here (`Ruling.learned`,
        `FrameAction.learned`), to hide them where they come back
        (`ConnectionTap.learn_unrecorded`). Only those strings wait for the tap, never the
        frame. Never blocks."""
        if self.link is not None:
            self.link.unrecorded(self.conn, direction, learned, t)
        elif self.tap is not None and self.inline:
            self.tap.learn_unrecorded(learned, t)
        elif self.tap is not None and self.observer is not None:
            self.observer.after_queued(functools.partial(self.tap.learn_unrecorded, learned, t))

    def publish_in_order(self, publish: Callable[[Event], None], event: Event) -> None:
        """Publish ``event`` after the bytes observed before it (a fault's event after the
        frame it acted on, which its tap learns first: `ConnectionTap.acted_on`)."""
        tap = self.tap
        learn = None
        if tap is not None and isinstance(event, ProxyAction):
            learn = functools.partial(tap.acted_on, event)
        if self.observer is None or self.inline:
            if learn is not None and self.inline:
                learn()
            publish(event)
        else:
            if learn is not None:
                self.observer.after_queued(learn)
            self.observer.submit_event(publish, event)

    def observe_close(
        self, closed: ConnectionClosed, publish: Callable[[ConnectionClosed], None]
    ) -> None:
        """Report the close after everything this connection forwarded was decoded."""
        if self.link is not None:
            self.link.publish(closed)  # the observing process says the gaps (`closing`)
            return
        if self.observer is None or self.inline:
            if self.tap is not None:
                self.tap.closing(closed.t)
            publish(closed)
            return
        if self.tap is not None:
            self.observer.after_queued(functools.partial(self.tap.closing, closed.t))
        self.observer.submit_event(publish, closed)  # type: ignore[arg-type]
        if self.tap is not None:
            self.observer.forget(self.tap)
