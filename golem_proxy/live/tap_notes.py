"""What the forwarding side tells a connection's tap besides the bytes it feeds (tap.py): that
what follows never reached its receiver, that an end is the proxy's cut, where a stream it
followed without decoding ends, when frames held on their way arrived, the values a frame not
recorded as it came teaches redaction, a server's request it withheld, and, after the
observing process was replaced, where the connection's numbering, pairing and streams go on.
Each is said in order with the bytes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Optional

from ..events import Direction, FaultInjected, FrameSeen, ProxyAction
from .tap_frames import FramePublisher
from .tap_gaps import GapPublisher
from .tap_input import TapInput
from .tap_limits import FrameDigest
from .tap_pairing import ConnectionPairing

__all__ = ["TapNotes"]


class TapNotes:
    """Mixed into `ConnectionTap`, whose decoding state these notes change."""

    failed: Optional[str]
    fail: Callable[[BaseException, float], None]
    _inputs: dict[Direction, TapInput]
    _pairing: ConnectionPairing
    _gaps: GapPublisher
    _frames: FramePublisher
    undelivered_late: dict[Direction, tuple[int, str]]
    _digests: dict[Direction, FrameDigest]
    _cut: dict[Direction, str]
    _sent_short: set[Direction]

    def learn_unrecorded(self, learned: Sequence[str], t: float) -> None:
        """Hide in later frames ``learned``, the values redaction replaces in a frame not
        recorded as it arrived, found by the forwarding side (`Connection.unrecorded`;
        `FramePublisher.learn`); called at ``t``, ahead of what went instead."""
        if self.failed is None:
            try:
                self._frames.learn(learned)
            except Exception as exc:  # as in decoding: it costs this connection's inspection
                self.fail(exc, t)

    def mark_undelivered(self, direction: Direction, why: str) -> None:
        """The bytes of ``direction`` fed from now on never reached their receiver (``why``:
        ``client gone``, …): every frame they end is published undelivered. Called in order
        with the bytes, after every frame before them was handled: the frame in progress has
        had its bytes so far delivered."""
        buffered = self._inputs[direction].buffered
        digest = self._digests.get(direction)
        if digest is not None and digest.delivered is None:  # the frame in progress
            digest.delivered = digest.size + buffered
        self._frames.mark_undelivered(direction, why, buffered)

    def undelivered_last(self, direction: Direction, size: int, why: str) -> None:
        """The last ``size`` bytes of ``direction`` fed so far, handed on before their write (a
        spool's), never reached their receiver (``why``), nor do those fed from now on: as
        `mark_undelivered` said before them, the frame in progress delivered but for those.
        Bytes among them of frames published already, as delivered, are counted in
        `undelivered_late`: the connection's close says them."""
        buffered = self._inputs[direction].buffered
        digest = self._digests.get(direction)
        in_progress = buffered
        if digest is not None and digest.delivered is None:  # the frame in progress
            in_progress += digest.size
            digest.delivered = max(0, in_progress - size)
        self._frames.mark_undelivered(direction, why, max(0, buffered - size))
        if size > in_progress:
            late, _ = self.undelivered_late.get(direction, (0, why))
            self.undelivered_late[direction] = (late + size - in_progress, why)

    def acted_on(self, step: ProxyAction) -> None:
        """The proxy did ``step`` to the frame of its direction fed last (a fault's or an
        intercept's event, handed here in order with the bytes, after that frame's). A request
        of the server's own it withheld (`ProxyAction.withholds_request`) never reached the
        client, which is then not to answer it: the end of the client's stream does not name
        it (`StreamEnded`), as the proxy's doing is no side's. (A client's request withheld
        stays waiting: the proxy may answer it in the server's place.)"""
        if isinstance(step, FaultInjected) and step.fault == "truncate":
            # The frame it hit is the part the proxy sent before it closed: its receiver got
            # a truncated frame, recorded so (docs/faults.md), not one the proxy stopped
            # reading (it read all of it): `cut` says how the stream ended, not that frame.
            self._sent_short.add(step.direction)
        if self.failed is None and step.server_request and step.withholds:
            last = self._frames.last_index(step.direction)
            self._pairing.withheld(step.direction, last, step.message_id)

    def cut(self, direction: Direction, how: str) -> None:
        """The end of ``direction``'s stream fed next is the proxy's, not its side's (``how``:
        ``--fault truncate``): what it leaves unanswered says so (`StreamEnded.cut`). Called
        in order with the bytes, before that end."""
        self._cut[direction] = how

    def ends_inside(self, direction: Direction, remaining: int) -> None:
        """The forwarding side, which followed ``direction``'s framing without decoding it,
        says its stream ends inside a frame (``remaining`` bytes of it still to come, 0: not
        known): called before that end of stream, so that a stream whose last frame lost its
        start here is reported truncated all the same (`TapInput.ends_inside`)."""
        self._inputs[direction].ends_inside(remaining)

    def arrived(self, direction: Direction, t: float) -> None:
        """Frames of ``direction`` were read at ``t`` (the time they are fed with) by a
        forwarding path that may hold them before they go on (``--intercept``, ``--fault
        delay``): called in order with the chunks, when they arrived, so that the session
        decides about them as they arrived, not as they are decoded. Marks pile up, oldest
        first, while that path reads on behind a frame it holds (read_on.py)."""
        self._frames.arrived(direction, t)

    def resume(
        self,
        next_index: tuple[int, int],
        recorded: Sequence[FrameSeen] = (),
        unread: Sequence[tuple[Direction, Any]] = (),
    ) -> None:
        """The connection was open when the observing process before this one died: its frames
        are numbered on from ``next_index`` (client's, server's), and its pairing goes on from
        what the recording shows in flight (`ConnectionPairing.take_over`)."""
        self._frames.number_from(next_index)
        self._pairing.take_over(recorded, unread)

    def resumed(self, direction: Direction, lost: int, t: float, unrecorded: int) -> None:
        """After a restart, ``direction`` goes on here, at a frame boundary; ``lost`` bytes of
        it crossed while no observing process recorded them (``unrecorded``: at most that many
        more of the connection's, handed to the one that died, may be missing too)."""
        self._gaps.restarted(direction, lost, t, unrecorded)
