"""The MCP layer's own rules (a `golem-proxy mcp` recording's stdio hop), over what the
JSON-RPC envelope rules of the `mcp` profile already check: the session's order, its ids, a
tool call's arguments and result, and a server's stdout that carries something else than
JSON-RPC.

The checks here are pure and stateless except `SessionOrder`, which follows one session's
requests in order. Validating arguments against a tool's ``inputSchema`` needs a JSON Schema
implementation, which is not stdlib: the proxy does it and reports `R_ARGUMENTS`.
"""

from __future__ import annotations

from typing import Any, Optional

from .contract import Rule, Severity, Violation, violation

__all__ = [
    "MCP_RULES",
    "R_ANSWER_OF_ANOTHER",
    "R_ARGUMENTS",
    "R_ARGUMENTS_UNCHECKED",
    "R_CONTENT",
    "R_INITIALIZE_FIRST",
    "R_LATE_ANSWER",
    "R_STDOUT",
    "R_UNDECLARED_ARGUMENT",
    "R_UNIQUE_ID",
    "R_UNKNOWN_TOOL",
    "SessionOrder",
    "content_violations",
]

_SPEC = "Model Context Protocol specification (2025-06-18)"

R_INITIALIZE_FIRST = Rule(
    "mcp.lifecycle.initialize-first",
    Severity.ERROR,
    "The client's first request is `initialize`; until it is answered it sends only pings.",
    f"{_SPEC} § Lifecycle, Initialization",
)
R_UNIQUE_ID = Rule(
    "mcp.request.id-unique",
    Severity.ERROR,
    "A request id is never used twice by the same side within a session.",
    f"{_SPEC} § Basic protocol, Requests",
)
R_ARGUMENTS = Rule(
    "mcp.tools-call.arguments",
    Severity.ERROR,
    "`tools/call` arguments validate against the tool's `inputSchema` from `tools/list`.",
    f"{_SPEC} § Tools, Calling tools",
)
R_ARGUMENTS_UNCHECKED = Rule(
    "mcp.tools-call.arguments-unchecked",
    Severity.WARNING,
    "`tools/call` arguments are checked against every part of the tool's `inputSchema`: a "
    "regular expression of it that runs past the time allowed leaves them unchecked there.",
    f"{_SPEC} § Tools, Calling tools",
)
R_UNDECLARED_ARGUMENT = Rule(
    "mcp.tools-call.undeclared-argument",
    Severity.WARNING,
    "`tools/call` arguments name only properties the tool's `inputSchema` declares: a "
    "server drops any other unread (an error where the schema forbids others).",
    f"{_SPEC} § Tools, Calling tools",
)
R_UNKNOWN_TOOL = Rule(
    "mcp.tools-call.unknown-tool",
    Severity.WARNING,
    "`tools/call` names a tool the server listed in `tools/list`.",
    f"{_SPEC} § Tools, Calling tools",
)
R_CONTENT = Rule(
    "mcp.tools-call.content",
    Severity.ERROR,
    "A `tools/call` result has `content`, a list of content blocks (text, image, audio, "
    "resource_link, resource); `isError`, when present, is a boolean.",
    f"{_SPEC} § Tools, Tool result",
)
R_STDOUT = Rule(
    "mcp.stdio.stdout-not-jsonrpc",
    Severity.ERROR,
    "The server writes nothing to stdout that is not a JSON-RPC message: a client reports "
    "any other line as an error and drops it, or fails on it.",
    f"{_SPEC} § Transports, stdio",
)

_TWO_LAYERS = "golem-proxy mcp: the two layers in wire order (docs/mcp.md § Late answers)"
R_LATE_ANSWER = Rule(
    "mcp.golem.late-answer",
    Severity.WARNING,
    "A GOLEM answer reaches the MCP server before the tool call it belongs to returns: one "
    "that comes after stays on the server's connection, and a server that reads answers in "
    "order without matching ids hands it to its next call.",
    _TWO_LAYERS,
)
R_ANSWER_OF_ANOTHER = Rule(
    "mcp.golem.answer-of-another-call",
    Severity.WARNING,
    "A tool call's result is its own GOLEM exchange's answer, not the answer of another "
    "exchange on a connection that held a late one.",
    _TWO_LAYERS,
)

MCP_RULES = (
    R_INITIALIZE_FIRST,
    R_UNIQUE_ID,
    R_ARGUMENTS,
    R_ARGUMENTS_UNCHECKED,
    R_UNDECLARED_ARGUMENT,
    R_UNKNOWN_TOOL,
    R_CONTENT,
    R_STDOUT,
    R_LATE_ANSWER,
    R_ANSWER_OF_ANOTHER,
)

# Each content block type and the members it must have as strings (besides ``type``).
_BLOCK_STRINGS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": (),
}
MAX_BLOCK_VIOLATIONS = 10


def content_violations(result: Any) -> list[Violation]:
    """What is wrong with a ``tools/call`` result's shape (at most a few per result)."""
    if not isinstance(result, dict):
        return [violation(R_CONTENT, "the result is not an object", "$.result")]
    found: list[Violation] = []
    is_error = result.get("isError")
    if "isError" in result and not isinstance(is_error, bool):
        found.append(violation(R_CONTENT, "`isError` is not a boolean", "$.result.isError"))
    content = result.get("content")
    if not isinstance(content, list):
        what = "missing" if "content" not in result else "not a list"
        found.append(violation(R_CONTENT, f"`content` is {what}", "$.result.content"))
        return found
    for index, block in enumerate(content):
        if len(found) >= MAX_BLOCK_VIOLATIONS:
            break
        found += _block_violations(block, f"$.result.content[{index}]")
    return found


def _block_violations(block: Any, path: str) -> list[Violation]:
    if not isinstance(block, dict):
        return [violation(R_CONTENT, "a content block is not an object", path)]
    kind = block.get("type")
    if not isinstance(kind, str) or kind not in _BLOCK_STRINGS:
        shown = repr(kind)[:40]
        return [violation(R_CONTENT, f"unknown content block type {shown}", f"{path}.type")]
    found = [
        violation(R_CONTENT, f"a {kind} block's `{member}` is not a string", f"{path}.{member}")
        for member in _BLOCK_STRINGS[kind]
        if not isinstance(block.get(member), str)
    ]
    if kind == "resource" and not isinstance(block.get("resource"), dict):
        found.append(
            violation(R_CONTENT, "a resource block has no `resource` object", f"{path}.resource")
        )
    return found


class SessionOrder:
    """Follows one MCP session's requests in wire order: `initialize` first, no id twice."""

    def __init__(
        self,
        *,
        initialize_sent: bool = False,
        initialized_at: Optional[float] = None,
        known: bool = True,
    ) -> None:
        """A session followed from its start, or taken up where what was followed before
        left it (``initialize_sent``, ``initialized_at``); ``known`` False: what came before
        is not known (a gap in what was observed), and `R_INITIALIZE_FIRST` is silent until
        an ``initialize`` is seen. Ids used before are not known either way: a request that
        uses one again is not flagged."""
        self._seen: dict[tuple[str, str, Any], bool] = {}
        self._initialize_sent = initialize_sent or initialized_at is not None
        self._initialized_at = initialized_at
        self._known = known

    def request(self, side: str, method: str, ident: Any, t: float) -> list[Violation]:
        """A request ``side`` (``c2s`` the client, ``s2c`` the server) sent at ``t``; the
        rules it breaks. Call it for the requests in the order they were sent, each
        session's ``initialize`` (and its `answered`) before the requests after it."""
        found: list[Violation] = []
        key = (side, type(ident).__name__, ident)
        if key in self._seen:
            found.append(
                violation(R_UNIQUE_ID, f"id {_short(ident)} was used before by this side", "$.id")
            )
        self._seen[key] = True
        if side == "c2s":
            if method == "initialize":
                self._initialize_sent = True
                self._known = True
            elif (
                self._known
                and method != "ping"
                and (self._initialized_at is None or t < self._initialized_at)
            ):
                before = "answered" if self._initialize_sent else "sent"
                found.append(
                    violation(
                        R_INITIALIZE_FIRST,
                        f"`{method[:60]}` sent before `initialize` was {before}",
                        "$.method",
                    )
                )
        return found

    @property
    def start_known(self) -> bool:
        """Whether `R_INITIALIZE_FIRST` can be judged: the session's start is not lost in a
        gap (or an ``initialize`` was seen since)."""
        return self._known

    def gap(self) -> None:
        """Something of the session may have crossed unseen: unless ``initialize`` was
        answered before it, whether it was sent and answered in it is not known (silent, as
        ``known`` False)."""
        if self._initialized_at is None:
            self._known = False

    def answered(self, method: Optional[str], t: float) -> None:
        """A request of the client's was answered at ``t`` (``initialize``: the session is
        open from then on)."""
        if method == "initialize" and self._initialized_at is None:
            self._initialized_at = t


def _short(ident: Any) -> str:
    text = repr(ident)
    return text if len(text) <= 40 else text[:39] + "…"
