"""Recording lines back to events (docs/recording-format.md): one `LineDecoder` per file, fed
its lines in order. It pairs an exchange line with the frames it names, holding only what such
a line may still name, and pairs a version-1 file's frames once (`v1_pairing`)."""

from __future__ import annotations

import sys
from typing import Any, Optional

from golem_core.contract import Severity, Violation
from golem_core.framing import FrameErrorKind
from golem_core.messages import Role
from golem_core.pairing import R_ORPHAN_RESPONSE
from golem_core.profiles import Profile

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
    UpstreamStatus,
    ViolationSeen,
)
from .line_guard import check_line, decode_json
from .members import (
    fault_withheld,
    member_base64,
    member_bool,
    member_choice,
    member_direction,
    member_int,
    member_number,
    member_optional_int,
    member_optional_str,
    member_str,
    member_tool_calls,
    shown,
)
from .schema import MSG_KEY, VERSION, RecordingError
from .shared_file import STOPPED_KIND
from .v1_pairing import V1Pairing

__all__ = ["LineDecoder"]

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
        raise RecordingError(f"an intercept step must be {names}, not {shown(step)}")
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


class LineDecoder:
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
        self.stopped: Optional[ObservationLost] = None
        """Where observation stopped, once that line was read (`GapReason.STOPPED`)."""
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
            return EventsMissed(
                count=member_int(data, "missed", 0), t=t, consumer=member_str(data, "consumer", "")
            )
        conn = member_int(data, "conn", 0)
        # Interned: a large recording names the same few routes on every line.
        route = sys.intern(member_str(data, "route", ""))
        if kind == "upstream":
            state = member_choice(data, "state", ("down", "back"))
            return UpstreamStatus(
                route=route, t=t, up=state == "back", detail=member_str(data, "detail", "")
            )
        if kind == "open":
            client, upstream = member_str(data, "client"), member_str(data, "upstream")
            return ConnectionOpened(conn=conn, route=route, client=client, upstream=upstream, t=t)
        if kind == "close":
            sizes = data.get("bytes") or {}
            if not isinstance(sizes, dict):
                raise RecordingError(f"bytes must be an object, not {shown(sizes)}")
            return ConnectionClosed(
                conn=conn,
                route=route,
                reason=member_str(data, "reason", ""),
                t=t,
                bytes_c2s=member_int(sizes, "c2s", 0),
                bytes_s2c=member_int(sizes, "s2c", 0),
                abnormal=member_bool(data, "abnormal", False),
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
            return ExchangeCompleted(
                conn=conn,
                route=route,
                request=request,
                response=response,
                outcome=outcome,
                violations=tuple(violations),
            )
        if kind == "violation":
            return self._violation(data, conn, route, t)
        if kind == "frame-error":
            return FramingErrorSeen(
                conn=conn,
                route=route,
                direction=member_direction(data),
                t=t,
                kind=FrameErrorKind(member_choice(data, "error", _FRAME_ERRORS)),
                detail=member_str(data, "detail", ""),
                raw=member_base64(data),
                recoverable=member_bool(data, "recoverable", False),
                declared_length=member_optional_int(data, "declared"),
            )
        if kind == "discarded":
            raw = member_base64(data)
            return BytesDiscarded(
                conn=conn,
                route=route,
                direction=member_direction(data),
                t=t,
                raw=raw,
                final=member_bool(data, "final"),
            )
        if kind == "intercept" or (kind == "fault" and _is_intercept(data.get("fault"))):
            return _intercept_step(data, conn, route, t)
        if kind == "fault":
            detail = member_str(data, "detail", "")
            return FaultInjected(
                conn=conn,
                route=route,
                direction=member_direction(data),
                t=t,
                fault=member_str(data, "fault"),
                detail=detail,
                method=member_optional_str(data, "method"),
                withheld=fault_withheld(data, detail),
                original=member_base64(data, "original"),
            )
        if not isinstance(kind, str):
            raise RecordingError(f"kind must be a string, not {shown(kind)}")
        if kind == "stderr":
            if "raw" in data:
                output = member_base64(data)
            else:
                output = member_str(data, "text").encode("utf-8", "surrogatepass")
            return ProcessOutput(conn=conn, route=route, t=t, data=output)
        if kind == STOPPED_KIND:  # the whole session's gap, from here to the end
            why, stop = member_str(data, "detail", ""), GapReason.STOPPED
            self.stopped = ObservationLost(conn=0, route="", direction=Direction.C2S, t=t,
                                           reason=stop, size=0, detail=why)  # fmt: skip
            return self.stopped
        if kind == "unobserved":
            reason = GapReason(member_choice(data, "reason", _GAP_REASONS))
            return ObservationLost(
                conn=conn,
                route=route,
                direction=member_direction(data),
                t=t,
                reason=reason,
                size=member_int(data, "size", 0),
                detail=member_str(data, "detail", ""),
                digest=member_str(data, "digest", ""),
                header=member_base64(data, "header"),
            )
        return None  # an event kind from a newer writer: skipped, not fatal

    def _violation(self, data: dict[str, Any], conn: int, route: str, t: float) -> ViolationSeen:
        direction = member_direction(data) if data.get("dir") is not None else None
        frame = member_optional_int(data, "frame")
        found = Violation(
            member_str(data, "rule"),
            member_str(data, "message"),
            member_str(data, "path", "$"),
            Severity(
                member_choice(data, "severity", _SEVERITIES) if "severity" in data else "error"
            ),
            member_optional_str(data, "outcome"),
        )
        if direction is not None and frame is not None:
            key = (conn, direction.value, frame)
            if key in self.frames:  # an exchange line will carry it
                self.violations.setdefault(key, []).append(found)
        # Files written before violations carried ``orphan`` said so by the rule alone.
        orphan = member_bool(data, "orphan", found.rule == R_ORPHAN_RESPONSE.id)
        return ViolationSeen(
            conn=conn,
            route=route,
            direction=direction,
            frame_index=frame,
            t=t,
            violation=found,
            orphan=orphan,
        )

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
            conn=member_int(data, "conn"),
            route=sys.intern(member_str(data, "route", "")),
            direction=direction,
            index=member_int(data, "n"),
            t=t,
            size=member_int(data, "size", len(payload)),
            payload=payload,
            message=message,
            redacted=redacted,
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
