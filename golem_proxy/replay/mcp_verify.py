"""Regression-test an MCP server against a two-layer recording: play the recorded client side
to a new build over stdio, serve its GOLEM calls from the recording's GOLEM layer (or let it
reach a live plugin), and compare each answer with the recorded one: the tool results, and
what the server says of itself and its tools (``initialize``, ``tools/list``: `mcp_answers`).

The client side goes out as raw NDJSON, the recorded lines themselves: the recording says
exactly what the client sent (its ids, its ``initialize``, its notifications), and a
client library would write its own. Requests go one at a time, each once the one before was
answered, so a tool call meets the server in the state it met when recorded. A recorded
GUID in a tool call's arguments is swapped for the live one learned from an earlier result
(only a live plugin hands out new ones; the stand-in answers with the recorded GUIDs). A
result naming the address a recorded GOLEM route listened on matches one naming where the
server was pointed for that route now (`RouteAddresses`, the comparator's ``addresses``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..live.redact import REDACTED, REDACTED_ESCAPED
from .diffing import Comparator, Difference, envelope_body
from .live_redaction import LiveRedaction
from .mcp_answers import compare_answer, digest_difference
from .mcp_child import McpChild
from .mcp_player import McpPlayer
from .mcp_script import ClientStep, McpScript

__all__ = [
    "McpCheck",
    "McpVerifyResult",
    "compare_tool_result",
    "judge",
    "note_route_addresses",
    "outgoing_payload",
    "play",
    "redacted_answer",
]


@dataclass
class McpCheck:
    """One request played, its answer compared with the recorded one: a tool call's result,
    or what another request (``initialize``, ``tools/list``) answered (`compare_answer`)."""

    number: Optional[int]
    """The recorded tool call's flow number (as `show` numbers it); None for other requests."""
    tool: Optional[str]
    method: Optional[str]
    id: Any
    differences: list[Difference] = field(default_factory=list)
    problem: Optional[str] = None
    notes: list[Difference] = field(default_factory=list)
    """Differences told but not failing (the server's version: `mcp_answers.NOTED`)."""
    not_compared: Optional[str] = None
    """Why the answer now was compared with nothing (the recording cannot say what it was):
    no failure, said apart from a match."""
    route_addresses: list[str] = field(default_factory=list)
    """The routes whose recorded address in the result read as their address now to match
    (`RouteAddresses`); empty on a check that differs."""
    sent_unrecorded: list[str] = field(default_factory=list)
    """The GOLEM requests the build sent during this call that the recorded call never sent
    (the stand-in had no answer of the call's for them), in words: each fails the call,
    whatever its result (a build that now deletes objects and ignores the error would pass
    against the stand-in, and delete them against Rhino)."""
    played: list[str] = field(default_factory=list)
    """What the stand-in played during this call as the recording's marks say it happened
    (an answer marked late sent after the call returned, a connection the proxy closed for
    ``--idle-timeout`` closed before it), in words (`standin_notes`)."""
    cause: Optional[str] = None
    """On a check that differs: what the recording's marks say the recorded call met that the
    stand-in could not play as it was, in words (`standin_notes`): said ahead of the
    difference, which it may explain; it still fails."""
    not_played: bool = False
    """Never sent: the server had left a request before it unanswered, or had gone
    (``problem`` says which). It fails the run, as the server's failure before it; no
    difference of its own."""
    as_recorded: Optional[str] = None
    """On a check whose request the server left unanswered, its output ended (it died or
    quit during the call): the recorded call met the same, in words. It fails, as a server
    that dies does; the outcome is the recording's, no difference."""

    @property
    def ok(self) -> bool:
        return not self.differences and self.problem is None and not self.sent_unrecorded

    @property
    def differs(self) -> bool:
        """It failed otherwise than the recorded call did: not for want of being played
        (`not_played`), nor as recorded (`as_recorded`)."""
        return not self.ok and not self.not_played and self.as_recorded is None

    @property
    def name(self) -> str:
        return self.tool if self.tool is not None else self.method or "?"

    def first_difference(self) -> str:
        """The problem, or the first difference as ``path (recorded vs live)``; empty when
        it matched."""
        if self.problem is not None:
            return self.problem
        if self.sent_unrecorded:
            more = len(self.sent_unrecorded) - 1
            return self.sent_unrecorded[0] + (f" (+{more} more)" if more else "")
        if not self.differences:
            return ""
        more = len(self.differences) - 1
        return self.differences[0].describe() + (f" (+{more} more)" if more else "")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "number": self.number,
            "tool": self.tool,
            "method": self.method,
            "id": self.id,
            "ok": self.ok,
            "differences": [d.to_json() for d in self.differences],
        }
        if self.problem is not None:
            data["problem"] = self.problem
        if self.notes:
            data["notes"] = [d.to_json() for d in self.notes]
        if self.not_compared is not None:
            data["not_compared"] = self.not_compared
        if self.route_addresses:
            data["route_addresses"] = list(self.route_addresses)
        if self.sent_unrecorded:
            data["sent_unrecorded"] = list(self.sent_unrecorded)
        if self.played:
            data["played"] = list(self.played)
        if self.cause is not None:
            data["cause"] = self.cause
        if self.not_played:
            data["not_played"] = True
        if self.as_recorded is not None:
            data["as_recorded"] = self.as_recorded
        return data


@dataclass
class McpVerifyResult:
    """Every check, and what the server did outside them."""

    checks: list[McpCheck] = field(default_factory=list)
    non_json_lines: int = 0
    """Lines the server wrote to stdout that were not JSON: each breaks a real client."""
    first_non_json: str = ""
    exit_status: Optional[int] = None
    stderr_tail: str = ""
    standin_ahead: list[dict[str, Any]] = field(default_factory=list)
    """The stand-in's answers served ahead of a recorded request before them that changes
    state, not sent (`state_order`): a warning, never a failure."""
    standin_misses: int = 0
    """GOLEM requests the stand-in had no recorded answer for: each fails the run (a build
    that sends what the recording never sent would send it to Rhino too)."""

    @property
    def tool_checks(self) -> list[McpCheck]:
        return [check for check in self.checks if check.tool is not None]

    @property
    def ok(self) -> bool:
        return (
            self.non_json_lines == 0
            and self.standin_misses == 0
            and all(check.ok for check in self.checks)
        )


async def play(
    script: McpScript,
    child: McpChild,
    comparator: Comparator,
    *,
    numbers: Mapping[int, int],
    timeout: float,
    before_step: Optional[Callable[[ClientStep], Awaitable[None]]] = None,
    answered: Optional[Callable[[ClientStep], Awaitable[None]]] = None,
    after_check: Optional[Callable[[McpCheck], Awaitable[bool]]] = None,
    redaction: Optional[LiveRedaction] = None,
) -> McpVerifyResult:
    """Play ``script`` to ``child`` (started) and compare every answer; ``before_step``
    is awaited before each step is sent (the stand-in sets its routes as they were then),
    ``answered`` as soon as a request's answer is read (its call has returned), and
    ``after_check`` with each check once made: True stops the replay there (the steps after
    it are not sent: a live plugin behind the server went away). ``redaction``: the
    recording's ``--redact`` rules, applied to each live answer before it is compared, as
    they were to the recorded one. Never raises for what the server does: a server that
    dies or stays silent is a check's problem."""
    result = McpVerifyResult()
    player = McpPlayer(script, child, result, timeout)
    for step in script.steps:
        check = _check_for(step, numbers)
        if not player.alive:
            if check is not None:
                check.problem, check.not_played = player.gone_reason(), True
                result.checks.append(check)
            continue
        if before_step is not None:
            await before_step(step)
        answer = await player.request(step, outgoing_payload(step, comparator))
        if answered is not None and step.is_request and not isinstance(answer, str):
            await answered(step)
        if check is None:
            continue
        if redaction and not isinstance(answer, str):
            answer = redacted_answer(redaction, answer, step.method)
        result.checks.append(check)
        if isinstance(answer, str):
            check.problem = answer
            if player.output_ended and step.server_ended:
                check.as_recorded = "the recorded server's output ended during this call too"
        else:
            judge(check, step, answer, comparator, line=player.answer_line)
        if after_check is not None and await after_check(check):
            break
    return result


def judge(
    check: McpCheck,
    step: ClientStep,
    answer: dict[str, Any],
    comparator: Comparator,
    *,
    also_noted: frozenset[str] = frozenset(),
    line: Optional[bytes] = None,
) -> None:
    """Compare ``answer``, the live answer to ``step``, with the recorded one, or say on
    ``check`` why it cannot be: a tool call's result, and any other request's too (what
    the server says of itself and of its tools is what the model reads: `compare_answer`,
    ``also_noted`` told rather than failed there). An answer recorded only by its size and
    digest (too large to observe) is compared by those, with ``line``, the live answer's
    line as the server wrote it (`digest_difference`)."""
    recorded = step.answer
    if step.cancelled and (recorded is None or "result" not in recorded):
        # Its answer, if any, is what the cancellation made of it (the SDK's "Request
        # cancelled", an error); the replay sends the cancellation only after the live
        # answer. A result is the one the server gave in full, cancelled or not (a tool that
        # holds the server's loop reads the cancellation only once it has answered): that
        # is compared.
        check.not_compared = "cancelled in the recording while it waited"
    elif step.answer_elided:
        check.not_compared = (
            "its answer in the recording is too large to parse (read from its skeleton)"
        )
    elif recorded is not None and step.tool is not None:
        check.differences = compare_tool_result(recorded, answer, comparator, step.tool)
    elif recorded is not None and "error" in answer and "error" not in recorded:
        check.problem = f"answered with an error: {_error_text(answer)}"
    elif recorded is not None:
        check.differences, check.notes = compare_answer(
            recorded, answer, comparator, step.method or "?", also_noted=also_noted
        )
    elif step.answer_digest is not None and line is not None:
        found = digest_difference(step.answer_digest, line)
        check.differences = [] if found is None else [found]
    elif step.answer_unobserved or step.answer_digest is not None:
        check.not_compared = "its answer in the recording fell in bytes not observed"
    elif step.answer_cut_off:
        # The file ends while the call waited: its answer may have come, unrecorded. The
        # build's answer is compared with nothing, which is no difference of the build.
        check.not_compared = "the recording ends before its answer (cut short)"
    else:
        check.problem = "answered now, unanswered in the recording"
    note_route_addresses(check, comparator)


def redacted_answer(
    redaction: LiveRedaction, answer: dict[str, Any], method: Optional[str]
) -> dict[str, Any]:
    """``answer`` to ``method`` as a recording made under ``redaction``'s rules holds it."""
    payload, _ = redaction.answer("mcp", json.dumps(answer).encode(), method)
    redacted = json.loads(payload)
    return redacted if isinstance(redacted, dict) else answer


def note_route_addresses(check: McpCheck, comparator: Comparator) -> None:
    """Give ``check`` the routes whose address made a text of its result equal, once it is
    compared: only a result that matched matched through them (one that differs elsewhere
    is a difference, never listed as matched so). The comparator forgets them either way."""
    applied = comparator.addresses.take_applied()
    check.route_addresses = applied if check.ok else []


def _check_for(step: ClientStep, numbers: Mapping[int, int]) -> Optional[McpCheck]:
    if not step.is_request:
        return None
    number = numbers.get(step.index) if step.tool is not None else None
    return McpCheck(number, step.tool, step.method, step.id)


def outgoing_payload(step: ClientStep, comparator: Comparator) -> bytes:
    """The recorded line, or, when a tool call's arguments name a recorded GUID the live
    plugin knows by another, the line with the live GUID."""
    if step.tool is None or not len(comparator.guids):
        return step.payload
    try:
        obj = json.loads(step.payload)
    except ValueError:
        return step.payload
    mapped = comparator.guids.to_live(obj.get("params"))
    if mapped == obj.get("params"):
        return step.payload
    obj["params"] = mapped
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", "backslashreplace")


def _error_text(envelope: dict[str, Any]) -> str:
    error = envelope.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return str(message)[:200]


def compare_tool_result(
    recorded: dict[str, Any], live: dict[str, Any], comparator: Comparator, tool: str
) -> list[Difference]:
    """The differences between a recorded tool call's response envelope and the live one
    (ids aside). A text that holds JSON (what most tools return) is compared as JSON when
    it differs, so the difference names the field inside it (``result.content[0].text.
    layers[1].name``) and GUIDs inside it are matched through the map; ``--ignore
    TOOL:PATH`` paths reach into it the same way. A recorded route address in a text reads
    as the comparator's ``addresses`` say; the routes that made a text match are theirs to
    tell (`RouteAddresses.take_applied`)."""
    opened_recorded, opened_live = _open_json_texts(envelope_body(recorded), envelope_body(live))
    return comparator.compare(opened_recorded, opened_live, tool)


def _open_json_texts(recorded: Any, live: Any) -> tuple[Any, Any]:
    if isinstance(recorded, dict) and isinstance(live, dict):
        pairs = {
            key: _open_json_texts(value, live[key])
            for key, value in recorded.items()
            if key in live
        }
        return (
            {key: pairs[key][0] if key in pairs else value for key, value in recorded.items()},
            {key: pairs[key][1] if key in pairs else value for key, value in live.items()},
        )
    if isinstance(recorded, list) and isinstance(live, list):
        pairs_list = [_open_json_texts(a, b) for a, b in zip(recorded, live)]
        shared = len(pairs_list)
        return (
            [pair[0] for pair in pairs_list] + recorded[shared:],
            [pair[1] for pair in pairs_list] + live[shared:],
        )
    if isinstance(recorded, str) and isinstance(live, str) and recorded != live:
        inner_recorded, inner_live = _json_container(recorded), _json_container(live)
        # Same JSON written differently stays a difference of the text: the model sees text.
        # But a text the recording's redaction rewrote (it holds `REDACTED`, as it is or
        # escaped: a recording made before the placeholder was written as the text writes
        # non-ASCII has it escaped in a text that does not escape) was written by the proxy,
        # not the server: its JSON is what the server said.
        opened = inner_recorded is not None and inner_live is not None
        if opened and (inner_recorded != inner_live or _holds_placeholder(recorded)):
            return _open_json_texts(inner_recorded, inner_live)
    return recorded, live


def _holds_placeholder(text: str) -> bool:
    return any(form in text for form in _PLACEHOLDERS)


_PLACEHOLDERS = (REDACTED, REDACTED_ESCAPED, "\\u00ABredacted\\u00BB")
"""`REDACTED` as it is, and escaped by a JSON writer (lower- or upper-case hex)."""


def _json_container(text: str) -> Optional[Any]:
    if text[:1] not in ("{", "["):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None
