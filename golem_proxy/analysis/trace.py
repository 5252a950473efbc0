"""A recording opened for the views (`show`, `stats`, `check`, `export`): its events, folded
into flows as they are read, and flows as JSON.

The reading commands all start here, so they agree on what a trace holds and report a missing
or damaged file the same way. A `FlowReader` streams: it reads one line at a time and hands a
flow on as soon as it is settled, so the first rows of a large trace come at once and memory
does not grow with the trace.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Iterator
from typing import IO, Any, Optional

from golem_core.messages import Malformed, MalformedKind
from golem_core.profiles import Profile

from ..events import Event, FrameSeen, ObservationLost, SessionEnded, SpoolFull
from ..recording.fast_reader import FastRecordingReader
from ..recording.format import (
    OpenedRecording,
    RecordingError,
    RecordingReader,
    open_recording,
)
from ..recording.held_frames import IN_FLIGHT_BYTES, HeldFrames, held_cost
from ..recording.seq_watch import SeqWatch
from ..recording.time_watch import TimeWatch
from ..recording.unheld_exchanges import UnheldExchanges
from .flows import Flow, FlowTracker
from .proxy_notes import ProxyStep, held_of
from .server_stderr import stderr_heading

__all__ = [
    "EVENTS_PER_PIECE",
    "PIECE_BYTES",
    "FlowReader",
    "TraceError",
    "flow_to_json",
    "json_ms",
    "json_text",
    "numbers_named",
    "open_flows",
]

PIECE_BYTES = 16 * 1024 * 1024
"""The frames a piece of `FlowReader.batches` holds before it is handed on, at most (one flow
past it): a trace of 16 MiB viewport captures is not read whole into a piece of 1,000 flows.
Counted as a reader charges what it holds (`held_cost`: the bytes and what their parse
holds). In payload bytes alone, a message parsed cost five times over (a mesh's numbers:
`check` of 300 answers of 380 KB of numbers peaked at 721 MiB with pieces of 64 MiB, 240
with 16), and 25 times (150 calls of 64 KiB of ``[[],…]``, 277 MiB)."""

EVENTS_PER_PIECE = 16_384
"""The events a piece of `FlowReader.batches` holds before it is handed on: a trace of
connections that carry no flow (opened and closed, nothing said) settles none, and a piece
held every event of it (`check` of 300,000 such connections peaked at 227 MiB)."""


def _piece_cost(frame: FrameSeen, left: int) -> int:
    """What ``frame`` costs a piece with ``left`` bytes of room: its bytes when they fill it
    already (the piece is handed on whatever its parse holds: not counted for nothing, at
    16-40 ms a 16 MiB mesh), else what holding it costs (`held_cost`)."""
    size = max(frame.size, len(frame.payload))
    return size if size >= left else held_cost(frame)


class TraceError(Exception):
    """A recording that cannot be read; the message is one line, fit for the command line:
    the file, the line number when the problem is in one line, and what is wrong."""


class FlowReader(OpenedRecording):
    """A recording being read: its header and profile at once, then its events or flows,
    once, as they are read. Errors while reading raise TraceError. Close it when done (it is
    a context manager)."""

    def __init__(self, path: str, stream: IO[bytes], reader: RecordingReader) -> None:
        super().__init__(path, stream, reader)
        self.tracker = FlowTracker(reader.profile, keep=False)
        self.flow_count = 0
        """Flows handed on so far (all of them once `flows` is exhausted)."""
        self.read_to_end = False
        """Every line was read (`unclosed` is known only then)."""
        self.being_written_at_end: Optional[bool] = None
        """Whether a writer was still writing the file when it was read to its end
        (`OpenedRecording.being_written`, asked then, while the file is open); None until
        then, or when it could not be told."""

    @property
    def stopped(self) -> Optional[ObservationLost]:
        """Where observation stopped while forwarding went on, if the recording says so."""
        return self._reader.stopped

    @property
    def spool_full(self) -> Optional[SpoolFull]:
        """Where the spool reached ``--spool-limit`` and the session went on without it, if
        the recording says so (as far as read)."""
        return self._reader.spool_full

    @property
    def ended(self) -> Optional[SessionEnded]:
        """Where the session ended in order (its ``session-end`` line, the last event), if
        the recording says so."""
        return self._reader.ended

    @property
    def restarts(self) -> list[ObservationLost]:
        """Where a new observing process took over the recording (the recording goes on after
        each), in order, as far as it was read: the first `RESTARTS_KEPT`."""
        return self._reader.restarts

    @property
    def restart_count(self) -> int:
        """How many times a new observing process took over, as far as read."""
        return self._reader.restart_count

    @property
    def last_restart(self) -> Optional[ObservationLost]:
        """The last time a new observing process took over, as far as read."""
        return self._reader.last_restart

    @property
    def held(self) -> HeldFrames:
        """What the reader holds until a later line names it, and what it let go past its
        bound (`HeldFrames.let_go`), as far as read."""
        return self._reader.held

    @property
    def unheld(self) -> UnheldExchanges:
        """The exchange lines naming frames the lines before them do not hold."""
        return self._reader.unheld

    @property
    def seq(self) -> SeqWatch:
        """Where the recording's line numbering broke (lines lost or out of order)."""
        return self._reader.seq

    @property
    def times(self) -> TimeWatch:
        """Where the recording's times went back (lines out of order)."""
        return self._reader.times

    @property
    def unclosed(self) -> int:
        """Connections the recording opens and never closes, once it was read to its end (0
        before). A proxy that stops closes every connection it recorded: a recording that
        ends with some open was cut short (the proxy was killed, or is still writing it).

        After a restart, only the connections the last observing process recorded count: one
        open at the restart with no line since either ended while no observing process
        recorded, or was not picked up again; its close is not missing from a cut-short
        file, it was never there to record."""
        if not self.read_to_end:
            return 0
        last = self.tracker.observer
        connections = self.tracker.connections.values()
        return sum(1 for info in connections if info.is_open and info.observer == last)

    def events(self) -> Iterator[Event]:
        """Every event, in file order (not folded into flows: `flows` does that)."""
        return self._read()

    def flows(self) -> Iterator[Flow]:
        """Every flow, each once it is settled (answered, closed unanswered, a framing error)
        and the rows before it are (`FlowTracker.take_settled`: in number order unless more
        than `HOLD_BACK` rows wait behind one in flight); what is still pending at the end of
        the file last."""
        tracker = self.tracker
        apply, settled = tracker.apply, tracker.take_settled
        for event in self._read():
            done = settled(apply(event))
            if done:
                self.flow_count += len(done)
                yield from done
        rest = tracker.take_rest(ended=self._ended)
        self.flow_count += len(rest)
        yield from rest

    def batches(
        self, size: int = 1000, most_bytes: int = PIECE_BYTES
    ) -> Iterator[tuple[list[Event], list[Flow]]]:
        """The trace in pieces: the flows settled since the last piece (``size`` of them, or
        fewer whose frames reach ``most_bytes``, or those settled within `EVENTS_PER_PIECE`
        events; the last piece what is left) and their events. Every event about a flow is
        in the piece of that flow: the events of a flow still in flight wait with it, so what
        is held is what is in flight and one piece, not the trace."""
        tracker = self.tracker
        apply, settled, holds = tracker.apply, tracker.take_settled, tracker.holds
        events: list[Event] = []
        flows: list[Flow] = []
        held = 0
        waiting: dict[int, list[Event]] = {}  # by flow number, until the flow is handed on
        for event in self._read():
            flow = apply(event)
            if flow is not None and holds(flow):
                waiting.setdefault(flow.number, []).append(event)
            else:
                events.append(event)
            for done in settled(flow):
                events += waiting.pop(done.number, ())
                flows.append(done)
                for frame in (done.request, done.response):
                    if frame is not None:
                        held += _piece_cost(frame, most_bytes - held)
            if len(flows) >= size or held >= most_bytes or len(events) >= EVENTS_PER_PIECE:
                self.flow_count += len(flows)
                yield events, flows
                events, flows, held = [], [], 0
        for done in tracker.take_rest(ended=self._ended):
            events += waiting.pop(done.number, ())
            flows.append(done)
        self.flow_count += len(flows)
        yield events, flows

    @property
    def _ended(self) -> bool:
        """Whether nothing more will come of the file read to its end: a file its writer
        still writes has requests whose answers may come yet (pending)."""
        return self.being_written_at_end is not True

    def _read(self) -> Iterator[Event]:
        try:
            yield from self._reader
            self.read_to_end = True
            self.being_written_at_end = self.being_written()
        except RecordingError as exc:
            raise TraceError(str(exc.at(self.path))) from None
        except OSError as exc:
            raise TraceError(f"{self.path}: {exc.strerror or exc}") from None


def open_flows(
    path: str, *, read_once: bool = False, in_flight: int = IN_FLIGHT_BYTES
) -> FlowReader:
    """Open the recording at ``path`` and read its header. ``read_once``: the file is read
    once to its end, never followed, so the fast reader reads it (the same events, errors and
    watches of ``seq`` and ``t``, in half the time). ``in_flight``: what the requests held
    while they wait for their answer may cost (`HeldFrames`). Raises TraceError saying why
    the file cannot be read (one line naming it)."""
    try:
        stream = open_recording(path)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except RecordingError as exc:
        raise TraceError(str(exc.at(path))) from None
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None
    try:
        kind = FastRecordingReader if read_once else RecordingReader
        reader = kind(stream, path=path, in_flight=in_flight)
    except RecordingError as exc:
        stream.close()
        raise TraceError(str(exc.at(path))) from None
    except BaseException:
        stream.close()
        raise
    return FlowReader(path, stream, reader)


def _message_json(frame: Optional[FrameSeen], prefix: str) -> dict[str, Any]:
    """``{prefix: obj}``, plus ``{prefix}_raw`` (base64) when the payload is not JSON, and
    ``{prefix}_elided`` when ``obj`` is the message's skeleton: how many of its bytes are
    left out of it (a payload too large for a reader to parse, read from the skeleton the
    recording keeps beside it; the placeholders in ``obj`` say where)."""
    if frame is None:
        return {prefix: None}
    if frame.elided:
        return {prefix: frame.message.obj, f"{prefix}_elided": frame.elided}
    message = frame.message
    undecodable = isinstance(message, Malformed) and message.kind in (
        MalformedKind.INVALID_UTF8,
        MalformedKind.INVALID_JSON,
    )
    if undecodable:
        return {prefix: None, f"{prefix}_raw": base64.b64encode(frame.payload).decode("ascii")}
    return {prefix: message.obj}


# What json.dumps(ensure_ascii=False) leaves as it is but a terminal or a UTF-8 encoder must
# not see: C1 controls, line separators, lone surrogates, bidirectional controls (which
# reorder what a terminal shows after them). They can only be inside strings in JSON text,
# where their \u escapes mean the same.
_UNSAFE_IN_JSON = re.compile(
    "[\x7f-\x9f\u2028\u2029\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_text(data: Any, indent: Optional[int] = None) -> str:
    """``data`` as JSON (on one line without ``indent``), readable (non-ASCII kept) and safe
    to print or encode: control characters and lone surrogates are written as escapes, and
    a number JSON has not (NaN, an infinity: a plugin's ``json.dumps`` writes them, and the
    proxy reads them as the plugin's peers do) as the string that names it, ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"`` (as protobuf's JSON writes them): Python's ``NaN`` is no
    JSON a strict reader (jq, a browser, Go) takes."""
    try:
        text = json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:  # a float JSON has not, somewhere in it
        text = json.dumps(numbers_named(data), ensure_ascii=False, indent=indent)
    return _UNSAFE_IN_JSON.sub(_escape, text)


def numbers_named(value: Any) -> Any:
    """``value`` with each float that is not finite replaced by its name (`json_text`)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else json.dumps(value)
    if isinstance(value, dict):
        return {key: numbers_named(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [numbers_named(item) for item in value]
    return value


def json_ms(seconds: Optional[float]) -> Optional[float]:
    """``seconds`` in milliseconds to the microsecond, as the JSON outputs give durations;
    None (not measured) stays None."""
    return None if seconds is None else round(seconds * 1000, 3)


def _held(action: ProxyStep) -> dict[str, float]:
    """``held``: the seconds a delay held its frame, as its event carries it."""
    held = held_of(action)
    return {} if held is None else {"held": held}


def flow_to_json(flow: Flow, profile: Profile) -> dict[str, Any]:
    """One flow as a JSON object: what `show --json` and `export --format jsonl` print."""
    ident = None
    for frame in (flow.request, flow.response):
        if frame is not None and frame.message.id is not None:
            ident = frame.message.id
            break
    data: dict[str, Any] = {
        "number": flow.number,
        "t": flow.t,
        "route": flow.route,
        "conn": flow.conn,
        "method": flow.method,
        "id": ident,
        "status": flow.status(profile),
        "error": flow.is_error,
        "outcome": flow.outcome.kind.value if flow.outcome is not None else None,
        "latency_ms": json_ms(flow.latency),
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
    if flow.size_at_least:
        # Only on a row whose size is the least that went by (a restart's gap), as
        # `undelivered` only on a row that has one.
        data["size_at_least"] = True
    if flow.undelivered:
        # Only on a row whose answer (or request) never reached its receiver, as
        # `connection_failed` only on a connection that carried nothing.
        data["undelivered"] = flow.undelivered
    if flow.connection_failed is not None:
        closed = flow.connection_failed
        data["connection_failed"] = {"reason": closed.reason, "abnormal": closed.abnormal}
    if flow.closed_by_proxy is not None:
        data["closed_by_proxy"] = {"reason": flow.closed_by_proxy.reason}
    if flow.stderr is not None:
        # What the server wrote to its stderr, on a row that failed on its hop (a server that
        # dies at start says why only there).
        data["server_stderr"] = {
            "when": stderr_heading(flow.stderr).rstrip(":"),
            "lines": list(flow.stderr.lines),
            "more": flow.stderr.more,
        }
    if flow.faults:
        # What the proxy did to this flow's frames on purpose (--fault, --intercept), as the
        # flow tracker attached it: the event that follows a frame is that frame's.
        data["faults"] = [
            {
                "fault": action.fault,
                "direction": action.direction.value,
                "t": action.t,
                "detail": action.detail,
                "withheld": action.withheld,
                **_held(action),
                # Of an answer whose id several requests waited with: on each of their rows.
                **({"among": action.among} if action.among > 1 else {}),
            }
            for action in flow.faults
        ]
    data["violations"] = [violation.to_json() for violation in flow.violations]
    return data
