"""A trace turned into what replay needs: its exchanges in order and an O(1) lookup from a
request's key to the queue of recorded responses for it.

Loading reads only ``frame`` and ``exchange`` lines. Lines in the layout `RecordingWriter`
writes are taken apart with anchored regexes and slices (the payload is spliced in verbatim
after ``"msg":``), which is several times faster than decoding every line as JSON; any line
that does not fit the fast path (base64 payloads, redacted frames, other writers) goes through
``json.loads`` and is read exactly as `golem_proxy.recording.format` reads it.
"""

from __future__ import annotations

import base64
import gc
import json
import mmap
import os
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional, Union

from golem_core.profiles import Profile, get_profile

from ..recording.format import DEFAULT_MAX_LINE, MSG_KEY, Header, RecordingError
from .forked import ForkedCall, ForkedCallError
from .matching import GuidMap, Keyer, MatchMode, canonical_params

Key = tuple[str, ...]

__all__ = ["Key", "RecordedExchange", "ReplayIndex", "Trace", "load_trace"]

# One pass over the file finds every frame and exchange line in the layout RecordingWriter
# writes. The literal ``\n{"seq":`` prefix lets the regex engine skip payload bytes quickly.
#
# The first alternative takes a whole exchange at once when its three lines follow each other
# (request frame, response frame, exchange line of the same connection: what a sequential
# client such as GOLEM's produces); the backreferences make sure they belong together. Other
# lines are taken one at a time: a frame's ``"conn":…,"route":…,"dir":…,"n":…`` text is its
# pairing key as it stands, and an exchange line rebuilds the same text from its conn, route
# and frame numbers, so pairing costs no parsing.
#
# Every alternative runs to the end of its last line, so a line the pattern did not take shows
# as a match that does not start where the previous one ended.
#
# Groups: 1 t. Whole exchange: 2 conn, 3 route, 4 request n, 5 type, 6 method, 7 (empty, at the
# request payload), 8 response t, 9 response n, 10 (empty, at the response payload). Frame:
# 11 key, 12 route, 13 type, 14 method, 15 (empty, at the payload). Exchange: 16 conn and route,
# 17 req, 18 resp.
# The id's text runs to the next quote: inside a JSON string every quote is escaped, and what
# must follow the id (``,"``) cannot appear there, so an escaped id fails the pattern and is
# read the slow way. Not excluding backslashes here makes the whole scan ~12 % faster.
_ID = rb'(?:,"id":(?:"[^"]*"|-?\d+))?'
_LINE = re.compile(
    rb'\n\{"seq":\d+,"t":([-0-9.eE+]+),"kind":"(?:'
    rb'frame","conn":(\d+),"route":"([^"\\\n]*)","dir":"c2s","n":(\d+),"size":\d+,'
    rb'"type":"(\w+)"' + _ID + rb'(?:,"method":"([^"\\\n]*)")?,"msg":()[^\n]*'
    rb'\n\{"seq":\d+,"t":([-0-9.eE+]+),"kind":"frame","conn":\2,"route":"\3","dir":"s2c",'
    rb'"n":(\d+),"size":\d+,"type":"\w+"' + _ID + rb',"msg":()[^\n]*'
    rb'\n\{"seq":\d+,"t":[-0-9.eE+]+,"kind":"exchange","conn":\2,"route":"\3","req":\4,'
    rb'"resp":\9,'
    rb'|frame",("conn":\d+,"route":"([^"\\\n]*)","dir":"(?:c2s|s2c)","n":\d+),"size":\d+,'
    rb'"type":"(\w+)"' + _ID + rb'(?:,"method":"([^"\\\n]*)")?,"msg":()'
    rb'|exchange",("conn":\d+,"route":"[^"\\\n]*"),"req":(\d+),"resp":(\d+),)[^\n]*'
)
_KIND = re.compile(rb'^\{"seq":\d+,"t":[-0-9.eE+]+,"kind":"(frame|exchange)"')
_C2S = b',"dir":"c2s","n":'
_S2C = b',"dir":"s2c","n":'


def _pair_key(conn: int, route: str) -> bytes:
    """The ``"conn":…,"route":"…"`` text the writer puts in every line of a connection."""
    return f'"conn":{conn},"route":{json.dumps(route, ensure_ascii=False)}'.encode()


class RecordedExchange:
    """One recorded request and its response. Payloads stay in the trace's buffer (a memory
    map of the file) and are sliced out only when needed; times stay as recorded text until
    a latency is asked for. Built by `load_trace`."""

    __slots__ = ("_req", "_resp", "_src", "_t0", "_t1", "method", "number", "request_type", "route")

    number: int
    """1-based position among the trace's exchanges (``#12`` in messages and reports)."""
    route: str
    method: Optional[str]
    request_type: str
    """``request`` or ``malformed`` (the recorder's frame type)."""
    _src: Any  # the trace's buffer
    _req: Any  # payload offset in the buffer, or the payload bytes (read the slow way)
    _resp: Any
    _t0: Any  # recorded request and response times, as text until needed
    _t1: Any

    @property
    def latency(self) -> float:
        """Seconds from the request's last byte to the response's, as recorded."""
        return max(0.0, float(self._t1) - float(self._t0))

    @property
    def request(self) -> bytes:
        """The recorded request payload bytes."""
        return _payload(self._src, self._req)

    @property
    def response(self) -> bytes:
        """The recorded response payload bytes."""
        return _payload(self._src, self._resp)

    def request_obj(self) -> Any:
        """The recorded request decoded; raises ValueError when it was not JSON."""
        return json.loads(self.request)

    def response_obj(self) -> Any:
        """The recorded response decoded; raises ValueError when it was not JSON."""
        return json.loads(self.response)

    def __repr__(self) -> str:
        return f"<RecordedExchange #{self.number} {self.route} {self.method}>"


def _payload(source: Any, at: Any) -> bytes:
    if isinstance(at, bytes):
        return at  # read the slow way: the payload itself
    # A spliced payload runs to the closing brace of its line (a checkout may have added a
    # carriage return after it).
    newline = source.find(b"\n", at)
    return bytes(source[at : source.rfind(b"}", at, newline)])


@dataclass
class Trace:
    """A trace's header and exchanges, in the order they completed."""

    header: Header
    profile: Profile
    exchanges: list[RecordedExchange]
    truncated_tail: bool = False
    _buffer: Any = None

    @property
    def routes(self) -> list[str]:
        """Route names, header order first, then any only the exchanges name."""
        names = [route.name for route in self.header.routes]
        for exchange in self.exchanges:
            if exchange.route not in names:
                names.append(exchange.route)
        return names

    def methods(self) -> list[str]:
        return sorted({e.method for e in self.exchanges if e.method is not None})

    def close(self) -> None:
        """Release the file mapping; payloads cannot be read afterwards."""
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None


def load_trace(path: str, *, max_line: int = DEFAULT_MAX_LINE) -> Trace:
    """Read a recording's exchanges. Raises OSError, or RecordingError naming the problem."""
    with open(path, "rb") as stream:
        first = stream.readline(max_line + 1)
        header, profile = _read_header(first)
        size = os.fstat(stream.fileno()).st_size
        if size <= len(first):
            return Trace(header, profile, [], False)
        buffer = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    end = len(buffer)
    last_newline = buffer.rfind(b"\n")
    truncated = last_newline < end - 1  # a killed writer's incomplete last line is ignored
    # The loader creates objects per exchange and none of them form cycles: the collector
    # would walk the growing lists again and again (a tenth of the load time), so it waits.
    collecting = gc.isenabled()
    gc.disable()
    try:
        rows = _scan(profile, buffer, max_line, len(first), last_newline + 1)
        exchanges = _exchanges(rows, buffer)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        buffer.close()
        if isinstance(exc, RecordingError):
            raise
        raise RecordingError(f"bad event line: {exc}") from None
    finally:
        if collecting:
            gc.enable()
    return Trace(header, profile, exchanges, truncated, buffer)


def _read_header(first: bytes) -> tuple[Header, Profile]:
    if not first:
        raise RecordingError("empty file: no recording header")
    if not first.endswith(b"\n"):
        raise RecordingError("incomplete or oversized recording header line")
    try:
        header = Header.from_json(json.loads(first))
    except RecordingError:
        raise
    except ValueError:
        raise RecordingError("not a golem-proxy recording (its first line is not JSON)") from None
    try:
        return header, get_profile(header.profile)
    except KeyError as exc:
        raise RecordingError(str(exc)) from None


# What replay keeps of a frame: (route, method, type, payload, t). ``payload`` is the offset
# of the payload in the buffer, or the payload bytes when the line was read the slow way; ``t``
# the recorded time as text, or a float (slow way).
FrameInfo = tuple[str, Optional[str], str, Any, Any]
# What replay keeps of an exchange: (route, method, type, request, t0, response, t1).
Row = tuple[str, Optional[str], str, Any, Any, Any, Any]
# An exchange line whose frames this part of the file lacks: (its place among the part's rows,
# request key, request frame if found, response key, response frame if found). A key is None
# when the part itself had a frame under it (since used): one process reading the whole file
# would have forgotten any earlier frame of that key, so the parent's must not be taken.
Orphan = tuple[int, Optional[bytes], Optional[FrameInfo], Optional[bytes], Optional[FrameInfo]]

PARALLEL_MIN_BYTES = 64 * 1024 * 1024
"""Traces at least this large are read by two processes, each taking half of the file."""


@dataclass
class _Part:
    """A part of the file read by another process: its exchanges in order, with None where
    an exchange line needs frames from before the part (its orphans)."""

    rows: list[Optional[Row]]
    orphans: list[Orphan]


class _Names(dict):  # type: ignore[type-arg]
    """Route, method and type names decoded once each (``None`` stays ``None``)."""

    def __init__(self) -> None:
        super().__init__({None: None})

    def __missing__(self, raw: bytes) -> str:
        name = self[raw] = raw.decode("utf-8")
        return name


class _Loader:
    """Reads the event lines of a range of the buffer into rows. With ``partial``, exchange
    lines whose frames lie before the range are kept as orphans for the caller to pair."""

    def __init__(
        self, profile: Profile, buffer: Any, max_line: int, *, partial: bool = False
    ) -> None:
        self.profile = profile
        self.buffer = buffer
        self.max_line = max_line
        self.partial = partial
        # Pairing key text → the frame's match (or its FrameInfo when read the slow way);
        # popped by its exchange line.
        self.frames: dict[bytes, Any] = {}
        self.rows: list[Optional[Row]] = []
        self.orphans: list[Orphan] = []
        self.stored: set[bytes] = set()  # keys of the frames stored (partial mode)
        self._names = _Names()

    def scan(self, previous: int, end: int) -> None:
        """Read the lines after the newline at ``previous`` up to ``end`` (just past the
        newline of the last line)."""
        buffer = self.buffer
        frames = self.frames
        pair = self._pair
        append = self.rows.append
        name = self._names
        for match in _LINE.finditer(buffer, previous, end):
            at = match.start()
            if at != previous:
                self._gap(previous, at)
            previous = match.end()
            if match.start(2) >= 0:  # a whole exchange: the hot path
                t0, route, kind, method, t1 = match.group(1, 3, 5, 6, 8)
                append(
                    (name[route], name[method], name[kind], match.start(7), t0, match.start(10), t1)
                )
                continue
            key = match.group(11)
            if key is not None:
                frames[key] = match
                if self.partial:
                    self.stored.add(key)
            else:
                head, req, resp = match.group(16, 17, 18)
                pair(head + _C2S + req, head + _S2C + resp)
        if previous < end - 1:
            self._gap(previous, end - 1)

    def part(self) -> _Part:
        return _Part(self.rows, self.orphans)

    def _gap(self, start: int, newline: int) -> None:
        """Whole lines the fast pattern did not take (other events, or frames and exchanges
        in another layout: base64 payloads, redaction), up to the newline at ``newline``,
        read the slow way. ``start`` is inside the line before them."""
        first = self.buffer.find(b"\n", start, newline + 1)
        for line in self.buffer[first + 1 : newline].split(b"\n"):
            if len(line) > self.max_line:
                raise RecordingError(f"a line is longer than {self.max_line} bytes")
            if _KIND.match(line) is not None:
                self._slow(line)

    def _slow(self, line: bytes) -> None:
        data = json.loads(line)
        head = _pair_key(int(data["conn"]), str(data.get("route", "")))
        if data.get("kind") == "exchange":
            self._pair(
                head + _C2S + str(int(data["req"])).encode(),
                head + _S2C + str(int(data["resp"])).encode(),
            )
            return
        if "raw" in data:
            payload = base64.b64decode(data["raw"])
        elif data.get("redacted"):
            payload = self.profile.encode_payload(data.get("msg"))
        else:
            start = line.index(MSG_KEY) + len(MSG_KEY)
            payload = line[start : line.rstrip().rindex(b"}")]
        method = data.get("method")
        direction = _C2S if data["dir"] == "c2s" else _S2C
        info: FrameInfo = (
            str(data.get("route", "")),
            method if isinstance(method, str) else None,
            str(data.get("type", "")),
            payload,
            float(data.get("t", 0.0)),
        )
        key = head + direction + str(int(data["n"])).encode()
        self.frames[key] = info
        if self.partial:
            self.stored.add(key)

    def _info(self, frame: Any) -> FrameInfo:
        if isinstance(frame, tuple):
            return frame
        name = self._names
        t, route, kind, method = frame.group(1, 12, 13, 14)
        return name[route], name[method], name[kind], frame.start(15), t

    def _pair(self, request_key: bytes, response_key: bytes) -> None:
        request = self.frames.pop(request_key, None)
        response = self.frames.pop(response_key, None)
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
                )
            )
            self.rows.append(None)
        # Otherwise its frames were lost (a killed writer): nothing to replay.

    def adopt(self, part: _Part) -> None:
        """Append the rows of the part that follows this loader's range, pairing its orphans
        with the frames left here, as one process reading on would have."""
        for index, request_key, request, response_key, response in part.orphans:
            request = request or self._take(request_key)
            response = response or self._take(response_key)
            if request is not None and response is not None:
                part.rows[index] = _row(request, response)
        self.rows.extend(part.rows)

    def _take(self, key: Optional[bytes]) -> Optional[FrameInfo]:
        mine = None if key is None else self.frames.pop(key, None)
        return None if mine is None else self._info(mine)


def _row(request: FrameInfo, response: FrameInfo) -> Row:
    route, method, kind, payload, t = request
    return route, method, kind, payload, t, response[3], response[4]


def _scan(profile: Profile, buffer: Any, max_line: int, header_end: int, end: int) -> list[Row]:
    """Rows of the event lines between the header and ``end``; the second half of a large
    trace is read by a forked child meanwhile."""
    previous = header_end - 1  # the header's newline starts the first line
    middle = -1
    if end - header_end >= PARALLEL_MIN_BYTES:
        middle = buffer.find(b"\n", previous + (end - previous) // 2, end - 1)
    loader = _Loader(profile, buffer, max_line)
    child = None
    try:
        if middle >= 0:
            child = ForkedCall.start(lambda: _scan_part(profile, buffer, max_line, middle, end))
        if child is None:
            loader.scan(previous, end)
            return [row for row in loader.rows if row is not None]
        loader.scan(previous, middle + 1)
        try:
            part = child.result()
        except ForkedCallError:  # the child died: read its half here
            part = _scan_part(profile, buffer, max_line, middle, end)
    finally:
        if child is not None:
            child.cancel()
    loader.adopt(part)
    return [row for row in loader.rows if row is not None]


def _scan_part(profile: Profile, buffer: Any, max_line: int, previous: int, end: int) -> _Part:
    loader = _Loader(profile, buffer, max_line, partial=True)
    loader.scan(previous, end)
    return loader.part()


def _exchanges(rows: list[Row], buffer: Any) -> list[RecordedExchange]:
    exchanges: list[RecordedExchange] = []
    append = exchanges.append
    new = RecordedExchange
    for number, (route, method, kind, request, t0, response, t1) in enumerate(rows, 1):
        exchange = new()
        exchange.number = number
        exchange._src = buffer
        exchange.route, exchange.method, exchange.request_type = route, method, kind
        exchange._req, exchange._t0, exchange._resp, exchange._t1 = request, t0, response, t1
        append(exchange)
    return exchanges


class ReplayIndex:
    """Queues of recorded exchanges by key: FIFO per key, O(1) amortised per lookup.

    Keys are computed lazily: the exchanges of one (route, method) wait in trace order and are
    keyed only as far as a lookup needs, so loading stays one pass over the file and a session
    that follows the trace keys each exchange once, just before it is served. Only well-formed
    recorded requests are indexed; malformed ones are answered the way the plugin answers them,
    whatever the recording says."""

    def __init__(self, trace: Trace, keyer: Keyer, *, reuse: bool = False) -> None:
        self.trace = trace
        self.keyer = keyer
        self.reuse = reuse
        self.mode = keyer.mode
        # A key's recorded exchanges: most keys have one, kept bare (a deque costs ~600 bytes,
        # which is most of the index for a large trace); a deque once there are more.
        self.queues: dict[Key, Union[RecordedExchange, deque[RecordedExchange]]] = {}
        self.last: dict[tuple[str, ...], RecordedExchange] = {}
        self.by_method: dict[tuple[str, str], list[RecordedExchange]] = {}
        self._unkeyed: dict[tuple[str, str], deque[RecordedExchange]] = {}
        self.used: set[int] = set()
        by_method = self.by_method
        for exchange in trace.exchanges:
            method = exchange.method
            if exchange.request_type != "request" or method is None:
                continue
            bucket = by_method.get((exchange.route, method))
            if bucket is None:
                bucket = by_method[(exchange.route, method)] = []
            bucket.append(exchange)
        if self.mode is MatchMode.SEQUENCE:
            routes: dict[str, deque[RecordedExchange]] = {}
            for exchange in trace.exchanges:
                if exchange.request_type == "request" and exchange.method is not None:
                    routes.setdefault(exchange.route, deque()).append(exchange)
            for route, queue in routes.items():
                self.queues[(route,)] = queue
        elif self.mode is MatchMode.METHOD:
            for (route, method), bucket in by_method.items():
                self.queues[(route, method)] = deque(bucket)
        else:
            for pair, bucket in by_method.items():
                self._unkeyed[pair] = deque(bucket)

    def key(self, route: str, method: str, params: Any, guids: Optional[GuidMap] = None) -> Key:
        """The key a live request looks up (params with numbers normalised)."""
        return self.keyer.key(route, method, params, guids)

    def _key_until(self, route: str, method: str, key: Key) -> None:
        """Key the waiting exchanges of (route, method) until one with ``key`` turns up."""
        waiting = self._unkeyed.get((route, method))
        while waiting:
            exchange = waiting.popleft()
            found_method, params = canonical_params(exchange.request)
            if found_method != method:
                continue  # a hand-edited line whose payload does not say what its type does
            own = self.keyer.key(route, method, params)
            queued = self.queues.get(own)
            if queued is None:
                self.queues[own] = exchange
            elif isinstance(queued, deque):
                queued.append(exchange)
            else:
                self.queues[own] = deque((queued, exchange))
            if own == key:
                return

    def take(self, route: str, method: str, key: Key) -> Optional[RecordedExchange]:
        """The next recorded exchange for ``key`` (consumed), the last one again with
        ``reuse``, or None. In sequence mode the next exchange of the route is taken only
        when its method is ``method``."""
        queued = self.queues.get(key)
        if queued is None and self.mode is MatchMode.METHOD_PARAMS:
            self._key_until(route, method, key)
            queued = self.queues.get(key)
        if queued is not None:
            head = queued[0] if isinstance(queued, deque) else queued
            if self.mode is MatchMode.SEQUENCE and head.method != method:
                return None
            if isinstance(queued, deque):
                queued.popleft()
                if not queued:
                    del self.queues[key]
            else:
                del self.queues[key]
            self.last[key] = head
            self.used.add(head.number)
            return head
        if self.reuse:
            last = self.last.get(key)
            if last is not None and last.method == method:
                return last
        return None

    def peek_sequence(self, route: str) -> Optional[RecordedExchange]:
        """In sequence mode, the exchange the route expects next."""
        queued = self.queues.get((route,))
        if isinstance(queued, deque):
            return queued[0]
        return queued

    def last_for(self, key: Key) -> Optional[RecordedExchange]:
        """The exchange most recently handed out for ``key`` (None when none was)."""
        return self.last.get(key)

    def same_method(self, route: str, method: str) -> list[RecordedExchange]:
        """Every indexed exchange of (route, method), in trace order, used or not."""
        return self.by_method.get((route, method), [])

    def methods(self, route: str) -> list[str]:
        return sorted(method for (name, method) in self.by_method if name == route)

    def unused(self, exclude: Iterable[str] = ()) -> list[RecordedExchange]:
        """Indexed exchanges never handed out, in trace order (methods in ``exclude`` left
        out)."""
        skip = set(exclude)
        return [
            e
            for e in self.trace.exchanges
            if e.request_type == "request"
            and e.method is not None
            and e.number not in self.used
            and e.method not in skip
        ]
