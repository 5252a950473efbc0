"""A recording's exchanges as replay reads them: one pass of the fast scanner
(`golem_proxy.recording.scan`, with the reader's checks on every line it does not take whole)
kept as `RecordedExchange`s whose payloads stay in the file's memory map until needed.
`ReplayIndex` (index.py) looks them up by a request's key."""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.profiles import Profile

from ..recording.format import DEFAULT_MAX_LINE, Header, RecordingError
from ..recording.frame_reading import event_object
from ..recording.frame_skeleton import over_parse_budget, within_parse_budget
from ..recording.line_guard import decode_payload
from ..recording.reader import check_line
from ..recording.scan import Row, line_at, scan_exchanges
from .row_numbers import RowNumbers, row_label

__all__ = ["ExchangeTrace", "RecordedExchange", "encode_recorded", "load_exchanges"]


class RecordedExchange:
    """One recorded request and its response. Payloads stay in the trace's buffer (a memory
    map of the file) and are sliced out only when needed; times stay as recorded text until
    a latency is asked for. Built by `load_exchanges`."""

    __slots__ = (
        "_large",
        "_req",
        "_resp",
        "_row",
        "_rows",
        "_src",
        "_t0",
        "_t1",
        "method",
        "number",
        "request_type",
        "route",
    )

    number: int
    """1-based position among the trace's exchanges (the one served: all the files given);
    not what messages print: that is `row`, the row number `show` gives it."""
    route: str
    method: Optional[str]
    request_type: str
    """``request`` or ``malformed`` (the recorder's frame type)."""
    _src: Any  # the trace's buffer
    _req: Any  # payload offset in the buffer, or the payload bytes (read the slow way)
    _resp: Any
    _t0: Any  # recorded request and response times, as text until needed
    _t1: Any
    _large: tuple[Optional[bool], Optional[bool]]  # `too_large` of the request, the response
    _rows: RowNumbers  # its recording's, which sets `_row` when a row is first asked for
    _row: Optional[int]

    @property
    def row(self) -> Optional[int]:
        """Its row number in its recording, as `show` numbers it (``#12`` in messages and
        reports); None where it cannot be told (`RowNumbers`)."""
        rows: Optional[RowNumbers] = getattr(self, "_rows", None)
        if rows is None or rows.rows_if_free() is None:
            return None  # not known, or being read by a worker thread (`RowNumbers`)
        return getattr(self, "_row", None)

    @property
    def answered_by_proxy(self) -> Optional[str]:
        """The proxy's step that answered it in the plugin's place (``fault error:…``: the
        plugin never got the request), or None (`RequestRows.by_proxy`)."""
        rows: Optional[RowNumbers] = getattr(self, "_rows", None)
        return None if rows is None else rows.answered_by_proxy(self.row)

    @property
    def file(self) -> Optional[str]:
        """Its recording, where several are served as one (a row is its own file's)."""
        rows: Optional[RowNumbers] = getattr(self, "_rows", None)
        return rows.name if rows is not None else None

    @property
    def label(self) -> str:
        """``#12`` (`row`), after its file where several recordings are served as one
        (``b.jsonl#12``); ``#?`` where its row cannot be told."""
        return row_label(self.row, self.file)

    def times(self) -> tuple[float, float]:
        """The recorded times of its request and its response (seconds, as `t`)."""
        return float(self._t0), float(self._t1)

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
        """The recorded request decoded. Raises RecordingError (naming the line) when the
        trace is damaged there, ValueError when it was recorded as a payload that is not
        JSON (a malformed frame, stored in base64)."""
        return _decode(self._src, self._req)

    def response_obj(self) -> Any:
        """The recorded response decoded; raises as `request_obj` does."""
        return _decode(self._src, self._resp)

    def too_large(self, *, response: bool) -> bool:
        """Whether a reader would not parse the recorded response (or request): kept beside
        its skeleton, served and compared as bytes (`large_payloads`). Judged once each."""
        known = getattr(self, "_large", (None, None))
        found = known[response]
        if found is None:
            found = self._too_large(self._resp if response else self._req)
            self._large = (known[0], found) if response else (found, known[1])
        return found

    def _too_large(self, at: Any) -> bool:
        if not isinstance(at, bytes) and within_parse_budget(_payload_end(self._src, at) - at):
            return False  # known from its length, not copied
        return over_parse_budget(_payload(self._src, at), 0)

    def __repr__(self) -> str:
        return f"<RecordedExchange {self.number} {self.route} {self.method}>"


def _payload(source: Any, at: Any) -> bytes:
    if isinstance(at, bytes):
        return at  # read the slow way: the payload itself
    return bytes(source[at : _payload_end(source, at)])


def _payload_end(source: Any, at: int) -> int:
    """Where the payload spliced at ``at`` ends: at the closing brace of its line (a checkout
    may have added a carriage return after it)."""
    return int(source.rfind(b"}", at, source.find(b"\n", at)))


def encode_recorded(profile: Profile, obj: Any) -> bytes:
    """A message taken from a trace, framed for the wire. A lone surrogate (legal in the
    trace's JSON as an escape, not encodable as UTF-8) is sent as the same escape rather than
    failing the send: the peer reads the same JSON value."""
    try:
        return profile.encode(obj)
    except UnicodeEncodeError:
        payload = json.dumps(obj, ensure_ascii=False).encode("utf-8", "backslashreplace")
        return profile.frame_payload(payload)


def _decode(source: Any, at: Any) -> Any:
    payload = _payload(source, at)
    if isinstance(at, bytes):
        # Read the slow way, whose line was parsed whole: a payload that is not JSON is one
        # recorded in base64 as it came (a malformed frame), not damage.
        check_line(payload)
        try:
            return json.loads(payload)
        except RecursionError:
            raise ValueError("nested too deep") from None
    # Spliced after ``"msg":`` by the writer, which splices valid JSON only, and checked by
    # the scanner as it took the line: anything else is a damaged line (the file changed
    # since), refused as the reader refuses it.
    try:
        check_line(payload)
        return decode_payload(payload)
    except RecordingError as exc:
        raise _refusal(source, at, exc) from None


def _refusal(source: Any, at: int, found: RecordingError) -> RecordingError:
    """What the reader says of the line whose payload at ``at`` could not be decoded (the
    same words as `show`), naming its number."""
    start = source.rfind(b"\n", 0, at) + 1
    end = source.find(b"\n", at)
    try:
        event_object(bytes(source[start : end if end >= 0 else len(source)]))
    except RecordingError as exc:
        found = exc
    return RecordingError(found.what, line=line_at(source, at))


@dataclass
class ExchangeTrace:
    """A trace's header and exchanges, in the order they completed."""

    header: Header
    profile: Profile
    exchanges: list[RecordedExchange]
    truncated_tail: bool = False
    _buffer: Any = None
    path: Optional[str] = None
    """The file it was read from, for the errors of a payload decoded later."""
    numbering: Optional[RowNumbers] = None
    """Its exchanges' row numbers, as `show` gives them (read when first asked for)."""

    @property
    def routes(self) -> list[str]:
        """Route names, header order first, then any only the exchanges name; not the routes
        of another layer (`golem-proxy mcp`'s ``mcp``: see `load_exchanges`)."""
        other_layers = self.header.route_profile_names()
        # A dict keeps the order and answers "seen?" at once: a hostile trace may name a
        # new route on every exchange.
        names = dict.fromkeys(
            route.name for route in self.header.routes if route.name not in other_layers
        )
        names.update(dict.fromkeys(exchange.route for exchange in self.exchanges))
        return list(names)

    def methods(self) -> list[str]:
        return sorted({e.method for e in self.exchanges if e.method is not None})

    def close(self) -> None:
        """Release the file mapping; payloads cannot be read afterwards."""
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None


def load_exchanges(path: str, *, max_line: int = DEFAULT_MAX_LINE) -> ExchangeTrace:
    """Read a recording's exchanges: the plugin side's, which replay and verify stand in for.
    The exchanges of a route with a profile of its own (the MCP hop of `golem-proxy mcp`) are
    another layer's and left out. Raises OSError, or RecordingError naming the file, the line
    and what is wrong."""
    found = scan_exchanges(path, max_line=max_line)
    other_layers = found.header.route_profile_names()
    rows = [row for row in found.rows if row[0] not in other_layers] if other_layers else found.rows
    # One object per exchange and no cycles among them: the collector would walk the growing
    # list again and again, so it waits.
    collecting = gc.isenabled()
    gc.disable()
    exchanges: list[RecordedExchange] = []
    numbering = RowNumbers(path, exchanges)
    try:
        exchanges += _exchanges(rows, found.buffer, numbering)
    finally:
        if collecting:
            gc.enable()
    return ExchangeTrace(
        found.header,
        found.profile,
        exchanges,
        found.truncated_tail,
        found.buffer,
        path,
        numbering,
    )


def _exchanges(rows: list[Row], buffer: Any, numbering: RowNumbers) -> list[RecordedExchange]:
    exchanges: list[RecordedExchange] = []
    append = exchanges.append
    new = RecordedExchange
    for number, (route, method, kind, request, t0, response, t1) in enumerate(rows, 1):
        exchange = new()
        exchange.number = number
        exchange._rows = numbering
        exchange._src = buffer
        exchange.route, exchange.method, exchange.request_type = route, method, kind
        exchange._req, exchange._t0, exchange._resp, exchange._t1 = request, t0, response, t1
        append(exchange)
    return exchanges
