"""A trace turned into what replay needs: its exchanges in order and an O(1) lookup from a
request's key to the queue of recorded responses for it.

Loading reads only ``frame`` and ``exchange`` lines. Lines in the layout `RecordingWriter`
writes are taken apart with anchored regexes and slices (the payload is spliced in verbatim
after ``"msg":``), which is several times faster than decoding every line as JSON; any line
that does not fit the fast path (base64 payloads, redacted frames, other writers) goes through
``json.loads`` and is read exactly as `golem_proxy.recording` reads it.
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

from ..recording import DEFAULT_MAX_LINE, MSG_KEY, Header, RecordingError
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
    # A spliced payload runs to the closing brace of its line.
    end = source.find(b"\n", at)
    return bytes(source[at : end - 1])


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
    loader = _Loader(profile, buffer, max_line)
    # The loader creates an object per exchange and none of them form cycles: the collector
    # would walk the growing list again and again (a tenth of the load time), so it waits.
    collecting = gc.isenabled()
    gc.disable()
    try:
        loader.run(len(first))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        buffer.close()
        if isinstance(exc, RecordingError):
            raise
        raise RecordingError(f"bad event line: {exc}") from None
    finally:
        if collecting:
            gc.enable()
    return Trace(header, profile, loader.exchanges, loader.truncated, buffer)


def _read_header(first: bytes) -> tuple[Header, Profile]:
    if not first:
        raise RecordingError("empty file: no recording header")
    if not first.endswith(b"\n"):
        raise RecordingError("incomplete or oversized recording header line")
    try:
        header = Header.from_json(json.loads(first))
    except RecordingError:
        raise
    except ValueError as exc:
        raise RecordingError(f"bad recording header: {exc}") from None
    try:
        return header, get_profile(header.profile)
    except KeyError as exc:
        raise RecordingError(str(exc)) from None


@dataclass(frozen=True)
class _SlowFrame:
    """A frame read with ``json.loads`` (it did not fit the fast pattern)."""

    t: float
    type: str
    method: Optional[str]
    route: str
    payload: bytes


class _Names(dict):  # type: ignore[type-arg]
    """Route, method and type names decoded once each (``None`` stays ``None``)."""

    def __init__(self) -> None:
        super().__init__({None: None})

    def __missing__(self, raw: bytes) -> str:
        name = self[raw] = raw.decode("utf-8")
        return name


class _Loader:
    def __init__(self, profile: Profile, buffer: Any, max_line: int) -> None:
        self.profile = profile
        self.buffer = buffer
        self.max_line = max_line
        # Pairing key text → the frame's match (or _SlowFrame); popped by its exchange line.
        self.frames: dict[bytes, Any] = {}
        self.exchanges: list[RecordedExchange] = []
        self.truncated = False
        self._names = _Names()

    def run(self, header_end: int) -> None:
        buffer = self.buffer
        end = len(buffer)
        last_newline = buffer.rfind(b"\n")
        if last_newline < end - 1:
            self.truncated = True  # a killed writer's incomplete last line is ignored
            end = last_newline + 1
        frames = self.frames
        pair = self._pair
        previous = header_end - 1  # the header's newline starts the first line
        exchanges = self.exchanges
        append = exchanges.append
        name = self._names
        new = RecordedExchange
        for match in _LINE.finditer(buffer, previous, end):
            at = match.start()
            if at != previous:
                self._gap(previous, at)
            previous = match.end()
            if match.start(2) >= 0:  # a whole exchange: build it here, the hot path
                t0, route, kind, method, t1 = match.group(1, 3, 5, 6, 8)
                exchange = new()
                exchange.number = len(exchanges) + 1
                exchange._src = buffer
                exchange.route, exchange.method = name[route], name[method]
                exchange.request_type = name[kind]
                exchange._req, exchange._t0 = match.start(7), t0
                exchange._resp, exchange._t1 = match.start(10), t1
                append(exchange)
                continue
            key = match.group(11)
            if key is not None:
                frames[key] = match
            else:
                head, req, resp = match.group(16, 17, 18)
                pair(head + _C2S + req, head + _S2C + resp)
        if previous < end - 1:
            self._gap(previous, end - 1)

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
        self.frames[head + direction + str(int(data["n"])).encode()] = _SlowFrame(
            float(data.get("t", 0.0)),
            str(data.get("type", "")),
            method if isinstance(method, str) else None,
            str(data.get("route", "")),
            payload,
        )

    def _pair(self, request_key: bytes, response_key: bytes) -> None:
        request = self.frames.pop(request_key, None)
        response = self.frames.pop(response_key, None)
        if request is None or response is None:
            return  # its frames were lost (a killed writer); nothing to replay
        exchange = RecordedExchange()
        exchange.number = len(self.exchanges) + 1
        exchange._src = self.buffer
        if isinstance(request, _SlowFrame):
            exchange.route, exchange.method = request.route, request.method
            exchange.request_type = request.type
            exchange._req, exchange._t0 = request.payload, request.t
        else:
            name = self._names
            t, route, kind, method = request.group(1, 12, 13, 14)
            exchange.route, exchange.method = name[route], name[method]
            exchange.request_type = name[kind]
            exchange._req, exchange._t0 = request.start(15), t
        if isinstance(response, _SlowFrame):
            exchange._resp, exchange._t1 = response.payload, response.t
        else:
            exchange._resp, exchange._t1 = response.start(15), response.group(1)
        self.exchanges.append(exchange)


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
            assert found_method == method
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
