"""The fast reader: a recording's events read in blocks, whole exchanges taken by one regex.

`RecordingReader` decodes every line as JSON and checks each member: ~30 µs an exchange, too
slow to load half a million of them into a viewer. Most of a trace is exchanges of a sequential
client: a request frame, its answer and the exchange line, one after the other. Those three
lines are taken at once by `exchange_pattern.EXCHANGE`, strict enough that only lines the exact
reader would accept match; only the payloads are parsed, each by itself, and the events are
built from them exactly as `line_events` builds them. Every other line (opens and closes,
violations, faults, gaps, frames in another layout, damaged lines, a version-1 file) goes
through the exact reader, in order, so the events are equal to what it reads, errors and their
line numbers included, and so are its watches of the lines' ``seq`` and ``t``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any, Optional

from golem_core.messages import Role
from golem_core.profiles import Profile

from ..events import Direction, Event, ExchangeCompleted, FrameSeen
from ..fast_json import NOT_DECODED, decode_exactly
from .exchange_pattern import EXCHANGE, Groups
from .line_guard import check_line
from .reader import RecordingReader
from .schema import MAX_DEPTH, RecordingError

__all__ = ["BLOCK", "FastRecordingReader"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# JSON's own scanner, without the whitespace matching around it that `json.loads` adds: a
# payload with whitespace around it, NaN or anything else unusual is left to the exact reader.
_scan_json = json.scanner.make_scanner(json.JSONDecoder(parse_constant=_no_constant))  # type: ignore[attr-defined]
# A frame's slots, set one by one: the frozen dataclass's __init__ costs twice as much, and a
# trace has a million frames.
_FRAME_FIELDS = (
    "conn",
    "route",
    "direction",
    "index",
    "t",
    "size",
    "payload",
    "message",
    "redacted",
    "elided",
    "tool_calls",
    "expects_answer",
    "answers",
    "orphan",
    "undelivered",
    "delivered_bytes",
    "routes_down",
    "late",
    "answer_of",
    "held_under",
)
assert tuple(f.name for f in dataclasses.fields(FrameSeen)) == _FRAME_FIELDS, "every field, set"
_FRAME_SLOTS = tuple(getattr(FrameSeen, name).__set__ for name in _FRAME_FIELDS)
_new = object.__new__

BLOCK = 1 << 20
"""Bytes read at a time: the file is never held whole (a memory map would count it all in
the process's resident memory once read)."""

_MOST = 1 << 20
"""The longest exchange (three lines) taken the fast way; longer ones are read exactly."""
_C2S, _S2C = Direction.C2S.value, Direction.S2C.value
# What building an exchange may raise where the exact reader must have its say (a profile's
# parse of a valid payload never raises; the exact reader turns these into RecordingError).
_NOT_FAST = (
    RecordingError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    RecursionError,
    StopIteration,
)
# By direction (asked: the request): the groups of a frame's time, size and payload.
_FRAME_GROUPS = {
    True: (Groups.REQUEST_T, Groups.REQUEST_SIZE, Groups.REQUEST_PAYLOAD),
    False: (Groups.RESPONSE_T, Groups.RESPONSE_SIZE, Groups.RESPONSE_PAYLOAD),
}


class FastRecordingReader(RecordingReader):
    """A `RecordingReader` whose events are read the fast way where a whole exchange allows.

    Meant for a file read once to its end (following a growing file is the exact reader's
    job: it waits for lines still being written)."""

    def __init__(
        self,
        stream: IO[bytes],
        *,
        on_exchange: Optional[Callable[[FrameSeen, FrameSeen], None]] = None,
        **options: Any,
    ) -> None:
        """``on_exchange``: called with the request and response frames of each exchange
        read the fast way, as soon as they are built (a viewer makes them compact there,
        before the parsed messages pile up in batches). Other ``options`` are the exact
        reader's."""
        super().__init__(stream, **options)
        self.on_exchange = on_exchange
        self._source = stream
        self._data_at = 0
        """Where the first byte of the block being scanned is in the file."""
        self._names: dict[bytes, str] = {}
        self._sizes: dict[int, int] = {}
        """One int object per distinct size: a trace's frames have a few hundred sizes."""

    def __iter__(self) -> Iterator[Event]:
        if self._decoder.v1 is not None:
            # A version-1 file is paired as it is read (`v1_pairing`): the exact reader's.
            yield from super().__iter__()
            return
        source = self._source
        # Each block starts with the newline that ended the previous one: the pattern's
        # anchor, so a match can only start at the beginning of a line.
        carry = b"\n"
        self._data_at = self.offset - 1  # that newline is the header's
        while True:
            block = source.read(BLOCK)
            if not block:
                break
            data = carry + block
            last = data.rfind(b"\n")
            if last == 0 and len(data) > self.max_line + 1:
                # No line ends in sight: the exact reader refuses the over-long line.
                yield from self._exact(data, 1)
            yield from self._scan(data, last)
            carry = data[last:]
            self._data_at += last
        if len(carry) > 1:
            yield from self._exact(carry, 1)  # an incomplete last line: the exact reader's

    def _exact(self, data: bytes, start: int, end: Optional[int] = None) -> Iterator[Event]:
        """The events of the whole lines ``data[start:end]`` read by the exact reader, which
        counts them."""
        self.stream = io.BytesIO(data[start:end])
        self.offset = self._data_at + start
        try:
            yield from super().__iter__()
        finally:
            self.stream = self._source

    def _scan(self, data: bytes, last: int) -> Iterator[Event]:
        """The events of the lines of ``data`` after its first byte (a newline) through the
        newline at ``last``."""
        previous = 0
        build = self._exchange
        # Within this, no line's parse can cost the exact reader's budget (`check_line`):
        # only its depth is left to check.
        limit = min(self.max_line, _MOST)
        for match in EXCHANGE.finditer(data, 0, last + 1):
            start = match.start()
            if start != previous:
                yield from self._exact(data, previous + 1, start + 1)
            previous = match.end()
            try:
                if previous - start > limit:
                    raise RecordingError("lines too long to take at once")
                events = build(match)
            except _NOT_FAST:
                # Not what the exact reader would make of it: it says what is wrong.
                yield from self._exact(data, start + 1, previous + 1)
                continue
            self._watch(match, events[0].conn, events[0].t, events[1].t)
            self._decoder.ended = None  # as any event after a session's end does
            self.line_number += 3
            if self.on_exchange is not None:
                self.on_exchange(events[0], events[1])
            yield from events
        if previous != last:
            yield from self._exact(data, previous + 1, last + 1)

    def _watch(self, match: Any, conn: int, request_t: float, response_t: float) -> None:
        """Tell the exact reader's watches of ``seq`` and ``t`` about the three lines of a
        whole exchange, as it tells them about each line it reads."""
        line = self.line_number + 1
        decoder = self._decoder
        seqs = match.group(Groups.REQUEST_SEQ, Groups.RESPONSE_SEQ, Groups.EXCHANGE_SEQ)
        decoder.seq.see_exchange(int(seqs[0]), int(seqs[1]), int(seqs[2]), line)
        decoder.times.see_exchange(conn, request_t, response_t, line)

    def _exchange(self, match: Any) -> tuple[FrameSeen, FrameSeen, ExchangeCompleted]:
        """The three events of a whole exchange. Raises RecordingError (or what a profile's
        parse may raise) where the exact reader must have its say."""
        decoder = self._decoder
        conn = int(match.group(Groups.CONN))
        asked = (conn, _C2S, int(match.group(Groups.REQUEST_N)))
        answered = (conn, _S2C, int(match.group(Groups.RESPONSE_N)))
        if decoder.frames and (asked in decoder.frames or answered in decoder.frames):
            # An earlier frame of the same number is still waiting (a damaged trace): the
            # exact reader decides which one the exchange line takes.
            raise RecordingError("a frame number seen before")
        route = self._name(match.group(Groups.ROUTE))
        if decoder.answer_of.active:  # as `LineDecoder` tells it every request frame
            decoder.answer_of.asked(route, conn, asked[2])
        if decoder.steps.asking:  # the server's last frame is an answer (`StepCheck.frame`)
            decoder.steps.asking.discard(conn)
        profile = self.route_profiles.get(route, self.profile)
        data = match.string
        request = self._frame(match, route, profile, match.start() + 1, asked, Direction.C2S)
        second_line = data.find(b"\n", match.end(Groups.REQUEST_PAYLOAD)) + 1
        response = self._frame(
            match, route, profile, second_line, answered, Direction.S2C, asked[2]
        )
        exchange = ExchangeCompleted(
            conn=conn,
            route=route,
            request=request,
            response=response,
            outcome=profile.outcome(request.message, response.message),
        )
        if decoder.tool_calls.active:  # as `LineDecoder` tells it every frame
            decoder.tool_calls.sent(request)
        return request, response, exchange

    def _frame(
        self,
        match: Any,
        route: str,
        profile: Profile,
        line_start: int,
        key: tuple[int, str, int],
        direction: Direction,
        answers: Optional[int] = None,
    ) -> FrameSeen:
        """The frame of the line at ``line_start``, ``key`` its connection, direction and
        number."""
        asked = direction is Direction.C2S
        t, size, payload_at = _FRAME_GROUPS[asked]
        payload_start, payload_end = match.span(payload_at)
        payload = match.string[payload_start:payload_end]
        if len(payload) >= MAX_DEPTH and payload.count(b"{") + payload.count(b"[") >= MAX_DEPTH:
            # Deep enough that the exact reader's check may refuse it (below, the line's
            # nesting is the payload's and its own brace).
            check_line(match.string[line_start : payload_end + 1])
        obj = decode_exactly(payload)
        if obj is NOT_DECODED:
            # Not rare: a digit-only GUID string trips orjson's 19-digit guard. JSON's own
            # scanner keeps such exchanges on the fast path.
            text = payload.decode("utf-8")
            obj, end = _scan_json(text, 0)
            if end != len(text):
                raise ValueError("more than one JSON value")
        if type(obj) is dict and type(obj.get("method")) is str:
            obj["method"] = sys.intern(obj["method"])  # as `line_events` does
        message = profile.parse_decoded(obj, Role.REQUEST if asked else Role.RESPONSE)
        size = int(match.group(size))
        # In the order of `_FRAME_FIELDS`.
        values = (
            key[0],
            route,
            direction,
            key[2],
            float(match.group(t)),
            self._sizes.setdefault(size, size),
            payload,
            message,
            (),
            0,
            None,
            asked,
            answers,
            False,
            "",
            0,
            None,
            False,
            None,
            False,
        )
        frame: FrameSeen = _new(FrameSeen)
        for set_slot, value in zip(_FRAME_SLOTS, values, strict=True):
            set_slot(frame, value)
        leave = self.leave_payloads
        if leave is not None and len(payload) >= leave.smallest:
            return leave(frame, profile, match.string, line_start, payload_end, self._data_at)
        return frame

    def _name(self, raw: bytes) -> str:
        name = self._names.get(raw)
        if name is None:
            name = self._names[raw] = sys.intern(raw.decode("ascii"))
        return name
