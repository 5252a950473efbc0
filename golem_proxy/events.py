"""The event vocabulary of golem-proxy: what the tap reports about a session.

One stream of these feeds the log, the recorder and the TUI; a recording read back yields the
same events, so live and offline views share one code path. All are frozen dataclasses.
Times (``t``) are seconds on the session's monotonic clock, counted from the session start.
The events about the session rather than a connection's bytes (an upstream down or back, a
wrapped process's stderr, events missed, the spool full, the session's end) are defined in
session_events.py, and those of what the proxy did to a frame on purpose (a fault, an
intercept's step) in proxy_actions.py; both are re-exported here: import every event from
this module.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, TypedDict, Union

from golem_core.contract import Violation
from golem_core.framing import FrameErrorKind
from golem_core.messages import Message, Notification, Role, method_of
from golem_core.outcome import Outcome, OutcomeKind

from .frame_runs import FrameRuns
from .proxy_actions import FaultInjected, InterceptKind, InterceptStep, ProxyAction
from .session_events import (
    AnswerOf,
    EventsMissed,
    GapCount,
    ProcessOutput,
    RouteDown,
    SessionEnded,
    SpoolFull,
    UpstreamStatus,
)

__all__ = [
    "UPSTREAM_UNREACHABLE",
    "AnswerOf",
    "BytesDiscarded",
    "ConnectionClosed",
    "ConnectionOpened",
    "Direction",
    "Event",
    "EventsMissed",
    "ExchangeCompleted",
    "FaultInjected",
    "FrameSeen",
    "FramingErrorSeen",
    "GapCount",
    "GapReason",
    "InterceptKind",
    "InterceptStep",
    "ObservationLost",
    "Outcome",
    "OutcomeKind",
    "ProcessOutput",
    "ProxyAction",
    "RouteDown",
    "SessionEnded",
    "SpoolFull",
    "StreamEnded",
    "ToolCallRef",
    "UpstreamStatus",
    "ViolationSeen",
    "Where",
]

UPSTREAM_UNREACHABLE = "upstream unreachable"
"""How `FrameSeen.undelivered` begins for what a client sent on a connection whose upstream
could not be reached (``upstream unreachable: connection refused``): the route was down for
the call those bytes belong to, as for a connection that closed before a byte crossed it."""


class Direction(enum.Enum):
    """Which way bytes flow: client → server (requests) or server → client (responses, and
    a JSON-RPC server's own requests and notifications)."""

    C2S = "c2s"
    S2C = "s2c"

    # Identity, as equality is: Enum's own __hash__ runs in Python, and frames are looked
    # up by (connection, direction, index) on every line of a recording.
    __hash__ = object.__hash__

    @property
    def arrow(self) -> str:
        return "→" if self is Direction.C2S else "←"

    @property
    def reverse(self) -> Direction:
        """The other way: where the answer to a request sent this way travels."""
        return Direction.S2C if self is Direction.C2S else Direction.C2S


class Where(TypedDict):
    """Where and when an event happened: the members every event about one direction of a
    connection starts with, built once by whoever publishes several (``Event(**where, …)``)."""

    conn: int
    route: str
    direction: Direction
    t: float


@dataclass(frozen=True, kw_only=True)
class ConnectionOpened:
    conn: int
    route: str
    client: str
    upstream: str
    t: float


@dataclass(frozen=True, kw_only=True)
class ConnectionClosed:
    conn: int
    route: str
    reason: str
    t: float
    bytes_c2s: int = 0
    bytes_s2c: int = 0
    abnormal: bool = False
    """True when a side reset, refused or failed (not a clean close)."""
    tool_calls: Optional[tuple[ToolCallRef, ...]] = None
    """On a GOLEM connection of a session with an MCP layer (``golem-proxy mcp``) that ended
    before a byte crossed it either way (the upstream refused it or did not answer, a side
    closed or reset it first): the MCP ``tools/call`` requests in flight when it was opened,
    as a frame names them (`FrameSeen.tool_calls`). None on every other close."""
    gone_before_write: bool = False
    """The upstream had closed its side (while the connection sat idle: the plugin went away)
    before the client wrote again, and refused those bytes with a reset: the client's next
    write met a dead connection. Decided by the forwarding side, which held the upstream's
    close until the client acted (`Connection.after_upstream_closed`)."""
    resets: Optional[tuple[Direction, ...]] = None
    """The ways a reset crossed as the connection ended, in the terms of one conversation
    between the client and the upstream (the proxy's hop folded away, as a capture shows
    it): `Direction.S2C` toward the client (the upstream reset, or the proxy reset the
    client), `Direction.C2S` toward the upstream (the client reset, or the proxy reset the
    upstream). Empty: every side was closed cleanly (FIN), whatever ``abnormal`` says (a
    ``--fault truncate`` closes cleanly). None where it is not said: a hop that is no TCP
    connection (stdio), a recording written before it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRef:
    """An MCP ``tools/call`` request, as a GOLEM frame names the call that caused it: the
    request frame's connection and index on the MCP route, its JSON-RPC id and its tool."""

    conn: int
    index: int
    id: Union[int, str]
    tool: str


@dataclass(frozen=True, kw_only=True, slots=True)
class FrameSeen:
    """A complete frame. ``payload`` is the exact payload bytes (in a frame a live viewer
    keeps, possibly a `golem_proxy.released_payload.ReleasedPayload`: the bytes let go);
    ``size`` the wire size.
    The tap pairs a response with its request before it publishes either event, and says so
    here (``expects_answer``, ``answers``, ``orphan``): pairing is decided once, by the tap
    (or, for a version-1 recording, once by `golem_proxy.recording.v1_pairing`).

    Slotted, like `ExchangeCompleted`: a viewer keeps two of these per exchange, and an
    instance dictionary was a tenth of the TUI's memory on a large recording."""

    conn: int
    route: str
    direction: Direction
    index: int
    """Position of this frame among the frames of its connection and direction."""
    t: float
    """When the frame's last byte arrived."""
    size: int
    payload: bytes
    message: Message
    redacted: tuple[str, ...] = ()
    elided: int = 0
    """Bytes of long opaque strings (blobs) left out of ``message.obj`` in a live view; the
    payload is always complete. A recording read back is never elided."""
    tool_calls: Optional[tuple[ToolCallRef, ...]] = None
    """On a GOLEM frame of a session with an MCP layer (``golem-proxy mcp``): the MCP
    ``tools/call`` requests in flight when the frame was decoded. One: the call that caused
    it; none: sent outside any tool call; several: ambiguous, these are the candidates.
    None when the session had no MCP layer (or the frame is on the MCP route itself)."""
    expects_answer: bool = False
    """On a request: the tap holds it until its answer comes (False for a notification, which
    wants none, and on every response). Views keep a request in flight only when this is
    set, and never re-decide it from the message."""
    answers: Optional[int] = None
    """On a response: the ``index`` of the request frame it answers (that frame travelled the
    other way), as the tap paired them. None for a request, an orphan, or the answer to a
    request too large to observe."""
    orphan: bool = False
    """On a response: it answers no outstanding request of its connection (the tap also
    reports that as a `ViolationSeen` with ``orphan`` set, right after this frame)."""
    undelivered: str = ""
    """Why the frame did not reach its receiver, when the proxy knows it did not: it was read
    whole, but writing it failed (the receiver reset or went away: ``client gone`` for an
    answer, ``upstream gone`` for a request the plugin never got), or the
    connection ended while it waited to be written (``connection ended``). Empty: delivered,
    as far as the proxy can know (the kernel took every byte; a peer that had closed may still
    have thrown them away). Decided by the forwarding side, carried to the tap in order with
    the bytes (`golem_proxy.live.connection`)."""
    delivered_bytes: int = 0
    """Of an undelivered frame, how many of its first bytes the receiver was sent before the
    write failed (the rest never went)."""
    routes_down: Optional[tuple[RouteDown, ...]] = None
    """On an MCP ``tools/call`` request of ``golem-proxy mcp``: the GOLEM routes that were not
    listening when it was decoded (their upstream down; `RouteDown`); on the answer to one: the
    routes that went down while it was in flight (``since``: when). Decided by the session's
    tool-call tracker in wire order with the routes' `UpstreamStatus` events. None on every
    other frame, and when every route listened."""
    late: bool = False
    """On a GOLEM answer of ``golem-proxy mcp``: it came after every tool call it names
    (``tool_calls``) had been answered to the model (the server gave up waiting); a server
    that keeps the connection holds an answer its calls may read as their own after it."""
    answer_of: Optional[AnswerOf] = None
    """On the answer to an MCP ``tools/call``: the GOLEM exchange on a connection holding a
    late answer whose answer its result is (its text as JSON equals that exchange's
    ``result``, and no answer of the call's own does). Both decided by the tracker."""
    held_under: bool = False
    """On the answer to an MCP ``tools/call``: the proxy still held a GOLEM request of the
    call's on its way (``--fault delay``, ``--intercept``), decoded after this answer; a
    reader handing rows on as they settle keeps the call's until it is (`SettledRows`).
    Decided by the tracker (`ToolCallTracker.at_arrival`)."""

    @property
    def method(self) -> Optional[str]:
        return method_of(self.message)

    @property
    def is_request(self) -> bool:
        """A request or a notification, whichever peer sent it (a GOLEM client's frames are
        requests and its server's responses; a JSON-RPC server may also ask)."""
        return self.message.role is Role.REQUEST or (
            self.message.role is None and self.direction is Direction.C2S
        )

    @property
    def is_notification(self) -> bool:
        """A request that wants no answer (JSON-RPC 2.0 notification), from either peer."""
        return isinstance(self.message, Notification)

    @property
    def is_server_request(self) -> bool:
        """A request or notification the server sent its client (its answer, if it wants one,
        travels client → server)."""
        return self.direction is Direction.S2C and self.is_request


@dataclass(frozen=True, kw_only=True)
class FramingErrorSeen:
    """A framing error (oversized header or line, truncation). ``raw`` holds its bytes."""

    conn: int
    route: str
    direction: Direction
    t: float
    kind: FrameErrorKind
    detail: str
    raw: bytes
    recoverable: bool
    declared_length: Optional[int] = None
    undelivered: str = ""
    """Why these bytes never reached their receiver, as on a frame (`FrameSeen.undelivered`:
    the receiver was gone); empty when they did, as far as the proxy knows."""
    delivered_bytes: int = 0
    """With ``undelivered``: how many of the first bytes did go."""
    redacted: tuple[str, ...] = ()
    """``("echo",)`` when ``--redact`` scrubbed a value its rules replaced before out of
    ``raw`` (then not the bytes as they came); empty otherwise."""
    cut: str = ""
    """A frame that never reached its receiver, cut short by an end of stream the proxy made
    itself, and how (``the proxy reset the client``: it stopped reading the client of an
    upstream it could not reach, `StreamEnded.cut`): no side's framing error, nor a
    violation; ``detail`` says how much of it was read. Empty otherwise."""


@dataclass(frozen=True, kw_only=True)
class BytesDiscarded:
    """Bytes of an oversized frame that were forwarded but not decoded."""

    conn: int
    route: str
    direction: Direction
    t: float
    raw: bytes
    final: bool
    undelivered: str = ""
    """Why these bytes never reached their receiver (`FramingErrorSeen.undelivered`)."""
    delivered_bytes: int = 0
    """With ``undelivered``: how many of the first bytes did go."""
    redacted: tuple[str, ...] = ()
    """As `FramingErrorSeen.redacted`."""


@dataclass(frozen=True, kw_only=True)
class StreamEnded:
    """One side ended its stream (a clean close: no more bytes will come from it) while
    requests it was to answer waited, and the other side's stream was still open: a plugin
    that went away in the middle of a call, seen when it happened rather than at the
    connection's close, which waits for the client. ``direction`` is the ended side's
    (``s2c``: the upstream closed). Decided by the tap, after every byte of that side was
    decoded: ``unanswered`` names the requests (their frame numbers, sent the other way) that
    will have no answer on this connection. ``cut``: the side did not end it, the proxy did,
    and how (``--fault truncate``: it cut an answer short, then closed), as the forwarding
    side decided it; empty when the side itself closed."""

    conn: int
    route: str
    direction: Direction
    t: float
    unanswered: tuple[int, ...]
    cut: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExchangeCompleted:
    """A request and its response. ``latency`` runs from the request's last byte to the
    response's last byte, as the client saw them: what the client waited, a delay the proxy
    injected on either side included (`golem_proxy.live.fault_relay`). ``outcome`` is what the
    response means to the application, decided by the profile where the response was decoded
    (an error reported inside a success envelope included): views read it, never re-derive it.
    The violations found in its frames, or in the pair, are `ViolationSeen` events naming the
    frames, published before it: a violation travels once."""

    conn: int
    route: str
    request: FrameSeen
    response: FrameSeen
    outcome: Outcome

    @property
    def t(self) -> float:
        return self.response.t

    @property
    def latency(self) -> float:
        return self.response.t - self.request.t

    @property
    def method(self) -> Optional[str]:
        return self.request.method

    @property
    def is_error(self) -> bool:
        """The exchange failed: its outcome did, or its answer never reached the client (an
        answer, ``ok`` or not, the client never got did not succeed for it), as a flow's
        `Flow.is_error` says."""
        return self.outcome.failed or bool(self.response.undelivered)

    @property
    def undelivered(self) -> str:
        """Why the answer never reached the side that asked (`FrameSeen.undelivered`), or
        empty: it did, as far as the proxy knows."""
        return self.response.undelivered

    @property
    def error_code(self) -> Optional[Union[int, str]]:
        return self.outcome.code


@dataclass(frozen=True, kw_only=True)
class ViolationSeen:
    """A contract violation, tied to the frame it was found in (when there is one). The one
    event that carries a violation: one found in a request, its response or the pair names
    one of the exchange's frames (the pair's own checks, the response), and is published as
    soon as it is found, so a request that is never answered keeps its violations."""

    conn: int
    route: str
    direction: Optional[Direction]
    frame_index: Optional[int]
    t: float
    violation: Violation
    orphan: bool = False
    """The frame is a response that answers no outstanding request (the violation says so in
    words; views make it a row of its own)."""


class GapReason(enum.Enum):
    """Why bytes that were forwarded were not (all) inspected."""

    BEHIND = "behind"
    """The observer fell behind the traffic and its memory budget was full: the bytes were
    forwarded but never decoded. Decoding resumes at the next frame boundary found. (Rarely,
    bytes read that never reached their receiver and could not be recorded at a connection's
    end: ``detail`` says they were never sent on.)"""
    FRAME_TOO_LARGE = "frame-too-large"
    """One frame was larger than the observer holds (``--observe-frame-limit``), or its parse
    would hold more than it may (``--observe-parse-limit``): it was forwarded whole and is
    known by its header, its size and its SHA-256 only."""
    OBSERVER_FAILED = "observer-failed"
    """Decoding this connection failed (a bug): its bytes are still forwarded."""
    EVICTED = "evicted"
    """A request stayed unanswered past the pairing limits and was let go; a late answer to
    it shows as an orphan."""
    STOPPED = "stopped"
    """Observation stopped for the rest of the session (an observing process of its own died
    or was stopped; ``detail`` says why): what was forwarded after it is not recorded."""
    RESTARTED = "restarted"
    """The observing process died and a new one was started, which records on in the same
    recording. As the session's line (``observation-restarted``: connection 0, size 0) it says
    when and why (``detail``). On a connection that was open then (an ``unobserved`` line
    with this reason, written by the new observing process), ``size`` is the bytes of that
    direction forwarded while no observing process recorded them: a lower bound, as what the
    dead one had been handed but had not yet recorded is only told in ``detail``. Decoding
    resumed at the next frame boundary, under the same connection id, frame indexes going
    on."""


@dataclass(frozen=True, kw_only=True)
class ObservationLost:
    """A gap in what was observed: ``size`` bytes of ``direction`` went through unexamined (or,
    for `GapReason.EVICTED`, ``size`` requests were let go); bytes that were not forwarded
    either are said so in ``detail`` (`GapReason.BEHIND`)."""

    conn: int
    route: str
    direction: Direction
    t: float
    reason: GapReason
    size: int
    detail: str = ""
    digest: str = ""
    """``sha256:<hex>`` of a frame's payload that was too large to observe, else empty."""
    header: bytes = b""
    """The frame's header bytes (length-prefixed framing), for a frame too large to observe."""
    frames: Optional[FrameRuns] = None
    """For `GapReason.EVICTED`: the numbers of the requests let go (`frame_runs`); None where
    not named (files written before they were: then the oldest ``size`` waiting)."""
    answers: Optional[int] = None
    """For `GapReason.FRAME_TOO_LARGE`: the frame number of the request (sent the other way)
    this frame answers, as the tap read its id from its ends (`live.frame_ends`) and paired
    it; None when it answers none that is known (no id could be read, or none waited)."""


Event = Union[
    ConnectionOpened,
    ConnectionClosed,
    FrameSeen,
    FramingErrorSeen,
    BytesDiscarded,
    ExchangeCompleted,
    ViolationSeen,
    FaultInjected,
    InterceptStep,
    EventsMissed,
    ObservationLost,
    ProcessOutput,
    UpstreamStatus,
    SessionEnded,
    SpoolFull,
    StreamEnded,
]
