"""The events about the session rather than the bytes of a connection: a route's upstream
going down or coming back (and `RouteDown`, how a tool call made meanwhile names it), what a
wrapped process wrote to its stderr, events a consumer missed, the spool full, and the
session's orderly end.

Part of the event vocabulary (`golem_proxy.events`, which re-exports them and names them in
its ``Event`` union): frozen dataclasses like the rest, and, like them, with ``t`` in seconds
on the session's monotonic clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

__all__ = [
    "AnswerOf",
    "EventsMissed",
    "GapCount",
    "ProcessOutput",
    "RouteDown",
    "SessionEnded",
    "SpoolFull",
    "UpstreamStatus",
]


@dataclass(frozen=True, kw_only=True)
class UpstreamStatus:
    """A route's upstream stopped or started answering: while it refuses connections, the
    route does not listen (a client is refused, as it would be direct), and it listens
    again once the upstream answers. ``detail`` says what happened in words."""

    route: str
    t: float
    up: bool
    detail: str


@dataclass(frozen=True, kw_only=True, slots=True)
class RouteDown:
    """A GOLEM route that was not listening when an MCP ``tools/call`` was made: its upstream
    refused a connection at ``since`` (the session's `UpstreamStatus` then), and it had not
    answered again. A connection the call's server tried on it was refused by the system,
    as it would be without the proxy, and never reached the proxy: nothing of it is seen."""

    route: str
    since: float


@dataclass(frozen=True, kw_only=True)
class AnswerOf:
    """The GOLEM exchange whose answer an MCP tool call's result is, when it is another's
    than the call's own: an MCP server that reads GOLEM answers in order without matching
    their ids, once an answer came after its call had returned (`FrameSeen.late`), hands
    each later call the answer of the one before. ``index``: its request frame's index;
    ``tool``: the tool of the call it belonged to (None: no one call)."""

    route: str
    conn: int
    index: int
    method: Optional[str]
    tool: Optional[str]


@dataclass(frozen=True, kw_only=True)
class EventsMissed:
    """Told to a consumer that fell behind: this many events were not delivered to it."""

    count: int
    t: float
    consumer: str = field(default="")


@dataclass(frozen=True, kw_only=True)
class ProcessOutput:
    """Bytes a wrapped process wrote to its stderr (the MCP server of `golem-proxy mcp`):
    passed on to our stderr as they came, and recorded on the route of its hop."""

    conn: int
    route: str
    t: float
    data: bytes


@dataclass(frozen=True, kw_only=True)
class SpoolFull:
    """The spool (``--observer-spool``) reached ``limit`` bytes (``--spool-limit``) at ``t``,
    and the session went on as without it: what was forwarded before is recorded before this
    event (the spool held all of it, for `golem-proxy recover` had the proxy been killed);
    from here the records go through the pipe: the spool stays until the observing process
    read it, forwarding does not wait meanwhile, and once the recording caught up with what it
    held forwarding waits for the recording again, a ``kill -9`` losing at most the ~100 ms of
    lines the recording may trail the wire by."""

    t: float
    limit: int


@dataclass(frozen=True, kw_only=True)
class GapCount:
    """Of the gaps in what was observed (``unobserved`` rows), those of one reason (a
    `GapReason` value), counted as `check` counts them (analysis/coverage.py: a restart is one
    gap, its connections' rows add their bytes): how many, and the bytes they say went by
    (``bytes_at_least``: only the least that did)."""

    reason: str
    gaps: int
    bytes: int
    bytes_at_least: bool = False


@dataclass(frozen=True, kw_only=True)
class SessionEnded:
    """The session ended in order and its recording is whole: the last line its writer
    writes, after every other, flushed (docs/recording-format.md, ``session-end``). A
    recording whose header promises one and that lacks it was cut short. ``reason`` says how
    the session ended (``stopped by SIGINT``); the counts are those of the closing line, what
    the session saw, when the writer knew them (None: the forwarding process wrote the line
    after observation stopped; it says only the gaps, read back from the recording).
    ``since_restart``: they are an observing process's that took over from one that died (its
    ``unanswered`` includes the requests it found in flight then)."""

    t: float
    reason: str
    exchanges: Optional[int] = None
    errors: Optional[int] = None
    violations: Optional[int] = None
    unanswered: Optional[int] = None
    not_recorded: Optional[int] = None
    """Events the recorder could not keep (the disk fell behind; its ``gap`` lines say where)."""
    unobserved: tuple[GapCount, ...] = ()
    """The gaps in what was observed, by reason (empty: none, or the writer did not say)."""
    since_restart: bool = False
