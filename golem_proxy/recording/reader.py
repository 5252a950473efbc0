"""Reading a recording (docs/recording-format.md), treating it as untrusted input.

A recording may come from anyone (a bug report, a colleague, CI), so the reader assumes
nothing: before a line is parsed, its nesting depth and the memory parsing it would take are
estimated from its structural characters (a line of ``[[],…]`` costs ~25 times its bytes
once parsed); after, every member an event is built from is checked for type and range
(finite numbers, whole numbers within `MAX_INT`, strings as strings). Every problem is a
`RecordingError` naming the line and what is wrong, never another exception.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn, Optional

from golem_core.contract import Severity, Violation
from golem_core.framing import FrameErrorKind
from golem_core.messages import Role
from golem_core.pairing import R_ORPHAN_RESPONSE
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
    InterceptKind,
    InterceptStep,
    ObservationLost,
    ProcessOutput,
    ToolCallRef,
    UpstreamStatus,
    ViolationSeen,
)
from ..terminal import safe_text
from .files import open_recording
from .schema import (
    DEFAULT_LINE_BUDGET,
    DEFAULT_MAX_LINE,
    MAX_DEPTH,
    MAX_INT,
    MSG_KEY,
    VERSION,
    Header,
    RecordingError,
)
from .v1_pairing import V1Pairing

__all__ = [
    "Recording",
    "RecordingReader",
    "check_line",
    "decode_json",
    "parse_header",
    "read_recording",
]

WITHHELD = "withheld"
"""First word of a fault's detail when the proxy did not forward the message: how a fault line
written before faults carried ``withheld`` says so."""


@dataclass
class Recording:
    """A recording read into memory: its header, its events, and what was skipped."""

    header: Header
    profile: Profile
    events: list[Event]
    truncated_tail: bool = False
    """The last line was incomplete (a killed writer); it was ignored."""
    skipped_lines: int = 0
    route_profiles: dict[str, Profile] = field(default_factory=dict)
    """Routes whose frames have a profile of their own (`golem-proxy mcp`'s ``mcp`` route)."""

    def profile_for(self, route: str) -> Profile:
        """The profile of ``route``'s frames."""
        return self.route_profiles.get(route, self.profile)

    def exchanges(self) -> list[ExchangeCompleted]:
        return [e for e in self.events if isinstance(e, ExchangeCompleted)]


# -- before parsing: depth and memory ----------------------------------------------------------

# A JSON string, unrolled so that the regex engine runs through plain characters in one step.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
# Bytes parsing costs per structural character: a container object with its slot in its
# parent, and an element (pointer and a small object) per comma.
_CONTAINER_COST = 64
_ELEMENT_COST = 32


def check_line(line: bytes, *, budget: int = DEFAULT_LINE_BUDGET, depth: int = MAX_DEPTH) -> None:
    """Refuse a line whose parse would cost more than ``budget`` bytes or nest deeper than
    ``depth``, judged without parsing it. Raises RecordingError."""
    opens = line.count(b"[") + line.count(b"{")
    cost = 2 * len(line) + _CONTAINER_COST * opens + _ELEMENT_COST * line.count(b",")
    if cost > budget:
        raise RecordingError(
            f"too large to parse: about {cost >> 20} MiB once parsed "
            f"(limit {budget >> 20} MiB; {opens} arrays and objects in {len(line)} bytes)"
        )
    if opens > depth and _deeper_than(line, depth):
        raise RecordingError(f"JSON nested too deep (more than {depth} levels)")


def _deeper_than(line: bytes, depth: int) -> bool:
    # Brackets inside strings do not count; what is left is peeled one level per pass, so a
    # wide structure goes in a few passes and a deep one stops after ``depth``.
    skeleton = _STRING.sub(b"", line).translate(None, _NOT_BRACKETS)
    skeleton = skeleton.replace(b"{", b"[").replace(b"}", b"]")
    # A run of ``depth + 1`` opening brackets is that deep already: found in one linear search,
    # where peeling ``[[[…]]]`` a level per pass would cost ``depth`` passes.
    run = b"[" * (depth + 1)
    for _ in range(depth):
        if run in skeleton:
            return True
        shorter = skeleton.replace(b"[]", b"")
        if len(shorter) == len(skeleton):
            return False  # empty, or unbalanced: json reports that
        skeleton = shorter
    return bool(skeleton)


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


# The reader's hot path: one shared decoder, and no encoding detection (lines are UTF-8).
_decode = json.JSONDecoder(parse_constant=_no_constant).decode


def decode_json(line: bytes) -> Any:
    """Parse one checked line. Raises RecordingError for invalid UTF-8 or JSON."""
    try:
        return _decode(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordingError(f"not UTF-8 (byte {exc.start})") from None
    except ValueError as exc:
        raise RecordingError(f"not JSON: {exc}") from None
    except RecursionError:  # a depth the check let through on a small stack
        raise RecordingError("JSON nested too deep") from None


def parse_header(first: bytes) -> tuple[Header, Profile]:
    """The header and profile of a recording's first line (with its newline). Raises
    RecordingError saying what is wrong."""
    if not first:
        raise RecordingError("empty file: no recording header")
    if not first.endswith(b"\n"):
        raise RecordingError("incomplete or oversized recording header line")
    try:
        check_line(first)
        data = decode_json(first)
    except RecordingError as exc:
        if exc.what.startswith("not "):
            # Some other file (a README, a log): what the parser says of it would not help.
            kind = exc.what.partition(":")[0].partition(" (")[0]
            raise RecordingError(
                f"not a golem-proxy recording (its first line is {kind})"
            ) from None
        raise RecordingError(f"bad recording header: {exc.what}", line=1) from None
    header = Header.from_json(data)
    try:
        return header, get_profile(header.profile)
    except KeyError:
        raise RecordingError(
            f"unknown profile {safe_text(header.profile, 60)!r} in the header", line=1
        ) from None


# -- members: type and range --------------------------------------------------------------------

_ABSENT: Any = object()


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) else repr(value)
    return safe_text(text, 40)


def member_int(data: dict[str, Any], key: str, default: Any = _ABSENT) -> int:
    """``data[key]`` as a whole number from 0 to `MAX_INT` (``default`` when absent)."""
    value = data.get(key, _ABSENT)
    if value is _ABSENT:
        if default is _ABSENT:
            raise RecordingError(f"no {key}")
        return default  # type: ignore[no-any-return]
    if type(value) is not int or not 0 <= value <= MAX_INT:
        raise RecordingError(f"{key} must be a whole number from 0 to 2**53, not {_show(value)}")
    return value


def member_optional_int(data: dict[str, Any], key: str) -> Optional[int]:
    if data.get(key) is None:
        return None
    return member_int(data, key)


def member_number(data: dict[str, Any], key: str, default: float = 0.0) -> float:
    """``data[key]`` as a finite number of seconds (``default`` when absent)."""
    value = data.get(key, _ABSENT)
    if value is _ABSENT:
        return default
    if type(value) not in (int, float) or not math.isfinite(value) or abs(value) > 1e12:
        raise RecordingError(f"{key} must be a finite number of seconds, not {_show(value)}")
    return float(value)


def member_str(data: dict[str, Any], key: str, default: Any = _ABSENT) -> str:
    value = data.get(key, _ABSENT)
    if value is _ABSENT:
        if default is _ABSENT:
            raise RecordingError(f"no {key}")
        return default  # type: ignore[no-any-return]
    if not isinstance(value, str):
        raise RecordingError(f"{key} must be a string, not {_show(value)}")
    return value


def member_optional_str(data: dict[str, Any], key: str) -> Optional[str]:
    if data.get(key) is None:
        return None
    return member_str(data, key)


def member_bool(data: dict[str, Any], key: str, default: Any = _ABSENT) -> bool:
    value = data.get(key, _ABSENT)
    if value is _ABSENT:
        if default is _ABSENT:
            raise RecordingError(f"no {key}")
        return default  # type: ignore[no-any-return]
    if not isinstance(value, bool):
        raise RecordingError(f"{key} must be true or false, not {_show(value)}")
    return value


_DIRECTIONS = {direction.value: direction for direction in Direction}


def member_direction(data: dict[str, Any], key: str = "dir") -> Direction:
    value = data.get(key)
    found = _DIRECTIONS.get(value) if isinstance(value, str) else None
    if found is None:
        raise RecordingError(f'{key} must be "c2s" or "s2c", not {_show(value)}')
    return found


def member_base64(data: dict[str, Any], key: str = "raw") -> bytes:
    value = member_str(data, key, "")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RecordingError(f"{key} is not base64") from None


def _enum(data: dict[str, Any], key: str, choices: tuple[str, ...]) -> str:
    value = data.get(key)
    if value not in choices or not isinstance(value, str):
        names = " or ".join(choices)
        raise RecordingError(f"{key} must be {names}, not {_show(value)}")
    return value


_FRAME_ERRORS = tuple(kind.value for kind in FrameErrorKind)
_SEVERITIES = tuple(severity.value for severity in Severity)
_GAP_REASONS = tuple(reason.value for reason in GapReason)


_INTERCEPT_KINDS = {kind.value: kind for kind in InterceptKind}
_INTERCEPT_PREFIX = "intercept:"


def _is_intercept(fault: object) -> bool:
    # Written before intercept steps had a line kind of their own: a fault named for one.
    return isinstance(fault, str) and fault.startswith(_INTERCEPT_PREFIX)


def _intercept_step(data: dict[str, Any], conn: int, route: str, t: float) -> InterceptStep:
    """An ``intercept`` line, or a ``fault`` line of kind ``intercept:STEP`` (older files)."""
    if data.get("kind") == "intercept":
        step = data.get("step")
    else:
        step = member_str(data, "fault")[len(_INTERCEPT_PREFIX) :]
    found = _INTERCEPT_KINDS.get(step) if isinstance(step, str) else None
    if found is None:
        names = " or ".join(_INTERCEPT_KINDS)
        raise RecordingError(f"an intercept step must be {names}, not {_show(step)}")
    detail = member_str(data, "detail", "")
    return InterceptStep(
        conn=conn,
        route=route,
        direction=member_direction(data),
        t=t,
        kind=found,
        detail=detail,
        method=member_optional_str(data, "method"),
        withheld=fault_withheld(data, detail),
        original=member_base64(data, "original"),
    )


def fault_withheld(data: dict[str, Any], detail: str) -> bool:
    """Whether a fault line says the proxy did not forward the message."""
    if "withheld" in data:
        return member_bool(data, "withheld")
    return detail.startswith(WITHHELD)  # written before faults carried the member


# -- events -----------------------------------------------------------------------------------


def route_profiles(header: Header) -> dict[str, Profile]:
    """The routes whose frames have a profile of their own (``"profile"`` in the header's
    route entry: `golem-proxy mcp`'s ``mcp`` route). Raises RecordingError for a profile this
    version does not know."""
    found: dict[str, Profile] = {}
    for route, name in header.route_profile_names().items():
        try:
            found[route] = get_profile(name)
        except KeyError:
            raise RecordingError(
                f"unknown profile {safe_text(name, 60)!r} for route "
                f"{safe_text(route, 60)!r} in the header",
                line=1,
            ) from None
    return found


def member_tool_calls(data: dict[str, Any]) -> Optional[tuple[ToolCallRef, ...]]:
    """A frame's ``tool_calls`` (None when absent). Raises RecordingError for a bad one."""
    calls = data.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise RecordingError("tool_calls must be a list of objects")
    found = []
    for call in calls:
        ident = call.get("id")
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            raise RecordingError(
                f"a tool call's id must be a string or an integer, not {_show(ident)}"
            )
        found.append(
            ToolCallRef(
                member_int(call, "conn"), member_int(call, "n"), ident, member_str(call, "tool")
            )
        )
    return tuple(found)


class _Decoder:
    """Rebuilds events from lines, pairing exchange lines with the frames they name.

    It holds only what an exchange line may still name: the requests waiting for their answer
    (``expects_answer``) and the answers waiting for their exchange line (``answers``), with
    their violations, until the exchange or the connection's close. A notification, an orphan
    or an answer to a request never seen is never held."""

    def __init__(
        self, profile: Profile, routes: Optional[dict[str, Profile]] = None, version: int = VERSION
    ) -> None:
        self.profile = profile
        self.routes = routes or {}
        self.frames: dict[tuple[int, str, int], FrameSeen] = {}
        self.violations: dict[tuple[int, str, int], list[Violation]] = {}
        self.v1 = V1Pairing(profile, self.routes) if version == 1 else None
        """Pairs a version-1 file's frames as they are read (its lines do not say)."""

    def decode(self, line: bytes) -> Optional[Event]:
        event = self._decode(line)
        if self.v1 is not None and event is not None and not isinstance(event, FrameSeen):
            self.v1.other(event)
        if isinstance(event, ConnectionClosed):
            self._forget(event.conn)
        return event

    def _forget(self, conn: int) -> None:
        """The connection closed: no exchange line will name its frames any more."""
        for key in [k for k in self.frames if k[0] == conn]:
            del self.frames[key]
        for key in [k for k in self.violations if k[0] == conn]:
            del self.violations[key]

    def _decode(self, line: bytes) -> Optional[Event]:
        check_line(line)
        data = decode_json(line)
        if not isinstance(data, dict):
            raise RecordingError("an event line is not a JSON object")
        kind = data.get("kind")
        t = member_number(data, "t")
        if kind == "frame":
            return self._frame(data, line, t)
        if kind == "gap":
            return EventsMissed(member_int(data, "missed", 0), t, member_str(data, "consumer", ""))
        conn = member_int(data, "conn", 0)
        # Interned: a large recording names the same few routes on every line.
        route = sys.intern(member_str(data, "route", ""))
        if kind == "upstream":
            state = _enum(data, "state", ("down", "back"))
            return UpstreamStatus(route, t, state == "back", member_str(data, "detail", ""))
        if kind == "open":
            client, upstream = member_str(data, "client"), member_str(data, "upstream")
            return ConnectionOpened(conn, route, client, upstream, t)
        if kind == "close":
            sizes = data.get("bytes") or {}
            if not isinstance(sizes, dict):
                raise RecordingError(f"bytes must be an object, not {_show(sizes)}")
            return ConnectionClosed(
                conn,
                route,
                member_str(data, "reason", ""),
                t,
                member_int(sizes, "c2s", 0),
                member_int(sizes, "s2c", 0),
                member_bool(data, "abnormal", False),
            )
        if kind in ("exchange", "server-exchange"):
            # A server-exchange pairs a request the server sent with the client's answer.
            asked, answered = ("c2s", "s2c") if kind == "exchange" else ("s2c", "c2s")
            request = self.frames.pop((conn, asked, member_int(data, "req")), None)
            response = self.frames.pop((conn, answered, member_int(data, "resp")), None)
            if request is None or response is None:
                return None  # its frames were lost before a crash; nothing to pair
            violations = self.violations.pop((conn, asked, request.index), [])
            violations += self.violations.pop((conn, answered, response.index), [])
            # Decided as the tap decides it, from the frames (the line's status is for people).
            profile = self.routes.get(route, self.profile)
            outcome = profile.outcome(request.message, response.message)
            return ExchangeCompleted(conn, route, request, response, outcome, tuple(violations))
        if kind == "violation":
            return self._violation(data, conn, route, t)
        if kind == "frame-error":
            return FramingErrorSeen(
                conn,
                route,
                member_direction(data),
                t,
                FrameErrorKind(_enum(data, "error", _FRAME_ERRORS)),
                member_str(data, "detail", ""),
                member_base64(data),
                member_bool(data, "recoverable", False),
                member_optional_int(data, "declared"),
            )
        if kind == "discarded":
            raw = member_base64(data)
            return BytesDiscarded(
                conn, route, member_direction(data), t, raw, member_bool(data, "final")
            )
        if kind == "intercept" or (kind == "fault" and _is_intercept(data.get("fault"))):
            return _intercept_step(data, conn, route, t)
        if kind == "fault":
            detail = member_str(data, "detail", "")
            return FaultInjected(
                conn,
                route,
                member_direction(data),
                t,
                member_str(data, "fault"),
                detail,
                member_optional_str(data, "method"),
                fault_withheld(data, detail),
                member_base64(data, "original"),
            )
        if not isinstance(kind, str):
            raise RecordingError(f"kind must be a string, not {_show(kind)}")
        if kind == "stderr":
            if "raw" in data:
                output = member_base64(data)
            else:
                output = member_str(data, "text").encode("utf-8", "surrogatepass")
            return ProcessOutput(conn, route, t, output)
        if kind == "unobserved":
            reason = GapReason(_enum(data, "reason", _GAP_REASONS))
            return ObservationLost(
                conn,
                route,
                member_direction(data),
                t,
                reason,
                member_int(data, "size", 0),
                member_str(data, "detail", ""),
                member_str(data, "digest", ""),
                member_base64(data, "header"),
            )
        return None  # an event kind from a newer writer: skipped, not fatal

    def _violation(self, data: dict[str, Any], conn: int, route: str, t: float) -> ViolationSeen:
        direction = member_direction(data) if data.get("dir") is not None else None
        frame = member_optional_int(data, "frame")
        found = Violation(
            member_str(data, "rule"),
            member_str(data, "message"),
            member_str(data, "path", "$"),
            Severity(_enum(data, "severity", _SEVERITIES) if "severity" in data else "error"),
            member_optional_str(data, "outcome"),
        )
        if direction is not None and frame is not None:
            key = (conn, direction.value, frame)
            if key in self.frames:  # an exchange line will carry it
                self.violations.setdefault(key, []).append(found)
        # Files written before violations carried ``orphan`` said so by the rule alone.
        orphan = member_bool(data, "orphan", found.rule == R_ORPHAN_RESPONSE.id)
        return ViolationSeen(conn, route, direction, frame, t, found, orphan)

    def _frame(self, data: dict[str, Any], line: bytes, t: float) -> FrameSeen:
        direction = member_direction(data)
        profile = self.profile
        if self.routes:
            profile = self.routes.get(member_str(data, "route", ""), profile)
        role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
        redacted = data.get("redacted", ())
        if not isinstance(redacted, (list, tuple)) or not all(isinstance(p, str) for p in redacted):
            raise RecordingError("redacted must be a list of strings")
        redacted = tuple(redacted)
        if "raw" in data:
            payload = member_base64(data)
            message = profile.parse(payload, role)
        else:
            if "msg" not in data:
                raise RecordingError("a frame line has neither msg nor raw")
            obj = data["msg"]
            if redacted:
                payload = profile.encode_payload(obj)
            else:
                start = line.find(MSG_KEY)
                end = line.rstrip(b"\r\n").rfind(b"}")
                if start < 0 or end < start:
                    raise RecordingError('msg is not where the writer puts it (,"msg": last)')
                payload = line[start + len(MSG_KEY) : end]
            if type(obj) is dict and type(obj.get("method")) is str:
                # One string per method name, not one per request: a viewer keeps them all.
                obj["method"] = sys.intern(obj["method"])
            message = profile.parse_decoded(obj, role)
        frame = FrameSeen(
            member_int(data, "conn"),
            sys.intern(member_str(data, "route", "")),
            direction,
            member_int(data, "n"),
            t,
            member_int(data, "size", len(payload)),
            payload,
            message,
            redacted,
            tool_calls=member_tool_calls(data),
            expects_answer=member_bool(data, "expects_answer", False),
            answers=member_optional_int(data, "answers"),
            orphan=member_bool(data, "orphan", False),
        )
        if self.v1 is not None:
            frame = self.v1.frame(frame)
        if frame.expects_answer or frame.answers is not None:  # an exchange line will name it
            self.frames[(frame.conn, direction.value, frame.index)] = frame
        return frame


class RecordingReader:
    """Reads an open recording: the header at construction, then events by iteration.

    A last line without its newline (the writer was killed) is ignored and noted in
    ``truncated_tail``; a damaged line in the middle raises RecordingError naming its number
    (and the file, given ``path``). A line over ``max_line`` bytes, or one whose parse would
    cost more than ``budget`` bytes, is refused, so an untrusted trace cannot make the reader
    allocate without bound. Iterating again after the end picks up lines written since (a
    followed file)."""

    def __init__(
        self,
        stream: IO[bytes],
        *,
        max_line: int = DEFAULT_MAX_LINE,
        path: Optional[str] = None,
    ) -> None:
        self.stream = stream
        self.max_line = max_line
        self.path = path
        self.truncated_tail = False
        self.line_number = 1
        try:
            self.header, self.profile = parse_header(stream.readline(max_line + 1))
        except RecordingError as exc:
            raise self._named(exc) from None
        try:
            self.route_profiles = route_profiles(self.header)
        except RecordingError as exc:
            raise self._named(exc) from None
        """The routes whose frames have a profile of their own, by name."""
        self._decoder = _Decoder(self.profile, self.route_profiles, self.header.version)

    def _named(self, exc: RecordingError) -> RecordingError:
        return exc if self.path is None else exc.at(self.path)

    def __iter__(self) -> Iterator[Event]:
        decode = self._decoder.decode
        while True:
            line = self.stream.readline(self.max_line + 1)
            if not line:
                return
            self.line_number += 1
            if not line.endswith(b"\n"):
                if len(line) > self.max_line:
                    raise self._named(
                        RecordingError(f"longer than {self.max_line} bytes", line=self.line_number)
                    )
                self.truncated_tail = True
                return  # an incomplete last line: the writer stopped mid-line
            if not line.strip():
                continue
            try:
                event = decode(line)
            except RecordingError as exc:
                raise self._named(RecordingError(exc.what, line=self.line_number)) from None
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
                # A profile's parse of a valid line never raises; this is a last net so that
                # an untrusted line never escapes as something other than a RecordingError.
                what = f"{type(exc).__name__}: {safe_text(str(exc), 120)}"
                raise self._named(RecordingError(what, line=self.line_number)) from None
            if event is not None:
                yield event


def read_recording(path: str, *, max_line: int = DEFAULT_MAX_LINE) -> Recording:
    """Read a whole recording. Raises OSError, or RecordingError naming the file, the line
    and what is wrong."""
    with open_recording(path) as stream:
        reader = RecordingReader(stream, max_line=max_line, path=path)
        events = list(reader)
        return Recording(
            reader.header,
            reader.profile,
            events,
            reader.truncated_tail,
            route_profiles=reader.route_profiles,
        )
