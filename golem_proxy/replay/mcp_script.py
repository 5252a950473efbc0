"""What `mcp-verify` plays from a two-layer recording (`golem-proxy mcp --record`): the MCP
client's side of the stdio hop, step by step, with the answers the server gave then. (The
GOLEM layer is `load_exchanges`'s, which leaves the MCP hop out, for the replay engine.)

The client side is every frame the client wrote (requests, notifications), in recorded order
and as recorded bytes, so the server sees the same ids and the same messages. What the client
answered to the server's own requests (``roots/list``, ``sampling/createMessage``) is kept by
method, to answer a server that asks again.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from golem_core.messages import ErrorResponse, JsonId, Request, Response
from golem_core.profiles.mcp import TOOLS_CALL, cancelled_id

from ..analysis.flow import Flow
from ..analysis.tool_calls import mcp_routes
from ..events import Direction, Event, FrameSeen, GapReason, ObservationLost, RouteDown
from ..recording.files import open_recording
from ..recording.reader import RecordingReader

__all__ = ["ClientStep", "McpScript", "NoMcpLayer", "note_endings", "read_script"]


class NoMcpLayer(ValueError):
    """The recording has no MCP layer to play (it was not made by `golem-proxy mcp`)."""


@dataclass
class ClientStep:
    """One frame the client wrote, and for a request the answer it got."""

    payload: bytes
    """The recorded bytes, without the newline."""
    index: int
    """The frame's position among the client's frames (`FrameSeen.index`)."""
    method: Optional[str]
    id: JsonId = None
    """The request's id; None for a notification (or a line that was not JSON-RPC)."""
    params: Any = None
    t: float = 0.0
    """When the client sent it (session time)."""
    answer: Optional[dict[str, Any]] = None
    """The recorded response envelope; None when the recording has none (unanswered)."""
    answer_t: Optional[float] = None
    """When the answer came; None without one."""
    answer_line: Optional[bytes] = None
    """The recorded answer's bytes, without the newline; None without one: what a frame the
    other of two recordings kept only by its digest is compared with (`digest_difference`)."""
    answer_elided: bool = False
    """The recorded answer is a skeleton (its payload too large to parse): ``answer`` has
    placeholders where its bulk was."""
    cancelled: bool = False
    """The client cancelled it (``notifications/cancelled``) while it waited."""
    answer_unobserved: bool = False
    """Bytes the server sent while it waited were not observed (a gap): its answer may have
    been among them."""
    answer_digest: Optional[tuple[int, str]] = None
    """Its answer was a frame too large to observe (``--observe-frame-limit``): that frame's
    size and ``sha256:…`` digest, all the recording keeps of it (`ObservationLost`)."""
    routes_down: Optional[tuple[RouteDown, ...]] = None
    """A ``tools/call`` made while GOLEM routes were not listening: those routes, as the
    recording decided it (`FrameSeen.routes_down`; None: none, or an older recording)."""
    answer_cut_off: bool = False
    """Unanswered: the recording ends while it waited (the file was cut short, as its row
    says: `Flow.ended_waiting`), so its answer may have come, unrecorded (`note_endings`)."""
    server_ended: bool = False
    """Unanswered: the server ended its output while it waited (it died or quit during the
    call, as its row says: `Flow.stream_ended`) (`note_endings`)."""

    @property
    def is_request(self) -> bool:
        return self.id is not None

    @property
    def tool(self) -> Optional[str]:
        """The tool a ``tools/call`` names (None for other steps)."""
        if self.method != TOOLS_CALL:
            return None
        name = self.params.get("name") if isinstance(self.params, dict) else None
        return name if isinstance(name, str) else "?"


@dataclass
class McpScript:
    """The recorded client side of one MCP hop."""

    steps: list[ClientStep]
    conn: Optional[int] = None
    """The MCP connection played (the first one recorded; a ``ToolCallRef`` names it)."""
    client_answers: dict[str, deque[dict[str, Any]]] = field(default_factory=dict)
    """The client's recorded answers to the server's requests, by the request's method."""

    @property
    def tool_calls(self) -> list[ClientStep]:
        return [step for step in self.steps if step.method == TOOLS_CALL]


def read_script(path: str, others: Optional[Callable[[Event], None]] = None) -> McpScript:
    """The client side of the first MCP hop recorded in ``path``; ``others`` is handed every
    event off the MCP hop, in the same pass (the GOLEM routes' lines, for what the server
    met there: `outage_plan.RouteHistories`). Raises OSError, RecordingError, or NoMcpLayer
    when the recording has no MCP layer."""
    with open_recording(path) as stream:
        reader = RecordingReader(stream, path=path)
        routes = mcp_routes(reader.route_profiles)
        if not routes:
            raise NoMcpLayer(f"{path} has no MCP layer (record one with golem-proxy mcp --record)")

        def of_the_hop() -> Iterator[Union[FrameSeen, ObservationLost]]:
            for event in reader:
                if isinstance(event, (FrameSeen, ObservationLost)) and (
                    event.route in routes or not event.conn
                ):
                    yield event
                elif others is not None and getattr(event, "route", None) not in routes:
                    others(event)

        return _script(of_the_hop())


def note_endings(script: McpScript, flows: Iterable[Flow]) -> None:
    """Say on each request of ``script`` left unanswered how its row in the recording ended
    (``flows``: the recording's MCP flows, `read_two_layers`), as every view says it: still
    waiting where the file ends (`ClientStep.answer_cut_off`), or the server's output ended
    first (`ClientStep.server_ended`)."""
    waiting = {
        step.index: step
        for step in script.steps
        if step.is_request and step.answer is None and step.answer_digest is None
    }
    for flow in flows:
        request = flow.request
        if flow.conn != script.conn or flow.response is not None or request is None:
            continue
        step = waiting.get(request.index) if request.direction is Direction.C2S else None
        if step is None:
            continue
        step.answer_cut_off = flow.ended_waiting == "recording"
        ended = flow.stream_ended
        step.server_ended = ended is not None and ended.direction is Direction.S2C


def _script(events: Iterable[Union[FrameSeen, ObservationLost]]) -> McpScript:
    steps: list[ClientStep] = []
    waiting: dict[Any, ClientStep] = {}
    server_asked: dict[Any, str] = {}
    answers: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
    conn: Optional[int] = None
    for frame in events:
        if isinstance(frame, ObservationLost):
            # The server's bytes went unobserved (or the whole session's, connection 0).
            if frame.direction is not Direction.C2S and frame.conn in (0, conn):
                for step in waiting.values():
                    step.answer_unobserved = True
                _digested(frame, waiting)
            continue
        if conn is None:
            conn = frame.conn
        if frame.conn != conn:
            continue  # one hop per run: a recording holds one MCP server's session
        message = frame.message
        obj = message.obj if isinstance(message.obj, dict) else None
        if frame.direction is Direction.C2S:
            if isinstance(message, (Response, ErrorResponse)):
                method = server_asked.pop(_key(message.id), None)
                if method is not None and obj is not None:
                    answers[method].append(obj)
                continue
            named = cancelled_id(message)
            cancelled = waiting.get(_key(named)) if named is not None else None
            if cancelled is not None:
                cancelled.cancelled = True
            step = _step(frame, obj)
            steps.append(step)
            if step.is_request:
                waiting[_key(step.id)] = step
        elif isinstance(message, Request):
            server_asked[_key(message.id)] = message.method
        elif isinstance(message, (Response, ErrorResponse)) and obj is not None:
            step_waiting = waiting.pop(_key(message.id), None)
            if step_waiting is not None:
                step_waiting.answer = obj
                step_waiting.answer_t = frame.t
                step_waiting.answer_line = frame.payload
                step_waiting.answer_elided = bool(frame.elided)
    return McpScript(steps, conn, dict(answers))


def _digested(gap: ObservationLost, waiting: dict[Any, ClientStep]) -> None:
    """A frame too large to observe that answers a waiting step (the tap paired it by the
    id at its ends): that step is answered, its answer known by size and digest."""
    if gap.reason is not GapReason.FRAME_TOO_LARGE or not gap.digest or gap.answers is None:
        return
    for key, step in waiting.items():
        if step.index == gap.answers:
            step.answer_digest = (gap.size, gap.digest)
            del waiting[key]
            return


def _step(frame: FrameSeen, obj: Optional[dict[str, Any]]) -> ClientStep:
    message = frame.message
    if isinstance(message, Request):
        return ClientStep(
            frame.payload,
            frame.index,
            message.method,
            message.id,
            message.params,
            frame.t,
            routes_down=frame.routes_down,
        )
    method = obj.get("method") if obj is not None else None
    named = method if isinstance(method, str) else None
    return ClientStep(frame.payload, frame.index, named, t=frame.t)


def _key(ident: Any) -> tuple[str, Any]:
    # 1 and "1" are different JSON-RPC ids; True is not an id at all.
    return (type(ident).__name__, ident)
