"""A recording opened for reading: its events folded into flows, and flows as JSON.

The reading commands (`show`, `stats`, `check`, `export`) all start here, so they agree on what
a trace holds and report a missing or damaged file the same way.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.messages import Malformed, MalformedKind
from golem_core.profiles import Profile

from ..events import Event, FrameSeen
from ..recording.format import Header, Recording, RecordingError, read_recording
from .flows import Flow, FlowTracker

__all__ = ["Trace", "TraceError", "flow_to_json", "load_trace"]


class TraceError(Exception):
    """A recording that cannot be read; the message is one line, fit for the command line."""


@dataclass
class Trace:
    path: str
    recording: Recording
    tracker: FlowTracker

    @property
    def header(self) -> Header:
        return self.recording.header

    @property
    def profile(self) -> Profile:
        return self.recording.profile

    @property
    def events(self) -> list[Event]:
        return self.recording.events

    @property
    def flows(self) -> list[Flow]:
        return self.tracker.flows


def load_trace(path: str) -> Trace:
    """Read the recording at ``path`` (up to its last complete line) and build its flows.

    Raises TraceError saying why the file cannot be read."""
    try:
        recording = read_recording(path)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a recording") from None
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None
    except RecordingError as exc:
        raise TraceError(f"{path}: {exc}") from None
    tracker = FlowTracker(recording.profile)
    for event in recording.events:
        tracker.apply(event)
    return Trace(path, recording, tracker)


def _message_json(frame: Optional[FrameSeen], prefix: str) -> dict[str, Any]:
    """``{prefix: obj}``, plus ``{prefix}_raw`` (base64) when the payload is not JSON."""
    if frame is None:
        return {prefix: None}
    message = frame.message
    undecodable = isinstance(message, Malformed) and message.kind in (
        MalformedKind.INVALID_UTF8,
        MalformedKind.INVALID_JSON,
    )
    if undecodable:
        return {prefix: None, f"{prefix}_raw": base64.b64encode(frame.payload).decode("ascii")}
    return {prefix: message.obj}


def flow_to_json(flow: Flow, profile: Profile) -> dict[str, Any]:
    """One flow as a JSON object: what `show --json` and `export --format jsonl` print."""
    ident = None
    for frame in (flow.request, flow.response):
        if frame is not None and frame.message.id is not None:
            ident = frame.message.id
            break
    latency = flow.latency
    data: dict[str, Any] = {
        "number": flow.number,
        "t": flow.t,
        "route": flow.route,
        "conn": flow.conn,
        "method": flow.method,
        "id": ident,
        "status": flow.status(profile),
        "error": flow.is_error,
        "latency_ms": None if latency is None else round(latency * 1000, 3),
        "request_size": flow.request_size,
        "response_size": flow.response_size,
    }
    data.update(_message_json(flow.request, "request"))
    data.update(_message_json(flow.response, "response"))
    if flow.frame_error is not None:
        error = flow.frame_error
        data["frame_error"] = {
            "direction": error.direction.value,
            "kind": error.kind.value,
            "detail": error.detail,
            "size": len(error.raw),
        }
    data["violations"] = [violation.to_json() for violation in flow.violations]
    return data
