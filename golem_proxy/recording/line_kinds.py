"""Recording lines whose event needs nothing of the lines before them (docs/recording-format.md):
a connection's opening, ends and close, an upstream's state, framing errors, bytes discarded,
the proxy's own steps and a server's stderr, each read by a function of its kind
(`PLAIN_KINDS`). `LineDecoder` (line_events.py) reads the kinds that pair, hold or count."""

from __future__ import annotations

from typing import Any, Callable, Union

from golem_core.framing import FrameErrorKind
from golem_core.profiles.members import id_key

from .. import events
from ..events import Event
from .members import (
    fault_held,
    fault_withheld,
    member_among,
    member_base64,
    member_bool,
    member_choice,
    member_direction,
    member_directions,
    member_indexes,
    member_int,
    member_message_id,
    member_optional_int,
    member_optional_str,
    member_redacted,
    member_str,
    member_tool_calls,
    shown,
)
from .schema import RecordingError

__all__ = ["PLAIN_KINDS", "where"]

_FRAME_ERRORS = tuple(kind.value for kind in FrameErrorKind)
_INTERCEPT_KINDS = {kind.value: kind for kind in events.InterceptKind}
_INTERCEPT_PREFIX = "intercept:"


def _is_intercept(fault: object) -> bool:
    # Written before intercept steps had a line kind of their own: a fault named for one.
    return isinstance(fault, str) and fault.startswith(_INTERCEPT_PREFIX)


def _proxy_action(
    data: dict[str, Any], place: events.Where
) -> Union[events.FaultInjected, events.InterceptStep]:
    """A ``fault`` or an ``intercept`` line (or a ``fault`` line of kind ``intercept:STEP``,
    as older files wrote an intercept step)."""
    detail = member_str(data, "detail", "")
    method = member_optional_str(data, "method")
    ident = member_message_id(data)
    withheld = fault_withheld(data, detail)
    original = member_base64(data, "original")
    redacted = member_redacted(data)
    if data.get("kind") == "fault" and not _is_intercept(data.get("fault")):
        fault = member_str(data, "fault")
        server_request = member_bool(data, "server_request", False)
        if server_request and place["direction"] is not events.Direction.S2C:
            # The server's own request travels from the server: a client's frame is none.
            raise RecordingError("server_request on a step of the client's frame (dir c2s)")
        among = member_among(data)
        if among > 1:
            # Only an answer shares its id with requests waiting; the proxy names its id.
            if place["direction"] is not events.Direction.S2C or server_request:
                raise RecordingError("among over 1 on a step of a request: only an answer has it")
            if id_key(ident) is None:
                raise RecordingError("among over 1 on a step without the answer's id")
        return events.FaultInjected(
            **place,
            fault=fault,
            detail=detail,
            held_s=fault_held(data, fault, detail),
            method=method,
            withheld=withheld,
            original=original,
            redacted=redacted,
            message_id=ident,
            among=among,
            server_request=server_request,
        )
    if data.get("kind") == "intercept":
        step = data.get("step")
    else:
        step = member_str(data, "fault")[len(_INTERCEPT_PREFIX) :]
    found = _INTERCEPT_KINDS.get(step) if isinstance(step, str) else None
    if found is None:
        names = " or ".join(_INTERCEPT_KINDS)
        raise RecordingError(f"an intercept step must be {names}, not {shown(step)}")
    return events.InterceptStep(
        **place,
        kind=found,
        detail=detail,
        method=method,
        withheld=withheld,
        original=original,
        redacted=redacted,
        message_id=ident,
    )


def where(data: dict[str, Any], conn: int, route: str, t: float) -> events.Where:
    return events.Where(conn=conn, route=route, direction=member_direction(data), t=t)


def _upstream(data: dict[str, Any], conn: int, route: str, t: float) -> Event:
    state = member_choice(data, "state", ("down", "back"))
    return events.UpstreamStatus(
        route=route, t=t, up=state == "back", detail=member_str(data, "detail", "")
    )


def _end(data: dict[str, Any], conn: int, route: str, t: float) -> Event:
    return events.StreamEnded(
        conn=conn,
        route=route,
        direction=member_direction(data),
        t=t,
        unanswered=member_indexes(data, "unanswered"),
        cut=member_str(data, "cut", ""),
    )


def _open(data: dict[str, Any], conn: int, route: str, t: float) -> Event:
    client, upstream = member_str(data, "client"), member_str(data, "upstream")
    return events.ConnectionOpened(conn=conn, route=route, client=client, upstream=upstream, t=t)


def _close(data: dict[str, Any], conn: int, route: str, t: float) -> Event:
    sizes = data.get("bytes") or {}
    if not isinstance(sizes, dict):
        raise RecordingError(f"bytes must be an object, not {shown(sizes)}")
    return events.ConnectionClosed(
        conn=conn,
        route=route,
        reason=member_str(data, "reason", ""),
        t=t,
        bytes_c2s=member_int(sizes, "c2s", 0),
        bytes_s2c=member_int(sizes, "s2c", 0),
        abnormal=member_bool(data, "abnormal", False),
        tool_calls=member_tool_calls(data),
        gone_before_write=member_bool(data, "gone_before_write", False),
        resets=member_directions(data, "resets"),
    )


def _frame_error(data: dict[str, Any], conn: int, route: str, t: float) -> Event:
    return events.FramingErrorSeen(
        **where(data, conn, route, t),
        kind=FrameErrorKind(member_choice(data, "error", _FRAME_ERRORS)),
        detail=member_str(data, "detail", ""),
        raw=member_base64(data),
        recoverable=member_bool(data, "recoverable", False),
        declared_length=member_optional_int(data, "declared"),
        undelivered=member_str(data, "undelivered", ""),
        delivered_bytes=member_int(data, "delivered_bytes", 0),
        redacted=member_redacted(data),
        cut=member_str(data, "cut", ""),
    )


def _discarded(data: dict[str, Any], conn: int, route: str, t: float) -> Event:
    raw = member_base64(data)
    return events.BytesDiscarded(
        **where(data, conn, route, t),
        raw=raw,
        final=member_bool(data, "final"),
        undelivered=member_str(data, "undelivered", ""),
        delivered_bytes=member_int(data, "delivered_bytes", 0),
        redacted=member_redacted(data),
    )


def _proxy_step(data: dict[str, Any], conn: int, route: str, t: float) -> Event:
    return _proxy_action(data, where(data, conn, route, t))


def _stderr(data: dict[str, Any], conn: int, route: str, t: float) -> Event:
    if "raw" in data:
        output = member_base64(data)
    else:
        output = member_str(data, "text").encode("utf-8", "surrogatepass")
    return events.ProcessOutput(conn=conn, route=route, t=t, data=output)


PLAIN_KINDS: dict[str, Callable[[dict[str, Any], int, str, float], Event]] = {
    "upstream": _upstream,
    "end": _end,
    "open": _open,
    "close": _close,
    "frame-error": _frame_error,
    "discarded": _discarded,
    "fault": _proxy_step,
    "intercept": _proxy_step,
    "stderr": _stderr,
}
"""The reading of each kind of line that stands on its own: given the line's object, its
connection, route and time."""
