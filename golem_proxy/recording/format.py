"""The recording format (docs/recording-format.md): JSON Lines, a versioned header first, then
one event per line. This module is the only place that knows the format: it turns events into
lines and lines back into the same events.

Frames are stored as readable JSON: when the payload is valid JSON on one line, its exact bytes
are spliced in as the last member (``"msg": <payload>``), so the file is readable, diffable and
still byte-exact without re-encoding anything. Other payloads (invalid UTF-8 or JSON, embedded
newlines) are stored base64 in ``raw``. Every byte that crossed the proxy can be rebuilt.
"""

from __future__ import annotations

import base64
import datetime
import errno
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Optional

from golem_core import __version__
from golem_core.contract import Violation
from golem_core.framing import FrameErrorKind
from golem_core.messages import MalformedKind, Message, Request, Response, Role
from golem_core.profiles import Profile, get_profile

from ..events import (
    BytesDiscarded,
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    EventsMissed,
    ExchangeCompleted,
    FaultInjected,
    FrameSeen,
    FramingErrorSeen,
    GapReason,
    ObservationLost,
    ViolationSeen,
)

__all__ = [
    "FORMAT",
    "VERSION",
    "Header",
    "Recording",
    "RecordingError",
    "RecordingReader",
    "RecordingWriter",
    "encode_event",
    "encode_event_parts",
    "encode_header",
    "open_recording_file",
    "read_recording",
]

FORMAT = "golem-proxy-recording"
VERSION = 1
MSG_KEY = b',"msg":'
# A line longer than this is refused on load: a trace from an untrusted source must not make
# the reader allocate without bound (the largest legitimate line is a 64 MiB frame, base64).
DEFAULT_MAX_LINE = 96 * 1024 * 1024


class RecordingError(ValueError):
    """The file is not a recording this version can read."""


@dataclass(frozen=True)
class RouteInfo:
    name: str
    listen: str
    upstream: str


@dataclass(frozen=True)
class Header:
    profile: str
    routes: tuple[RouteInfo, ...]
    started_at: str
    tool: str = f"golem-proxy {__version__}"
    redact: tuple[str, ...] = ()
    version: int = VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, profile: str, routes: Iterable[RouteInfo], redact: Iterable[str] = ()) -> Header:
        now = datetime.datetime.now(datetime.timezone.utc)
        started = now.isoformat(timespec="microseconds").replace("+00:00", "Z")
        return cls(profile, tuple(routes), started, redact=tuple(redact))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": FORMAT,
            "version": self.version,
            "profile": self.profile,
            "routes": [
                {"name": r.name, "listen": r.listen, "upstream": r.upstream} for r in self.routes
            ],
            "started_at": self.started_at,
            "clock": "t = monotonic seconds since started_at",
            "tool": self.tool,
            "redact": list(self.redact),
        }
        data.update(self.extra)
        return data

    @classmethod
    def from_json(cls, data: Any) -> Header:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RecordingError("not a golem-proxy recording (no recording header line)")
        version = data.get("version")
        if version != VERSION:
            raise RecordingError(f"recording format version {version!r} is not supported")
        try:
            routes = tuple(
                RouteInfo(str(r["name"]), str(r["listen"]), str(r["upstream"]))
                for r in data.get("routes", ())
            )
            known = {"format", "version", "profile", "routes", "started_at", "clock", "tool"}
            known.add("redact")
            return cls(
                str(data["profile"]),
                routes,
                str(data.get("started_at", "")),
                str(data.get("tool", "")),
                tuple(str(p) for p in data.get("redact", ())),
                VERSION,
                {k: v for k, v in data.items() if k not in known},
            )
        except (KeyError, TypeError) as exc:
            raise RecordingError(f"bad recording header: {exc}") from None


def encode_header(header: Header) -> bytes:
    return _dumps(header.to_json()) + b"\n"


# -- writing ---------------------------------------------------------------------------------


def encode_event(event: Event, profile: Profile, seq: int) -> Optional[bytes]:
    """One JSON line (with its newline) for ``event``; None for events not recorded."""
    parts = encode_event_parts(event, profile, seq)
    return None if parts is None else b"".join(parts)


def encode_event_parts(event: Event, profile: Profile, seq: int) -> Optional[list[bytes]]:
    """The line for ``event`` as pieces to write in order: a large payload is one piece of its
    own, never copied into a new line."""
    if isinstance(event, FrameSeen):
        return _encode_frame(event, profile, seq)
    line = _encode_other(event, profile, seq)
    return None if line is None else [line]


def _encode_other(event: Event, profile: Profile, seq: int) -> Optional[bytes]:
    base: dict[str, Any] = {"seq": seq, "t": round(event.t, 6)}
    if isinstance(event, ConnectionOpened):
        base.update(kind="open", conn=event.conn, route=event.route)
        base.update(client=event.client, upstream=event.upstream)
    elif isinstance(event, ConnectionClosed):
        base.update(kind="close", conn=event.conn, route=event.route, reason=event.reason)
        base.update(bytes={"c2s": event.bytes_c2s, "s2c": event.bytes_s2c})
        base.update(abnormal=event.abnormal)
    elif isinstance(event, ExchangeCompleted):
        base.update(kind="exchange", conn=event.conn, route=event.route)
        base.update(req=event.request.index, resp=event.response.index)
        status = profile.describe_exchange(event.request.message, event.response.message)
        base.update(method=event.method, status=status)
        base.update(latency=round(event.latency, 6))
    elif isinstance(event, ViolationSeen):
        base.update(kind="violation", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value if event.direction else None)
        base.update(frame=event.frame_index)
        base.update(event.violation.to_json())
    elif isinstance(event, FramingErrorSeen):
        base.update(kind="frame-error", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, error=event.kind.value, detail=event.detail)
        base.update(recoverable=event.recoverable, declared=event.declared_length)
        base.update(raw=_b64(event.raw))
    elif isinstance(event, BytesDiscarded):
        base.update(kind="discarded", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, final=event.final, raw=_b64(event.raw))
    elif isinstance(event, FaultInjected):
        base.update(kind="fault", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, fault=event.fault, detail=event.detail)
        base.update(method=event.method)
        if event.original:  # an intercepted frame sent edited: its payload as it came
            base.update(original=_b64(event.original))
    elif isinstance(event, EventsMissed):
        base.update(kind="gap", missed=event.count, consumer=event.consumer)
    elif isinstance(event, ObservationLost):
        base.update(kind="unobserved", conn=event.conn, route=event.route)
        base.update(dir=event.direction.value, reason=event.reason.value, size=event.size)
        base.update(detail=event.detail)
        if event.digest:
            base.update(digest=event.digest, header=_b64(event.header))
    else:  # pragma: no cover - exhaustive over Event
        return None
    return _dumps(base) + b"\n"


def _encode_frame(event: FrameSeen, profile: Profile, seq: int) -> list[bytes]:
    message = event.message
    payload = event.payload
    undecodable = _undecodable(message)
    if not event.redacted and not undecodable and b"\n" not in payload:
        # The common case, formatted by hand: json.dumps of the small prefix dict was the
        # recorder's largest cost per frame. The exact payload bytes are spliced in as the
        # last member: readable and byte-exact.
        return [_frame_prefix(event, message, seq), payload, b"}\n"]
    base: dict[str, Any] = {
        "seq": seq,
        "t": round(event.t, 6),
        "kind": "frame",
        "conn": event.conn,
        "route": event.route,
        "dir": event.direction.value,
        "n": event.index,
        "size": event.size,
        "type": _frame_type(message),
    }
    if message.id is not None:
        base["id"] = message.id
    if isinstance(message, Request):
        base["method"] = message.method
    if event.redacted:
        base["redacted"] = list(event.redacted)
        base["msg"] = None if undecodable else message.obj
    else:  # not JSON, or a payload spanning lines: stored base64
        base["raw"] = _b64(payload)
        if not undecodable:
            base["note"] = "payload spans lines; stored raw"
    return [_dumps(base) + b"\n"]


def _frame_prefix(event: FrameSeen, message: Message, seq: int) -> bytes:
    """``{...members...,"msg":`` for a verbatim frame, byte for byte what `_dumps` would
    write for the same members (a test pins the equivalence)."""
    ident = message.id
    parts = [
        f'{{"seq":{seq},"t":{round(event.t, 6)!r},"kind":"frame","conn":{event.conn},'
        f'"route":{_json_str(event.route)},"dir":"{event.direction.value}","n":{event.index},'
        f'"size":{event.size},"type":"{_frame_type(message)}"'
    ]
    if ident is not None:
        parts.append(f',"id":{_json_str(ident) if isinstance(ident, str) else int(ident)}')
    if isinstance(message, Request):
        parts.append(f',"method":{_json_str(message.method)}')
    parts.append(',"msg":')
    return "".join(parts).encode("utf-8", _JSON_SAFE)


def _frame_type(message: Message) -> str:
    if isinstance(message, Request):
        return "request"
    if isinstance(message, Response):
        return "response"
    if hasattr(message, "error"):
        return "error"
    return "malformed"


def _undecodable(message: Message) -> bool:
    kind = getattr(message, "kind", None)
    return kind in (MalformedKind.INVALID_UTF8, MalformedKind.INVALID_JSON)


# A lone surrogate (legal in JSON text as an escape, not encodable as UTF-8) can only sit inside
# a JSON string, where backslashreplace writes it back as the same \uXXXX escape.
_JSON_SAFE = "backslashreplace"
# One shared encoder: json.dumps with keywords builds a new one on every call.
_encode_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_json_str = _encode_compact


def _dumps(data: Any) -> bytes:
    return _encode_compact(data).encode("utf-8", _JSON_SAFE)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def open_recording_file(path: str, *, overwrite: bool = False) -> IO[bytes]:
    """Create a recording file readable by its owner only (mode 0600).

    A symlink at ``path`` is never followed (even with ``overwrite``), so a link planted
    where a recording is expected cannot redirect the write. Raises FileExistsError unless
    ``overwrite``; other OSErrors as they come."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            message = f"refusing to write a recording through symlink {path}"
            raise OSError(exc.errno, message) from None
        raise
    os.fchmod(fd, 0o600)  # the umask cannot widen it, but an existing file kept its mode
    return os.fdopen(fd, "wb")


class RecordingWriter:
    """Writes a recording: the header at once, then one line per event, in order.

    Lines are queued and written by ``flush()`` (the proxy calls it at least every 100 ms), so
    what was flushed is in the file for any reader; a killed writer leaves at worst one
    incomplete last line, which readers skip. A large payload is written as its own piece,
    never copied into a line buffer."""

    def __init__(self, stream: IO[bytes], header: Header) -> None:
        self.stream = stream
        self.header = header
        self.profile = get_profile(header.profile)
        self.seq = 0
        self._pending: list[bytes] = []
        self._pending_size = 0
        self.stream.write(encode_header(header))
        self.stream.flush()

    @classmethod
    def create(cls, path: str, header: Header, *, overwrite: bool = False) -> RecordingWriter:
        """Open ``path`` (mode 0600) and write the header. Raises OSError (FileExistsError)."""
        return cls(open_recording_file(path, overwrite=overwrite), header)

    def write(self, event: Event) -> None:
        """Queue one event's line; it reaches the file at the next `flush()` (or when 1 MiB
        is queued)."""
        parts = self.encode(event)
        if parts is None:
            return
        self._pending.extend(parts)
        self._pending_size += sum(len(part) for part in parts)
        if self._pending_size >= 1024 * 1024:
            self.flush()

    def encode(self, event: Event) -> Optional[list[bytes]]:
        """The next line for ``event`` as pieces (see `encode_event_parts`), numbered in
        order; None for events not recorded. For a caller that writes the pieces itself with
        `write_pieces` (the proxy's recorder does, from its own thread)."""
        parts = encode_event_parts(event, self.profile, self.seq + 1)
        if parts is not None:
            self.seq += 1
        return parts

    def write_pieces(self, pieces: list[bytes]) -> None:
        """Write encoded lines and flush the file."""
        if pieces:
            self.stream.writelines(pieces)
        self.stream.flush()

    def flush(self) -> None:
        """Write every queued line and flush the file."""
        pending, self._pending = self._pending, []
        self._pending_size = 0
        self.write_pieces(pending)

    def close(self) -> None:
        self.flush()
        self.stream.close()

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# -- reading ---------------------------------------------------------------------------------


@dataclass
class Recording:
    """A recording read into memory: its header, its events, and what was skipped."""

    header: Header
    profile: Profile
    events: list[Event]
    truncated_tail: bool = False
    """The last line was incomplete (a killed writer); it was ignored."""
    skipped_lines: int = 0

    def exchanges(self) -> list[ExchangeCompleted]:
        return [e for e in self.events if isinstance(e, ExchangeCompleted)]


# The reader's hot path: one shared decoder, and no encoding detection (lines are UTF-8).
_decode_line = json.JSONDecoder().decode
_DIRECTIONS = {direction.value: direction for direction in Direction}


class _Decoder:
    """Rebuilds events from lines, pairing exchange lines with the frames they name."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.frames: dict[tuple[int, str, int], FrameSeen] = {}
        self.violations: dict[tuple[int, str, int], list[Violation]] = {}

    def decode(self, line: bytes) -> Optional[Event]:
        data = _decode_line(line.decode("utf-8"))
        if not isinstance(data, dict):
            raise RecordingError("an event line is not a JSON object")
        kind = data.get("kind")
        t = float(data.get("t", 0.0))
        if kind == "frame":
            return self._frame(data, line, t)
        conn = int(data.get("conn", 0))
        route = str(data.get("route", ""))
        if kind == "open":
            return ConnectionOpened(conn, route, str(data["client"]), str(data["upstream"]), t)
        if kind == "close":
            sizes = data.get("bytes") or {}
            return ConnectionClosed(
                conn,
                route,
                str(data.get("reason", "")),
                t,
                int(sizes.get("c2s", 0)),
                int(sizes.get("s2c", 0)),
                bool(data.get("abnormal", False)),
            )
        if kind == "exchange":
            request = self.frames.pop((conn, "c2s", int(data["req"])), None)
            response = self.frames.pop((conn, "s2c", int(data["resp"])), None)
            if request is None or response is None:
                return None  # its frames were lost before a crash; nothing to pair
            violations = self.violations.pop((conn, "c2s", request.index), [])
            violations += self.violations.pop((conn, "s2c", response.index), [])
            return ExchangeCompleted(conn, route, request, response, tuple(violations))
        if kind == "violation":
            direction = Direction(data["dir"]) if data.get("dir") else None
            frame = data.get("frame")
            found = Violation.from_json(data)
            if direction is not None and frame is not None:
                key = (conn, direction.value, int(frame))
                self.violations.setdefault(key, []).append(found)
            return ViolationSeen(conn, route, direction, frame, t, found)
        if kind == "frame-error":
            return FramingErrorSeen(
                conn,
                route,
                Direction(data["dir"]),
                t,
                FrameErrorKind(data["error"]),
                str(data.get("detail", "")),
                base64.b64decode(data.get("raw", "")),
                bool(data.get("recoverable", False)),
                data.get("declared"),
            )
        if kind == "discarded":
            raw = base64.b64decode(data.get("raw", ""))
            return BytesDiscarded(conn, route, Direction(data["dir"]), t, raw, bool(data["final"]))
        if kind == "fault":
            return FaultInjected(
                conn,
                route,
                Direction(data["dir"]),
                t,
                str(data["fault"]),
                str(data.get("detail", "")),
                data.get("method"),
                base64.b64decode(data.get("original", "")),
            )
        if kind == "gap":
            return EventsMissed(int(data.get("missed", 0)), t, str(data.get("consumer", "")))
        if kind == "unobserved":
            return ObservationLost(
                conn,
                route,
                Direction(data["dir"]),
                t,
                GapReason(data["reason"]),
                int(data.get("size", 0)),
                str(data.get("detail", "")),
                str(data.get("digest", "")),
                base64.b64decode(data.get("header", "")),
            )
        return None  # an event kind from a newer writer: skipped, not fatal

    def _frame(self, data: dict[str, Any], line: bytes, t: float) -> FrameSeen:
        direction = _DIRECTIONS[data["dir"]]
        role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
        redacted = tuple(data.get("redacted", ()))
        if "raw" in data:
            payload = base64.b64decode(data["raw"])
            message = self.profile.parse(payload, role)
        else:
            obj = data.get("msg")
            if redacted:
                payload = self.profile.encode_payload(obj)
            else:
                start = line.index(MSG_KEY) + len(MSG_KEY)
                end = line.rstrip(b"\r\n").rindex(b"}")
                payload = line[start:end]
            if role is Role.REQUEST:
                message = self.profile.parse_request(obj)
            else:
                message = self.profile.parse_response(obj)
        frame = FrameSeen(
            int(data["conn"]),
            str(data.get("route", "")),
            direction,
            int(data["n"]),
            t,
            int(data.get("size", len(payload))),
            payload,
            message,
            redacted,
        )
        self.frames[(frame.conn, direction.value, frame.index)] = frame
        return frame


class RecordingReader:
    """Reads an open recording: the header at construction, then events by iteration.

    A last line without its newline (the writer was killed) is ignored and noted in
    ``truncated_tail``; a damaged line in the middle raises RecordingError naming its number.
    A line over ``max_line`` bytes is refused, so an untrusted trace cannot make the reader
    allocate without bound."""

    def __init__(self, stream: IO[bytes], *, max_line: int = DEFAULT_MAX_LINE) -> None:
        self.stream = stream
        self.max_line = max_line
        self.truncated_tail = False
        self.line_number = 1
        first = stream.readline(max_line + 1)
        if not first:
            raise RecordingError("empty file: no recording header")
        if not first.endswith(b"\n"):
            raise RecordingError("incomplete or oversized recording header line")
        try:
            self.header = Header.from_json(json.loads(first))
        except RecordingError:
            raise
        except ValueError:
            raise RecordingError(
                "not a golem-proxy recording (its first line is not JSON)"
            ) from None
        except RecursionError:
            raise RecordingError("bad recording header: JSON nested too deep") from None
        try:
            self.profile = get_profile(self.header.profile)
        except KeyError as exc:
            raise RecordingError(str(exc)) from None
        self._decoder = _Decoder(self.profile)

    def __iter__(self) -> Iterator[Event]:
        while True:
            line = self.stream.readline(self.max_line + 1)
            if not line:
                return
            self.line_number += 1
            if not line.endswith(b"\n"):
                if len(line) > self.max_line:
                    raise RecordingError(
                        f"line {self.line_number} is longer than {self.max_line} bytes"
                    )
                self.truncated_tail = True
                return  # an incomplete last line: the writer stopped mid-line
            if not line.strip():
                continue
            try:
                event = self._decoder.decode(line)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise RecordingError(f"line {self.line_number}: {exc}") from None
            except RecursionError:
                # json.loads recurses per nesting level: an untrusted line must not escape
                # as something other than a RecordingError.
                raise RecordingError(f"line {self.line_number}: JSON nested too deep") from None
            if event is not None:
                yield event


def read_recording(path: str, *, max_line: int = DEFAULT_MAX_LINE) -> Recording:
    """Read a whole recording. Raises OSError, or RecordingError saying what is wrong."""
    with open(path, "rb") as stream:
        reader = RecordingReader(stream, max_line=max_line)
        events = list(reader)
        return Recording(reader.header, reader.profile, events, reader.truncated_tail)
