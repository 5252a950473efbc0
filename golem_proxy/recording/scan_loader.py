"""The fast scanner's reading of a range of a recording's lines into rows (`Loader`), and of
a part read by another process (`Part`), which the reader of the part before it adopts: the
line-by-line half of scan.py, which reads a whole file, in two processes when it is large."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.messages import Role
from golem_core.profiles import Profile

from ..events import AnswerOf, ToolCallRef
from ..terminal import safe_text
from .frame_reading import event_object, read_frame
from .line_events import LineDecoder
from .line_guard import check_line, decode_payload
from .members import (
    member_int,
    member_number,
    member_optional_int,
    member_optional_str,
    member_str,
)
from .payload_check import check_payload
from .scan_lines import Names, line_at
from .scan_pattern import C2S, LINE, S2C
from .schema import (
    DEFAULT_LINE_BUDGET,
    Header,
    RecordingError,
    dumps,
)
from .tool_call_check import calls_in_line

__all__ = ["FrameInfo", "Loader", "Orphan", "Part", "Row"]


# What replay keeps of a frame: (route, method, type, payload, t). ``payload`` is the offset
# of the payload in the buffer, or the payload bytes when the line was read the slow way; ``t``
# the recorded time as text, or a float (slow way).
FrameInfo = tuple[str, Optional[str], str, Any, Any]
# What replay keeps of an exchange: (route, method, type, request, t0, response, t1).
Row = tuple[str, Optional[str], str, Any, Any, Any, Any]
# An exchange line whose frames this part of the file lacks: (its place among the part's rows,
# request key, request frame if found, response key, response frame if found, the line's
# ``"conn":…,"route":…`` text). A key is None when the part itself had a frame under it (since
# used): one process reading the whole file would have forgotten any earlier frame of that
# key, so the parent's must not be taken.
Orphan = tuple[
    int, Optional[bytes], Optional[FrameInfo], Optional[bytes], Optional[FrameInfo], bytes
]

_ANSWERS = re.compile(rb',"answers":(\d+)')
"""A frame line's ``answers`` member, searched for between its type and its payload (where
no string can hold a ``"``: the fast pattern takes names and ids without one)."""

_NEAR_BUDGET = DEFAULT_LINE_BUDGET // 80
"""A line shorter than this cannot cost its parse the reader's budget (`check_line` counts
at most 66 bytes a byte: 2 for the byte, 64 for a bracket)."""


def _pair_key(conn: int, route: str) -> bytes:
    """The ``"conn":…,"route":"…"`` text the writer puts in every line of a connection."""
    return b'"conn":%d,"route":%s' % (conn, dumps(route))


@dataclass
class Part:
    """A part of the file read by another process: its exchanges in order, with None where
    an exchange line needs frames from before the part (its orphans)."""

    rows: list[Optional[Row]]
    orphans: list[Orphan]
    claims: list[tuple[int, AnswerOf]]
    """The ``answer_of`` of a tool call's answer naming a GOLEM request the part does not
    hold before it, with the newline before its line: the lines before the part decide."""
    call_claims: list[tuple[int, tuple[ToolCallRef, ...]]] = field(default_factory=list)
    """The same for a ``tool_calls`` naming an MCP tool call the part does not hold."""


class Loader:
    """Reads the event lines of a range of the buffer into rows. With ``partial``, exchange
    lines whose frames lie before the range are kept as orphans for the caller to pair."""

    def __init__(
        self,
        profile: Profile,
        routes: dict[str, Profile],
        buffer: Any,
        max_line: int,
        *,
        partial: bool = False,
        header: Optional[Header] = None,
    ) -> None:
        self.profile = profile
        self.routes = routes
        # Reads every line of another kind as the reader does (it holds no frames: none are
        # given to it), so that a line the reader refuses is refused here the same way.
        self._reader = LineDecoder(profile, routes, header=header)
        # Told every request frame, as the reader's is, and every gap line (`_reader`).
        self._answer_of = self._reader.answer_of
        self.claims: list[tuple[int, AnswerOf]] = []
        # Told every frame of the MCP hop and every tool_calls, as the reader's is.
        self._tool_calls = self._reader.tool_calls
        self.call_claims: list[tuple[int, tuple[ToolCallRef, ...]]] = []
        if partial:
            self._tool_calls.deferred = []
        self.buffer = buffer
        self.max_line = max_line
        self.partial = partial
        # Pairing key text → the frame's match (or its FrameInfo when read the slow way);
        # popped by its exchange line.
        self.frames: dict[bytes, Any] = {}
        # The ``answers`` of the frames read the slow way, by pairing key.
        self.answers: dict[bytes, int] = {}
        self.rows: list[Optional[Row]] = []
        self.orphans: list[Orphan] = []
        self.stored: set[bytes] = set()  # keys of the frames stored (partial mode)
        # Keys of the requests stored and not answered yet: an answer read while its request
        # is not waiting (read after it, answered already) pairs nothing, as in the reader.
        self.waiting: set[bytes] = set()
        self._view: Any = None  # of the buffer, while `scan` runs
        self._names = Names()

    def scan(self, previous: int, end: int) -> None:
        """Read the lines after the newline at ``previous`` up to ``end`` (just past the
        newline of the last line). Raises RecordingError naming the line."""
        at = previous
        # Payloads are checked through a view of the buffer: never copied out of it.
        with memoryview(self.buffer) as self._view:
            try:
                self._scan(previous, end)
            except RecordingError as exc:
                at = exc.line if exc.line is not None else at
                raise RecordingError(exc.what, line=self._line_number(at)) from None

    def _line_number(self, newline_before: int) -> int:
        return line_at(self.buffer, newline_before + 1)

    def _scan(self, previous: int, end: int) -> None:
        buffer = self.buffer
        pair = self._pair
        append = self.rows.append
        name = self._names
        view = self._view
        check = check_payload
        answer_of = self._answer_of
        for match in LINE.finditer(buffer, previous, end):
            at = match.start()
            if at != previous:
                self._gap(previous, at)
            previous = match.end()
            if previous - at > self.max_line:  # one of its lines may be too long
                self._lengths(at, previous)
            if previous - at > _NEAR_BUDGET and self._over_budget(at, previous):
                self._gap(at, previous)  # read as the reader reads them, unparsed or refused
                continue
            try:
                if match.start(2) >= 0:  # a whole exchange: the hot path
                    t0, route, kind, method, t1 = match.group(1, 3, 5, 6, 8)
                    check(buffer, view, match.start(7), match.end(7))
                    check(buffer, view, match.start(10), match.end(10))
                    if answer_of.active:
                        answer_of.asked(name[route], int(match[2]), int(match[4]))
                        self._whole_calls(match, name[route])
                    append(
                        (
                            name[route],
                            name[method],
                            name[kind],
                            match.start(7),
                            t0,
                            match.start(10),
                            t1,
                        )
                    )
                    continue
                key = match.group(11)
                if key is not None:
                    check(buffer, view, match.start(15), match.end(15))
                    self._hold(key, match, self._answers_in(match, key))
                    if answer_of.active:
                        answer_of.asked_key(key, name[match[12]])
                        self._frame_calls(match, key, name[match[12]])
                    if self.partial:
                        self.stored.add(key)
                else:
                    head, req, resp = match.group(16, 17, 18)
                    pair(head, req, resp)
            except RecordingError as exc:
                # ``line`` carries the offset of the newline before the line, for `scan`
                # (a payload's check names its own line: the second of a whole exchange).
                raise RecordingError(exc.what, line=at if exc.line is None else exc.line) from None
        if previous < end - 1:
            self._gap(previous, end - 1)

    def _whole_calls(self, match: Any, route: str) -> None:
        """Tell the tool call check of a whole exchange's frames: the MCP hop's request, or
        the calls the GOLEM frames name (`_calls`)."""
        if route in self._tool_calls.layer_routes:
            self._mcp_request(route, int(match[2]), int(match[4]), match.start(7), match.end(7))
            return
        self._calls(calls_in_line(self.buffer, match.start(), match.start(7)), match.start())
        second = self.buffer.find(b"\n", match.end(7))  # the newline before the answer's line
        self._calls(calls_in_line(self.buffer, second, match.start(10)), second)

    def _frame_calls(self, match: Any, key: bytes, route: str) -> None:
        """`_whole_calls` for one frame's line, ``key`` its pairing key."""
        if route not in self._tool_calls.layer_routes:
            self._calls(calls_in_line(self.buffer, match.start(), match.start(15)), match.start())
        elif C2S in key:
            conn = int(key[len(b'"conn":') : key.index(b",")])
            index = int(key[key.rindex(b":") + 1 :])
            self._mcp_request(route, conn, index, match.start(15), match.end(15))

    def _mcp_request(self, route: str, conn: int, index: int, start: int, end: int) -> None:
        """A request frame of the MCP hop, its payload at ``start:end``: parsed as the reader
        parses it, for the tool call it may be."""
        profile = self.routes.get(route, self.profile)
        message = profile.parse_decoded(decode_payload(self.buffer[start:end]), Role.REQUEST)
        self._tool_calls.asked(conn, index, message)

    def _calls(self, calls: Optional[tuple[ToolCallRef, ...]], newline: int) -> None:
        """Check the ``tool_calls`` of the line after the newline at ``newline``; in part of
        the file, one the part does not hold is the lines before it to decide (`adopt`)."""
        try:
            self._tool_calls.check(calls)
        except RecordingError as exc:
            raise RecordingError(exc.what, line=newline) from None
        self._claim_calls(newline)

    def _claim_calls(self, newline: int) -> None:
        deferred = self._tool_calls.deferred
        if deferred:
            self.call_claims.extend((newline, calls) for calls in deferred)
            deferred.clear()

    def _over_budget(self, newline: int, end: int) -> bool:
        """Whether a line whose parse would cost more than the reader's budget is among those
        after the newline at ``newline`` up to ``end``: the reader reads such a frame line
        without parsing its payload (`frame_reading.event_object`), or refuses it."""
        while newline < end:
            following = self.buffer.find(b"\n", newline + 1, end + 1)
            if following < 0:
                following = end
            if following - newline - 1 > _NEAR_BUDGET:
                try:
                    check_line(self.buffer[newline + 1 : following])
                except RecordingError:
                    return True
            newline = following
        return False

    def _lengths(self, newline: int, end: int) -> None:
        """Refuse a line longer than the reader takes among those after the newline at
        ``newline`` up to ``end``, as the reader does."""
        while newline < end:
            following = self.buffer.find(b"\n", newline + 1, end + 1)
            if following < 0:
                following = end
            if following - newline - 1 > self.max_line:
                raise RecordingError(f"longer than {self.max_line} bytes", line=newline)
            newline = following

    def part(self) -> Part:
        return Part(self.rows, self.orphans, self.claims, self.call_claims)

    def _gap(self, start: int, newline: int) -> None:
        """Whole lines the fast pattern did not take (other events, frames and exchanges in
        another layout: base64 payloads, redaction; damage), up to the newline at
        ``newline``, read the slow way. ``start`` is inside the line before them."""
        position = self.buffer.find(b"\n", start, newline + 1)
        while position < newline:
            following = self.buffer.find(b"\n", position + 1, newline + 1)
            if following - position - 1 > self.max_line:
                raise RecordingError(f"longer than {self.max_line} bytes", line=position)
            line = self.buffer[position + 1 : following + 1]  # with its newline, as read
            if line.strip():  # blank lines are skipped, as the reader skips them
                try:
                    self._slow(line, position)
                except RecordingError as exc:
                    raise RecordingError(exc.what, line=position) from None
                except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
                    # As the reader: an untrusted line never escapes as another exception.
                    what = f"{type(exc).__name__}: {safe_text(str(exc), 120)}"
                    raise RecordingError(what, line=position) from None
            position = following

    def _slow(self, line: bytes, newline: int) -> None:
        data, payload = event_object(line)
        kind = data.get("kind")
        if kind == "frame":
            self._slow_frame(data, payload, newline)
            return
        # Checked as the reader checks it (an exchange line too: its frames are in
        # ``self.frames``, not the reader's, so it pairs nothing there).
        self._reader.decode_object(data, payload)
        self._claim_calls(newline)  # a close's tool_calls
        if kind == "exchange":
            head = _pair_key(member_int(data, "conn", 0), member_str(data, "route", ""))
            self._pair(head, b"%d" % member_int(data, "req"), b"%d" % member_int(data, "resp"))

    def _slow_frame(self, data: dict[str, Any], payload: Optional[bytes], newline: int) -> None:
        t = member_number(data, "t")
        member_optional_int(data, "seq")  # in the reader's order (`LineDecoder._decode`)
        route = member_str(data, "route", "")
        frame = read_frame(data, payload, t, self.routes.get(route, self.profile))
        answer_of, found = self._answer_of, frame.answer_of
        if answer_of.active and found is None and frame.direction.value == "c2s":
            answer_of.asked(frame.route, frame.conn, frame.index)
        elif found is not None and self.partial and not answer_of.holds(found):
            self.claims.append((newline, found))  # the lines before the part decide: `adopt`
        elif found is not None:
            answer_of.check(found)
        if answer_of.active:
            self._calls(frame.tool_calls, newline)
            self._tool_calls.sent(frame)
        info: FrameInfo = (
            frame.route,
            member_optional_str(data, "method"),
            member_str(data, "type", ""),
            frame.payload,
            frame.t,
        )
        direction = C2S if frame.direction.value == "c2s" else S2C
        key = _pair_key(frame.conn, route) + direction + b"%d" % frame.index
        if not self._hold(key, info, frame.answers):
            return
        if frame.answers is not None:
            self.answers[key] = frame.answers
        else:
            self.answers.pop(key, None)

    def _answers_in(self, match: Any, key: bytes) -> Optional[int]:
        """The ``answers`` of the frame line ``match`` (an answer's), None for a request's
        or when it says none."""
        if C2S in key:
            return None
        said = _ANSWERS.search(self.buffer, match.end(13), match.start(15))
        return None if said is None else int(said.group(1))

    def _hold(self, key: bytes, frame: Any, answers: Optional[int]) -> bool:
        """Keep ``frame`` under ``key`` for an exchange line to pair, as the reader holds it
        (`LineDecoder._frame`): a request until its answer; an answer whose ``answers``
        names a request not waiting (read after it, or answered already: a damaged or edited
        file) is no pair, its own row in the views, and is not kept. Returns whether it was.
        In part of a file, a request the part never held is the part before's to decide."""
        if self.partial:
            self.stored.add(key)
        if C2S in key or answers is None:
            # A request; or a client's answer to the server (no exchange line pairs it), or
            # an answer that says nothing of its request (a version-1 file): kept as read.
            if C2S in key and answers is None:
                self.waiting.add(key)
            self.frames[key] = frame
            return True
        asked = key[: key.index(S2C)] + C2S + b"%d" % answers
        if asked in self.waiting:
            self.waiting.discard(asked)
        elif not self.partial or asked in self.stored:
            return False
        self.frames[key] = frame
        return True

    def _answers_of(self, key: Optional[bytes]) -> Optional[bytes]:
        """The ``answers`` of the frame held under ``key``, as text (None: none held, or it
        says none)."""
        frame = None if key is None else self.frames.get(key)
        if frame is None:
            return None
        if isinstance(frame, tuple):
            found = self.answers.get(key or b"")
            return None if found is None else b"%d" % found
        said = _ANSWERS.search(self.buffer, frame.end(13), frame.start(15))
        return None if said is None else bytes(said.group(1))

    def _info(self, frame: Any) -> FrameInfo:
        if isinstance(frame, tuple):
            return frame
        name = self._names
        t, route, kind, method = frame.group(1, 12, 13, 14)
        return name[route], name[method], name[kind], frame.start(15), t

    def _pair(self, head: bytes, req: bytes, resp: bytes) -> None:
        """Pair the frames an exchange line names by their numbers on its connection, as
        the reader does: where the answer says it answers another request (the tap's
        decision, in its frame), that request is the one paired (`LineDecoder`)."""
        response_key = head + S2C + resp
        req = self._answers_of(response_key) or req
        request_key = head + C2S + req
        request = self.frames.pop(request_key, None)
        self.waiting.discard(request_key)
        response = self.frames.pop(response_key, None)
        self.answers.pop(response_key, None)
        if request is not None and response is not None:
            self.rows.append(_row(self._info(request), self._info(response)))
        elif self.partial:
            stored = self.stored
            self.orphans.append(
                (
                    len(self.rows),
                    None if request_key in stored else request_key,
                    None if request is None else self._info(request),
                    None if response_key in stored else response_key,
                    None if response is None else self._info(response),
                    head,
                )
            )
            self.rows.append(None)
        # Otherwise its frames were lost (a killed writer): nothing to replay.

    def adopt(self, part: Part) -> None:
        """Append the rows of the part that follows this loader's range, pairing its orphans
        with the frames left here, as one process reading on would have."""
        claims: list[tuple[int, Any, Any]] = [
            *((newline, self._answer_of.check, found) for newline, found in part.claims),
            *((newline, self._tool_calls.check, calls) for newline, calls in part.call_claims),
        ]
        for newline, check, found in sorted(claims, key=lambda claim: claim[0]):
            try:
                check(found)
            except RecordingError as exc:
                raise RecordingError(exc.what, line=self._line_number(newline)) from None
        for index, request_key, request, response_key, response, head in part.orphans:
            if response is None and response_key is not None:
                # An answer from this range decides its request, as in `_pair`.
                answers = self._answers_of(response_key)
                if answers is not None and head + C2S + answers != request_key:
                    request_key, request = head + C2S + answers, None
            request = request or self._take(request_key)
            response = response or self._take(response_key)
            if request is not None and response is not None:
                part.rows[index] = _row(request, response)
        self.rows.extend(part.rows)

    def _take(self, key: Optional[bytes]) -> Optional[FrameInfo]:
        mine = None if key is None else self.frames.pop(key, None)
        self.waiting.discard(key or b"")
        self.answers.pop(key or b"", None)
        return None if mine is None else self._info(mine)


def _row(request: FrameInfo, response: FrameInfo) -> Row:
    route, method, kind, payload, t = request
    return route, method, kind, payload, t, response[3], response[4]
