"""`check`'s audit of a recording's MCP layer (`golem-proxy mcp`): the rules of
`golem_core.mcp_rules` over the flows of the MCP routes, in order, plus what needs a JSON
Schema implementation: a ``tools/call``'s arguments against its tool's ``inputSchema`` from
the recorded ``tools/list`` (the `jsonschema` library), and the arguments it names that the
schema does not declare (valid JSON Schema, and dropped unread by the server). A schema with
a regular expression is applied in a worker process, within a deadline (`bounded_schema`).

The JSON-RPC envelope of every MCP message is the `mcp` profile's to check (the ``jsonrpc.*``
rules), as `audit.audit` re-checks each flow with its route's profile.

Flows are fed piece by piece (`check` reads a trace in pieces); the state kept between pieces
is the session order per connection, the tools listed, and the calls made before the first
``tools/list`` (clients often call first and list after), at most `MAX_PENDING` of them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.contract import Violation, violation
from golem_core.mcp_rules import (
    R_ANSWER_OF_ANOTHER,
    R_INITIALIZE_FIRST,
    R_STDOUT,
    R_UNKNOWN_TOOL,
    SessionOrder,
    content_violations,
)
from golem_core.messages import ErrorResponse, Malformed, MalformedKind, Request, Response
from golem_core.profiles.mcp import TOOLS_CALL

from ..events import Direction, FrameSeen, GapReason
from ..placeholder import REDACTED
from .audit import Finding, proxy_by
from .bounded_schema import BoundedSchemas
from .flows import Flow
from .late_answers import late_violation
from .schema_checks import (
    SCHEMA_NODES,
    argument_problems,
    new_validator,
    undeclared,
    uses_regex,
)
from .tool_calls import attribution_refs

__all__ = ["MAX_PENDING", "McpAuditor", "lost_start"]

MAX_PENDING = 10_000
TOOLS_LIST = "tools/list"
_NOT_JSON_RPC = (
    MalformedKind.INVALID_UTF8,
    MalformedKind.INVALID_JSON,
    MalformedKind.NOT_AN_OBJECT,
)
_JSON_RPC_MEMBERS = frozenset(("jsonrpc", "id", "method", "params", "result", "error"))
"""A JSON object with none of these (a server's ``{"status": "starting"}`` log line, ``{}``)
is no JSON-RPC message at all, not one of the wrong version."""
SOURCE = "mcp"


def _not_json_rpc(message: Malformed) -> bool:
    """Whether a malformed line on the server's stdout is not JSON-RPC at all: not JSON, not
    an object, or an object with no JSON-RPC member."""
    if message.kind in _NOT_JSON_RPC:
        return True
    obj = message.obj
    return isinstance(obj, dict) and not _JSON_RPC_MEMBERS.intersection(obj)


@dataclass(frozen=True)
class _Call:
    """A ``tools/call`` waiting for the tools to be listed."""

    flow: int
    conn: int
    tool: str
    arguments: Any
    whole: bool = True
    """False when the arguments are a skeleton's (a payload too large to parse): the tool
    is looked up, the arguments are not held to its schema."""


class McpAuditor:
    """Audits the flows of ``routes`` (a recording's MCP layer); see the module docstring."""

    def __init__(self, routes: Collection[str], *, live: bool = False) -> None:
        self.routes = frozenset(routes)
        self.live = live
        """Following a session as it runs (live/mcp_rules_live.py): a tool whose schema holds
        a regular expression, or is too large to look through (`SCHEMA_NODES`), is left to
        `check` (`uses_regex`). Applied in the worker process of `BoundedSchemas`, it would
        hold the observing process up to its deadline per call, far past the ~60 ms the
        recording may trail the wire (and in one process, the forwarding too)."""
        self._regex_tools: frozenset[str] = frozenset()
        self._bounded: Optional[BoundedSchemas] = None
        """Where `check` applies the schemas with regular expressions, started at the first
        call of such a tool."""
        self._orders: dict[int, SessionOrder] = {}
        self._schemas: Optional[dict[str, Any]] = None
        self._validators: dict[str, Any] = {}
        self._pending: list[_Call] = []
        self._unpaired: dict[tuple[int, tuple[str, Any]], tuple[Flow, Request]] = {}
        self.unchecked = 0
        """Calls made before any ``tools/list`` past `MAX_PENDING`: their arguments are not
        checked (reported by `check` as a note, never silently)."""
        self.redacted_names = 0
        """Calls not checked against a schema because ``--redact`` hid a tool's name: the
        call's own (a rule scoped to ``tools/call:params.name``), or the listing's, so that
        the tool called may be one listed under `REDACTED` (reported by `check` as a note).
        A placeholder is no tool's name: it is never looked up, nor listed."""
        self._listed_redacted = False
        """Whether the listing learned held a tool whose name was redacted."""
        self.start_unknown: set[int] = set()
        """The flows of the last `feed` whose request the client sent when its session's
        start was lost in a gap: an `R_INITIALIZE_FIRST` recorded on one was judged by an
        observing process that could not know (`check` leaves it out)."""

    def take_up(self, conn: int, order: SessionOrder) -> None:
        """Follow ``conn``'s session on from ``order`` (what was known of it before a gap:
        a new observing process taking over from one that died)."""
        self._orders[conn] = order

    def gap(self, conn: int) -> None:
        """Something of ``conn``'s session may have crossed unseen (`SessionOrder.gap`)."""
        self._orders.setdefault(conn, SessionOrder()).gap()

    def knew_tools(self, result: Any) -> None:
        """The tools were listed before (``result``: that ``tools/list`` answer's), as if
        its answer had been fed."""
        self._learn(result)

    def feed(self, flows: Sequence[Flow]) -> list[Finding]:
        """The findings of the MCP flows among ``flows``."""
        found: list[Finding] = []
        self.start_unknown = set()
        for flow in sorted(flows, key=lambda f: f.number):
            if flow.route in self.routes:
                found += self._flow(flow)
            elif flow.response is not None and flow.response.late:
                found.append(self._late(flow))
        return found

    def _late(self, flow: Flow) -> Finding:
        """A GOLEM answer that came after its tool call returned (`FrameSeen.late`)."""
        response = flow.response
        undelivered = response.undelivered if response is not None else ""
        found = late_violation(attribution_refs(flow) or (), undelivered)
        return self._finding(found, flow, Direction.S2C)

    def finish(self) -> list[Finding]:
        """Calls still waiting at the end: without a ``tools/list`` there is no schema to
        check them against, so nothing is reported for them. Stops the worker process of
        the schemas with regular expressions."""
        self._pending.clear()
        self.close()
        return []

    def close(self) -> None:
        """Stop the worker process of the schemas with regular expressions, if one runs."""
        if self._bounded is not None:
            self._bounded.close()

    @property
    def pending(self) -> int:
        return len(self._pending)

    def _flow(self, flow: Flow) -> list[Finding]:
        found: list[Finding] = []
        request, response = flow.request, flow.response
        if flow.gap is not None and flow.gap.reason is not GapReason.EVICTED:
            # Bytes of the session crossed unseen (a restart of the observing process, the
            # observer behind): its `initialize`, or the answer, may have been among them.
            # Requests let go were seen: only their answers are not waited for.
            self.gap(flow.conn)
        for frame in (request, response):
            if frame is not None and frame.direction is Direction.S2C:
                found += self._stdout(flow, frame)
        if request is None:
            return found + self._orphan(flow)
        if not isinstance(request.message, Request):
            return found
        message = request.message
        if response is None or not isinstance(response.message, (Response, ErrorResponse)):
            # Its answer may come as an orphan: in recordings made before MCP replies were
            # paired by id only, a line that is not JSON-RPC, written while it was
            # outstanding, was taken for its answer.
            self._unpaired[(flow.conn, _id_key(message.id))] = (flow, message)
            while len(self._unpaired) > MAX_PENDING:
                del self._unpaired[next(iter(self._unpaired))]
        order = self._orders.setdefault(flow.conn, SessionOrder())
        side = request.direction.value
        if side == Direction.C2S.value and not order.start_known:
            self.start_unknown.add(flow.number)
        found += [
            self._finding(v, flow, request.direction)
            for v in order.request(side, message.method, message.id, request.t)
        ]
        if message.method == TOOLS_CALL:
            found += self._call(flow, message, whole=not request.elided)
        if response is not None:
            found += self._answered(flow, message, response)
        return found

    def _answered(self, flow: Flow, message: Request, response: FrameSeen) -> list[Finding]:
        answer = response.message
        if not isinstance(answer, (Response, ErrorResponse)):
            return []
        if response.elided:
            # A skeleton (a payload too large to parse): its placeholders are no content
            # to check, and no listing of tools to learn.
            self._orders.setdefault(flow.conn, SessionOrder()).answered(message.method, response.t)
            return []
        self._orders.setdefault(flow.conn, SessionOrder()).answered(message.method, response.t)
        if message.method == TOOLS_LIST and isinstance(answer, Response):
            return self._learn(answer.result)
        if message.method == TOOLS_CALL and isinstance(answer, Response):
            found = [
                self._finding(v, flow, Direction.S2C) for v in content_violations(answer.result)
            ]
            of = response.answer_of
            if of is not None:
                text = (
                    f"its result is the answer of {of.method or '?'} (conn {of.conn}, of "
                    f"{of.tool or 'no one tool call'}), not its own: the server reads GOLEM "
                    "answers out of order"
                )
                found.append(
                    self._finding(violation(R_ANSWER_OF_ANOTHER, text), flow, Direction.S2C)
                )
            return found
        return []

    def _orphan(self, flow: Flow) -> list[Finding]:
        """An answer without its request in its flow: the request's flow, if it was left
        unpaired, gets it."""
        response = flow.response
        if response is None or not isinstance(response.message, (Response, ErrorResponse)):
            return []
        waiting = self._unpaired.pop((flow.conn, _id_key(response.message.id)), None)
        if waiting is None:
            return []
        return self._answered(waiting[0], waiting[1], response)

    def _stdout(self, flow: Flow, frame: FrameSeen) -> list[Finding]:
        message = frame.message
        if not isinstance(message, Malformed) or not _not_json_rpc(message):
            return []
        shown = frame.payload[:80].decode("utf-8", "replace")
        text = (
            f"the server wrote {frame.size} bytes to stdout that are not JSON-RPC "
            f"({shown!r}): a client reports it as an error and drops it, or fails on it"
        )
        return [self._finding(violation(R_STDOUT, text), flow, Direction.S2C)]

    def _call(self, flow: Flow, message: Request, *, whole: bool = True) -> list[Finding]:
        params = message.params if isinstance(message.params, dict) else {}
        name = params.get("name")
        if not isinstance(name, str):
            return []  # the envelope rules say what is wrong with it
        if REDACTED in name:
            self.redacted_names += 1
            return []
        call = _Call(flow.number, flow.conn, name, params.get("arguments", {}), whole)
        if self._schemas is None:
            if len(self._pending) < MAX_PENDING:
                self._pending.append(call)
            else:
                self.unchecked += 1
            return []
        return list(self._check_call(call))

    def _learn(self, result: Any) -> list[Finding]:
        """The tools of the first ``tools/list`` answer; the calls waiting for them checked."""
        if self._schemas is not None:
            return []
        tools = result.get("tools") if isinstance(result, dict) else None
        schemas: dict[str, Any] = {}
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                if REDACTED in tool["name"]:
                    self._listed_redacted = True
                    continue
                schemas[tool["name"]] = tool.get("inputSchema")
        self._schemas = schemas
        # check walks each schema whole: one sent to the worker without a regular expression
        # in it would pay the worker's deadline for nothing (and a large one ran past it).
        nodes = SCHEMA_NODES if self.live else None
        self._regex_tools = frozenset(n for n, s in schemas.items() if uses_regex(s, nodes))
        waiting, self._pending = self._pending, []
        return [finding for call in waiting for finding in self._check_call(call)]

    def _check_call(self, call: _Call) -> Iterator[Finding]:
        assert self._schemas is not None
        if call.tool not in self._schemas:
            if self._listed_redacted:
                self.redacted_names += 1  # it may be a tool listed under the placeholder
                return
            text = f"no tool {call.tool[:60]!r} in the recorded tools/list"
            yield self._at(violation(R_UNKNOWN_TOOL, text, "$.params.name"), call)
            return
        schema = self._schemas.get(call.tool)
        if not call.whole or (self.live and call.tool in self._regex_tools):
            return
        if call.tool in self._regex_tools and isinstance(schema, dict):
            if self._bounded is None:
                self._bounded = BoundedSchemas()
            found = self._bounded.problems(call.tool, schema, call.arguments, call.flow)
        else:
            found = self._schema_problems(call.tool, schema, call.arguments)
            found += undeclared(call.tool, schema, call.arguments)
        for problem in found:
            yield self._at(problem, call)

    def _schema_problems(self, tool: str, schema: Any, arguments: Any) -> list[Violation]:
        if not isinstance(schema, dict):
            return []  # no schema to hold the arguments to (the listing's own business)

        def validator() -> Any:
            made = self._validators.get(tool)
            if made is None:
                made = self._validators[tool] = new_validator(schema)
            return made

        return argument_problems(validator, arguments)

    def _at(self, found: Violation, call: _Call) -> Finding:
        return Finding(found, call.flow, call.conn, TOOLS_CALL, Direction.C2S.value, SOURCE)

    def _finding(self, found: Violation, flow: Flow, direction: Direction) -> Finding:
        return Finding(
            found,
            flow.number,
            flow.conn,
            flow.method,
            direction.value,
            SOURCE,
            proxy_by(flow, direction, found),
        )


def lost_start(auditor: McpAuditor, flow: Optional[int], rule: str) -> bool:
    """Whether a recorded violation of ``rule`` on ``flow`` claims ``initialize`` was not
    sent of a session whose start the recording lost (`McpAuditor.start_unknown`, of the
    piece just fed): recordings made before a restart's gap was told from a session with no
    ``initialize`` hold such claims."""
    return rule == R_INITIALIZE_FIRST.id and flow in auditor.start_unknown


def _id_key(ident: Any) -> tuple[str, Any]:
    # 1 and "1" are different JSON-RPC ids.
    return (type(ident).__name__, ident)
