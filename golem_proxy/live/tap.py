"""The tap: decodes a copy of the bytes one connection forwarded and turns them into events.

Per connection, one incremental decoder per direction, one correlator pairing responses with
requests, and the profile's contract checks. The tap never sits on the forwarding path: the
relay hands chunks to the `Observer` (observer.py), which feeds them here when forwarding has
nothing to do. Memory stays bounded whatever the peers send:

* a frame larger than ``observe_frame_limit`` is never held: its bytes stream through a SHA-256
  and it is reported as `ObservationLost` (``frame-too-large``) with its header and size; one
  whose parse would hold more than ``observe_parse_limit`` is never parsed, and reported so;
* at most ``max_pending`` requests (``max_pending_bytes`` of them) wait for an answer; the
  oldest beyond that are let go and reported (``evicted``); notifications are never held;
* after bytes the observer had to drop (``behind``), the direction's decoder starts again at
  the next frame boundary (`TapInput.lose`), and the gap is reported with its size, the
  unobserved rest of the frame they cut into included (a digested start is said first);
* an exception while decoding costs this connection's inspection, reported once as a gap.

Each whole frame decoded goes to the connection's `FramePublisher` (tap_frames.py), which
checks, pairs, redacts, numbers and marks it and publishes its events; each gap goes to its
`GapPublisher` (tap_gaps.py), which words and publishes it. What the forwarding side says
besides the bytes (undelivered, cut, arrived, resumed after a restart) is tap_notes.py's.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Optional

from golem_core.catalogue import MethodCatalogue
from golem_core.contract import Violation
from golem_core.decoders import Chunk
from golem_core.framing import Discarded, EndOfStream, Frame, FrameError, FrameErrorKind
from golem_core.profiles import Profile

from ..events import (
    BytesDiscarded,
    Direction,
    FramingErrorSeen,
    GapReason,
    StreamEnded,
    ViolationSeen,
    Where,
)
from .redact import Redactor
from .tap_frames import Annotator, FramePublisher, Publish
from .tap_gap_answer import gap_answers
from .tap_gaps import CUT_BY_END, CUT_BY_LOSS, GapPublisher
from .tap_input import TapInput, requests_waiting, truncated
from .tap_limits import (
    DEFAULT_LIMITS,
    FrameDigest,
    ObserveLimits,
    TapVerdict,
    is_unobserved_frame,
    read_before_cut,
    split_header,
)
from .tap_notes import TapNotes
from .tap_pairing import ConnectionPairing
from .tap_parse import parse_fast

__all__ = ["Annotator", "ConnectionTap", "ObserveLimits", "TapVerdict", "parse_fast"]


class ConnectionTap(TapNotes):
    """Decoding state of one connection (both directions). Feed it with `process`, or with
    `feed` and `step` to decode in slices."""

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
        limits: ObserveLimits = DEFAULT_LIMITS,
        annotate: Optional[Annotator] = None,
    ) -> None:
        self.conn = conn
        self.route = route
        self.profile = profile
        self.publish = publish
        self.cap = profile.default_cap if cap is None else cap
        self.limits = limits
        self.annotate = annotate
        """Adds what the session decided about a frame as it is decoded (the MCP tool call it
        belongs to: `golem_proxy.live.attribution`), before anyone sees it; for a frame
        that arrived before it could be decoded (`arrived`), as it arrived."""
        # Frames over the observation limit (but within the protocol's cap) come out of the
        # decoder as "oversized" and are digested here instead of reported as violations.
        self._decoder_cap = min(self.cap, limits.frame)
        self._inputs = {
            Direction.C2S: TapInput(profile, self._decoder_cap),
            Direction.S2C: TapInput(profile, self._decoder_cap),
        }
        self._pairing = ConnectionPairing(profile, limits)
        self._gaps = GapPublisher(conn, route, publish, limits)
        """Publishes what this tap did not observe (its gaps)."""
        self._frames = FramePublisher(
            conn,
            route,
            profile,
            publish,
            self._pairing,
            self._violated,
            self._gaps.evicted,
            self._unparsed,
            parse_limit=limits.parse,
            catalogue=catalogue,
            redactor=redactor,
            annotate=annotate,
        )
        """Publishes the frames this tap decodes, with their violations and exchanges."""
        self._digests: dict[Direction, FrameDigest] = {}
        self._cut: dict[Direction, str] = {}
        """The ends of stream the proxy made itself, and how (`cut`)."""
        self._sent_short: set[Direction] = set()
        """Directions whose last frame the proxy sent in part on purpose (``--fault
        truncate``): a frame truncated there is the one the receiver got (`acted_on`)."""
        self.undelivered_late: dict[Direction, tuple[int, str]] = {}
        """Per direction, bytes said undelivered after frames they ended were published as
        delivered, and why (`undelivered_last`)."""
        self.carried = False
        """Whether any byte of this connection reached the tap, or was forwarded past it
        (`lose`), either way: a connection that carried nothing is told apart by it, as
        a byte read and then withheld or undelivered is a byte that crossed to the proxy."""
        self.failed: Optional[str] = None
        """Why decoding stopped for this connection (a bug in the tap), or None."""

    @property
    def held(self) -> int:
        """Bytes this connection's inspection holds now (partial frames, waiting requests)."""
        return sum(side.buffered for side in self._inputs.values()) + self._pairing.pending_bytes

    def process(
        self, direction: Direction, data: Chunk, t: float, frame: Optional[Frame] = None
    ) -> Optional[TapVerdict]:
        """Decode a forwarded chunk (``b""`` means end of stream; ``frame``: see `feed`) and
        publish all its events. Returns a verdict naming the first frame that breaks the
        limits, if any."""
        self.feed(direction, data, t, frame)
        verdict: Optional[TapVerdict] = None
        more = True
        while more:
            _, more, found = self.step(direction, t, 1 << 30)
            verdict = verdict or found
        return verdict

    def feed(
        self, direction: Direction, data: Chunk, t: float = 0.0, frame: Optional[Frame] = None
    ) -> None:
        """Hand a forwarded chunk (``b""``: end of stream) to the direction's decoder. With
        ``frame``, ``data`` is that one frame, decoded by the forwarding path: it is taken as
        it is when it can be (`tap_input`), not framed again."""
        source = self._inputs[direction]
        if not data:
            self.report_lost(direction, t)
            source.end()
            return
        self.carried = True
        if source.resync or source.skip:
            rest = source.catch_up(data)
            if rest is None:
                return
            if len(rest) < len(data):
                frame = None  # bytes of the frame before it came first: not that frame
            data = rest
        if source.lost:  # decoding resumes here: the gap before what it decodes
            self.report_lost(direction, t)
        if not data or (frame is not None and source.take(frame)):
            return
        source.receive(data)

    def lose(self, direction: Direction, size: int, t: float, unsent: str = "") -> None:
        """``size`` bytes of ``direction`` were forwarded but never reached the tap (the
        observer was behind): drop the partial frame (one being digested is said, as far as
        it was), and pick the stream up again at the next frame boundary. The gap is reported
        once decoding resumes (or at the end). With ``unsent`` (why), they were not forwarded
        either, and the gap says so."""
        self.carried = self.carried or size > 0
        self._gaps.say_evicted(direction)
        if unsent and size > 0:  # nor sent on, and why (`Connection.observe_unsent_lost`)
            self._gaps.unsent(direction, size, unsent)
        digest = self._digests.get(direction)
        if digest is not None:  # what was observed of it is said; the rest is in the gap
            self._finish_digest(direction, digest, t, cut=CUT_BY_LOSS)
        self._inputs[direction].lose(size, t)
        self._pairing.requests_lost(direction)
        self._pairing.answers_lost(direction.reverse)

    def closing(self, t: float) -> None:
        """The connection closed: say now what no later bytes or end of stream said: the gaps
        `lose` counted, and a frame the close cut short (its start held here, no end of stream
        came: the proxy stopping), reported truncated as an end of stream would. Never
        raises: a failure stops this connection's decoding (`fail`), as any other does."""
        if self.failed is not None:
            return
        try:
            for direction in Direction:
                self._gaps.say_evicted(direction)
                source = self._inputs[direction]
                if not source.ended and (source.mid_frame or direction in self._digests):
                    self.process(direction, b"", t)  # its gap first, then the cut frame
                else:
                    self.report_lost(direction, t)
            self._frames.marks_passed()
        except Exception as exc:
            self.fail(exc, t)

    def report_lost(self, direction: Direction, t: float) -> None:
        """Publish the gap `lose` counted on ``direction`` since the last report, if any."""
        lost, since = self._inputs[direction].take_lost(t)
        if lost:
            self._gaps.lost(direction, t, lost, since)

    def step(
        self, direction: Direction, t: float, limit: int
    ) -> tuple[int, bool, Optional[TapVerdict]]:
        """Handle at most ``limit`` decoder events. Returns how many it handled, whether more
        are ready (call again before feeding this direction again) and any limits verdict."""
        source = self._inputs[direction]
        verdict: Optional[TapVerdict] = None
        for used in range(limit):
            event = source.next_event()
            if event is None or isinstance(event, EndOfStream):
                self._gaps.say_evicted(direction)
            if event is None:
                return used, False, verdict
            found = self._handle(direction, event, t)
            verdict = verdict or found
            if isinstance(event, EndOfStream):
                return used + 1, False, verdict
        return limit, True, verdict

    def fail(self, exc: BaseException, t: float = 0.0) -> None:
        """Stop decoding this connection after an unexpected error, saying so once (on stderr
        and as a gap in the event stream); its bytes are still forwarded."""
        self.failed = f"{type(exc).__name__}: {exc}"
        for source in self._inputs.values():
            source.stop()
        self._pairing.clear()
        self._digests.clear()
        detail = (
            f"decoding of connection {self.conn} stopped ({self.failed}); "
            "its bytes are still forwarded"
        )
        print(f"golem-proxy: {detail}", file=sys.stderr)
        self._gaps.gap(Direction.C2S, t, GapReason.OBSERVER_FAILED, 0, detail)

    def outstanding(self) -> int:
        """Requests waiting for an answer, both ways."""
        return len(self._pairing)

    def answers_awaited(self) -> bool:
        """Whether the client's requests may still wait for answers, as far as decoded
        (`requests_waiting`, else `ConnectionPairing.awaited`), or decoding stopped."""
        if self.failed is not None:
            return True
        client, server = self._inputs[Direction.C2S], self._inputs[Direction.S2C]
        waiting = requests_waiting(self.profile, client, server)
        return self._pairing.awaited(Direction.C2S) if waiting is None else waiting

    def _handle(self, direction: Direction, event: object, t: float) -> Optional[TapVerdict]:
        if isinstance(event, Frame):
            return self._frames.frame_decoded(direction, event, t)
        digest = self._digests.get(direction)
        if digest is not None:
            if isinstance(event, Discarded):
                digest.add(event.raw)
                if event.final:
                    self._finish_digest(direction, digest, t)
                return None
            # Truncated inside the frame being digested: report what was seen, then go on.
            self._finish_digest(direction, digest, t, cut=CUT_BY_END)
            if isinstance(event, EndOfStream):
                # A line's decoder ends a skipped line with no error (only the oversized one
                # it said first): this line, within the protocol's cap, was cut all the same.
                event = truncated("inside a frame over the observation limit")
        if isinstance(event, EndOfStream):
            self._stream_ended(direction, t)
            return None
        if isinstance(event, FrameError):
            if is_unobserved_frame(event, self._decoder_cap, self.cap):
                header, first = split_header(self.profile, event.raw)
                self._digests[direction] = FrameDigest(header, first, event.declared_length)
                return None
            if event.kind is FrameErrorKind.OVERSIZED and self._decoder_cap < self.cap:
                # The decoder ran with the observation limit; the cap broken is the protocol's.
                limit, cap = f"{self._decoder_cap}-byte", f"{self.cap}-byte"
                event = dataclasses.replace(event, detail=event.detail.replace(limit, cap))
            undelivered, delivered = self._frames.undelivered(direction)
            raw, redacted = self._frames.scrubbed(event.raw)
            # A frame cut short by the proxy's own end of its stream (it stopped reading): no
            # side's framing error, what was read of it is said instead. One the proxy sent in
            # part on purpose is recorded as its receiver got it, a truncated frame.
            truncated_here = (
                event.kind is FrameErrorKind.TRUNCATED and direction not in self._sent_short
            )
            cut = self._cut.get(direction, "") if truncated_here else ""
            detail = read_before_cut(self.profile, event.raw, digest, cut) if cut else ""
            self.publish(
                FramingErrorSeen(
                    **self._where(direction, t),
                    kind=event.kind,
                    detail=detail or event.detail,
                    raw=raw,
                    recoverable=event.recoverable,
                    declared_length=event.declared_length,
                    undelivered=undelivered,
                    delivered_bytes=min(delivered, len(event.raw)),
                    redacted=redacted,
                    cut=cut,
                )
            )
            if not cut:
                self._violated(direction, None, t, self.profile.frame_violation(event))
            if not event.recoverable and self._inputs[direction].ended:
                # The end cut a frame (a plugin killed while it wrote its answer): the decoder
                # says so and stops, with no end of stream of its own after it.
                self._stream_ended(direction, t)
            what = f"{direction.value} {event.kind.value} frame: {event.detail}"
            return None if cut else TapVerdict(what)
        if isinstance(event, Discarded):
            undelivered, delivered = self._frames.undelivered(direction)
            raw, redacted = self._frames.scrubbed(event.raw)
            self.publish(
                BytesDiscarded(
                    **self._where(direction, t),
                    raw=raw,
                    final=event.final,
                    undelivered=undelivered,
                    delivered_bytes=min(delivered, len(event.raw)),
                    redacted=redacted,
                )
            )
        return None

    def _finish_digest(
        self,
        direction: Direction,
        digest: FrameDigest,
        t: float,
        cost: int = 0,
        why: str = "",
        cut: str = "",
    ) -> None:
        """Say a frame was not observed: too large to hold (its digest made as it streamed)
        or, with ``cost``, whole but too costly to parse (`_unparsed`; ``why``: its bytes
        never reached their receiver; else as `mark_undelivered` said). With ``cut``, only
        its first bytes were digested (the stream ended, or the rest was lost)."""
        self._digests.pop(direction, None)
        # A whole frame's id, read from its ends, may say which request it answers.
        answered = None if cut else gap_answers(self.profile, self._pairing, direction, digest)
        if answered is None or (answered.request is None and not answered.unseen):
            self._pairing.unobserved(direction)
        answers = None if answered is None or answered.request is None else answered.request
        why = why if cost else self._frames.undelivered(direction)[0]
        self._gaps.unobserved(direction, digest, t, cost, why, cut, answers)

    def _unparsed(self, direction: Direction, frame: Frame, t: float, cost: int, why: str) -> None:
        # Digested as a frame over the frame limit is: all its bytes after its header.
        digest = FrameDigest(frame.header, frame.payload, None)
        digest.add(frame.terminator)
        self._finish_digest(direction, digest, t, cost, why)

    def _stream_ended(self, direction: Direction, t: float) -> None:
        """``direction``'s side ended its stream, every byte of it decoded: the requests it
        was to answer never will be on this connection. Said now (`StreamEnded`) when the
        other side's stream is still open, so the connection's close may be far off (a GOLEM
        client that is not reading when its plugin goes away), or when the proxy ended it (a
        cut, which the close would not say). Called after what the end cut
        short was said (a truncated frame: then instead of the decoder's end of stream, which
        does not follow it)."""
        cut = self._cut.get(direction, "")
        if self._inputs[direction.reverse].ended and not cut:
            return  # both ended: the close follows at once and says it (not who ended this)
        unanswered = self._pairing.unanswerable(direction.reverse)
        if unanswered:
            self.publish(StreamEnded(**self._where(direction, t), unanswered=unanswered, cut=cut))

    def _where(self, direction: Direction, t: float) -> Where:
        return Where(conn=self.conn, route=self.route, direction=direction, t=t)

    def _violated(
        self,
        direction: Direction,
        index: Optional[int],
        t: float,
        found: Violation,
        orphan: bool = False,
    ) -> None:
        self.publish(
            ViolationSeen(
                **self._where(direction, t),
                frame_index=index,
                violation=found,
                orphan=orphan,
            )
        )
