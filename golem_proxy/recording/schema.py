"""The facts of the recording format (docs/recording-format.md): its name and version, the
header, the members of each event line in the order the writer puts them, and the limits a
reader enforces. The writer, the reader and the fast scanner all take their layout from here,
so a change to a line's members is made once and the scanner's pattern follows it."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core import __version__

from ..terminal import safe_text

__all__ = [
    "DEFAULT_LINE_BUDGET",
    "DEFAULT_MAX_LINE",
    "EXCHANGE_MEMBERS",
    "FORMAT",
    "FRAME_MEMBERS",
    "KIND_MEMBERS",
    "MAX_DEPTH",
    "MAX_INT",
    "MSG_KEY",
    "READABLE_VERSIONS",
    "SESSION_END_KIND",
    "SESSION_END_PROMISE",
    "SPOOL_FULL_KIND",
    "VERSION",
    "Header",
    "RecordingError",
    "RouteInfo",
    "encode_header",
]

FORMAT = "golem-proxy-recording"
VERSION = 2
"""The version this writer writes. Version 2 added the tap's pairing decision to frame lines
(``expects_answer``, ``answers``, ``orphan``)."""
READABLE_VERSIONS = (1, 2)
"""The versions a reader opens: a version-1 file is paired once as it is read
(`golem_proxy.recording.v1_pairing`)."""
MSG_KEY = b',"msg":'
# A line longer than this is refused on load: a trace from an untrusted source must not make
# the reader allocate without bound (the largest legitimate line is a 64 MiB frame, base64).
DEFAULT_MAX_LINE = 96 * 1024 * 1024
DEFAULT_LINE_BUDGET = 512 * 1024 * 1024
"""What parsing one line may cost in memory, estimated before parsing (see `reader`): the
largest legitimate line (a 64 MiB frame in base64, ~96 MiB) fits; a line of ``[[],…]`` that
would take ~25 times its size does not."""
MAX_DEPTH = 256
"""Deepest JSON nesting a line may have: far more than any real message, far less than what
makes a recursive parser or printer fail."""
MAX_INT = 2**53
"""Largest count, index or size a line may carry (exact in every JSON reader)."""

# The members of each event line, in the order the writer writes them. ``seq``, ``t`` and
# ``kind`` come first in every line; a frame's ``id`` and ``method`` are there only when the
# message has them, and ``msg`` (or ``raw``) is always last.
COMMON_MEMBERS = ("seq", "t", "kind")
FRAME_MEMBERS = (*COMMON_MEMBERS, "conn", "route", "dir", "n", "size", "type")
FRAME_OPTIONAL = (
    "id",
    "method",
    "tool_calls",
    "expects_answer",
    "answers",
    "orphan",
    "undelivered",
    "delivered_bytes",
    "routes_down",
    "late",
    "answer_of",
    "held_under",
)
# An exchange and a server-exchange pair a request with its answer the same way; only the
# direction of each differs.
EXCHANGE_MEMBERS = (
    *COMMON_MEMBERS,
    "conn",
    "route",
    "req",
    "resp",
    "method",
    "status",
    "latency",
    "outcome",
)
KIND_MEMBERS: Mapping[str, tuple[str, ...]] = {
    "open": (*COMMON_MEMBERS, "conn", "route", "client", "upstream"),
    "close": (
        *COMMON_MEMBERS,
        "conn",
        "route",
        "reason",
        "bytes",
        "abnormal",
        "tool_calls",
        "gone_before_write",
        "resets",
    ),
    "frame": FRAME_MEMBERS,
    "exchange": EXCHANGE_MEMBERS,
    "upstream": (*COMMON_MEMBERS, "route", "state", "detail"),
    "end": (*COMMON_MEMBERS, "conn", "route", "dir", "unanswered"),
    # A request the server sent (``req``: its s2c frame) and the client's answer (``resp``: c2s).
    "server-exchange": EXCHANGE_MEMBERS,
    "violation": (
        *COMMON_MEMBERS,
        "conn",
        "route",
        "dir",
        "frame",
        "rule",
        "message",
        "path",
        "severity",
        "outcome",
        "orphan",
    ),
    "frame-error": (
        *COMMON_MEMBERS,
        "conn",
        "route",
        "dir",
        "error",
        "detail",
        "recoverable",
        "declared",
        "undelivered",
        "delivered_bytes",
        "cut",
        "redacted",
        "raw",
    ),
    "discarded": (
        *COMMON_MEMBERS,
        "conn",
        "route",
        "dir",
        "final",
        "undelivered",
        "delivered_bytes",
        "redacted",
        "raw",
    ),
    "fault": (
        *COMMON_MEMBERS,
        "conn",
        "route",
        "dir",
        "fault",
        "detail",
        "held",
        "method",
        "id",
        "among",
        "server_request",
        "withheld",
        "original",
        "redacted",
    ),
    "intercept": (
        *COMMON_MEMBERS,
        "conn",
        "route",
        "dir",
        "step",
        "detail",
        "method",
        "id",
        "withheld",
        "original",
        "redacted",
    ),
    "gap": (*COMMON_MEMBERS, "missed", "consumer"),
    "stderr": (*COMMON_MEMBERS, "conn", "route", "text", "raw"),
    # The session's own lines: observation stopped, or a new observing process took over.
    "observation-stopped": (*COMMON_MEMBERS, "detail"),
    "observation-restarted": (*COMMON_MEMBERS, "detail"),
    # The spool reached --spool-limit: the session went on without it (`SpoolFull`).
    "spool-full": (*COMMON_MEMBERS, "limit"),
    # The session ended in order: the last line, after every other.
    "session-end": (
        *COMMON_MEMBERS,
        "reason",
        "exchanges",
        "errors",
        "violations",
        "unanswered",
        "not_recorded",
        "unobserved",
        "since_restart",
    ),
    "unobserved": (
        *COMMON_MEMBERS,
        "conn",
        "route",
        "dir",
        "reason",
        "size",
        "detail",
        "digest",
        "header",
        "frames",
        "answers",
    ),
}

SPOOL_FULL_KIND = "spool-full"
"""The line of the moment the spool reached ``--spool-limit`` (`SpoolFull`)."""
SESSION_END_KIND = "session-end"
"""The line a session's writer writes last when the session ends in order (`SessionEnded`)."""
SESSION_END_PROMISE = "ends_with_session_end"
"""The header member (``true``) of a recording whose writer writes a ``session-end`` line when
the session ends in order: without that line it was cut short. Files written before it lack
the member, and only their connections left open say they were cut short."""


class RecordingError(ValueError):
    """The file is not a recording this version can read. The message is one line: the
    file (when known), the line number (when the problem is in one line) and what is wrong."""

    def __init__(self, what: str, *, line: Optional[int] = None, path: Optional[str] = None):
        self.what = what
        self.line = line
        self.path = path
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"{path}: {where}{what}" if path else f"{where}{what}")

    def at(self, path: str) -> RecordingError:
        """The same error naming ``path`` (unchanged when it names a file already)."""
        if self.path is not None:
            return self
        return RecordingError(self.what, line=self.line, path=path)


@dataclass(frozen=True)
class RouteInfo:
    name: str
    listen: str
    upstream: str
    profile: Optional[str] = None
    """The protocol of this route's frames when it is not the header's (`golem-proxy mcp`'s
    ``mcp`` route); None: the header's profile."""

    def to_json(self) -> dict[str, str]:
        data = {"name": self.name, "listen": self.listen, "upstream": self.upstream}
        if self.profile is not None:
            data["profile"] = self.profile
        return data


def started_at_time(text: str) -> Optional[datetime.datetime]:
    """A header's ``started_at`` as an aware time (``Z`` or no zone: UTC); None when it is
    no ISO 8601 time."""
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


_HEADER_MEMBERS = {"format", "version", "profile", "routes", "started_at", "clock", "tool"}
_HEADER_MEMBERS.add("redact")


@dataclass(frozen=True)
class Header:
    profile: str
    routes: tuple[RouteInfo, ...]
    started_at: str
    tool: str = f"golem-proxy {__version__}"
    redact: tuple[str, ...] = ()
    version: int = VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(
        cls,
        profile: str,
        routes: Iterable[RouteInfo],
        redact: Iterable[str] = (),
        *,
        ends_with_session_end: bool = False,
    ) -> Header:
        """A header starting now. ``ends_with_session_end``: the writer promises a
        ``session-end`` line at an orderly end (`SESSION_END_PROMISE`)."""
        now = datetime.datetime.now(datetime.timezone.utc)
        started = now.isoformat(timespec="microseconds").replace("+00:00", "Z")
        extra: dict[str, Any] = {SESSION_END_PROMISE: True} if ends_with_session_end else {}
        return cls(profile, tuple(routes), started, redact=tuple(redact), extra=extra)

    @property
    def started(self) -> Optional[datetime.datetime]:
        """The wall time ``started_at`` names, which every line's ``t`` counts from (one
        without a zone read as UTC, as it is written); None when it names none."""
        return started_at_time(self.started_at)

    @property
    def promises_session_end(self) -> bool:
        """The writer writes a ``session-end`` line last when the session ends in order: a
        file without one was cut short (`SESSION_END_PROMISE`)."""
        return self.extra.get(SESSION_END_PROMISE) is True

    def route_profile_names(self) -> dict[str, str]:
        """The routes whose frames have a profile of their own (not the header's), by name."""
        return {r.name: r.profile for r in self.routes if r.profile is not None}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": FORMAT,
            "version": self.version,
            "profile": self.profile,
            "routes": [route.to_json() for route in self.routes],
            "started_at": self.started_at,
            "clock": "t = monotonic seconds since started_at",
            "tool": self.tool,
            "redact": list(self.redact),
        }
        data.update(self.extra)
        return data

    @classmethod
    def from_json(cls, data: Any) -> Header:
        """The header in a parsed first line. Raises RecordingError naming the member that is
        missing or has the wrong type."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RecordingError("not a golem-proxy recording (no recording header line)")
        version = data.get("version")
        if type(version) is not int or version not in READABLE_VERSIONS:
            shown = version if type(version) is int else type(version).__name__
            raise RecordingError(f"recording format version {shown} is not supported")
        routes = data.get("routes", [])
        if not isinstance(routes, list) or not all(
            isinstance(r, dict)
            and all(isinstance(r.get(k), str) for k in ("name", "listen"))
            and isinstance(r.get("upstream"), str)
            and isinstance(r.get("profile", ""), str)
            for r in routes
        ):
            raise RecordingError(
                "bad recording header: routes must be a list of name/listen/upstream strings"
            )
        redact = data.get("redact", [])
        if not isinstance(redact, list) or not all(isinstance(p, str) for p in redact):
            raise RecordingError("bad recording header: redact must be a list of strings")
        _check_rules(redact)
        for name in ("profile", "started_at", "tool"):
            value = data.get(name, "")
            if not isinstance(value, str):
                raise RecordingError(f"bad recording header: {name} must be a string")
        if "profile" not in data:
            raise RecordingError("bad recording header: no profile")
        _check_route_names(routes, data["profile"])
        return cls(
            data["profile"],
            tuple(
                RouteInfo(r["name"], r["listen"], r["upstream"], r.get("profile")) for r in routes
            ),
            data.get("started_at", ""),
            data.get("tool", ""),
            tuple(redact),
            version,
            {k: v for k, v in data.items() if k not in _HEADER_MEMBERS},
        )


def _shown(text: str) -> str:
    """A header's string as JSON, short and safe to print in an error message."""
    return safe_text(json.dumps(text, ensure_ascii=False), 60)


def _check_rules(rules: list[str]) -> None:
    """Refuse a redaction rule the proxy would not take: every reader that redacts with the
    header's rules (replay, verify, mcp-verify, the pytest plugin) would fail on it, and the
    others would show a file whose rules say nothing. Raises RecordingError."""
    if not rules:
        return
    # Here, not at the top: a reader of recordings imports nothing of the live proxy unless
    # the file has rules to check (tests/commands/test_cli_errors.py).
    from ..live.redact import parse_rule

    for rule in rules:
        try:
            parse_rule(rule)
        except ValueError:
            raise RecordingError(
                f"bad recording header: redaction rule {_shown(rule)} has no path"
            ) from None


def _check_route_names(routes: list[dict[str, Any]], profile: str) -> None:
    """Refuse a route name given twice with two protocols: events name their route, and
    which protocol types a frame would depend on which definition a reader took. The same
    name twice with one protocol (`proxy --route a@… --route a@…` writes that) reads alike
    whichever is taken, and is read. Raises RecordingError."""
    seen: dict[str, str] = {}
    for route in routes:
        name, its = route["name"], route.get("profile", profile)
        if seen.setdefault(name, its) != its:
            raise RecordingError(
                f"bad recording header: route {_shown(name)} is defined twice, with "
                f"profiles {_shown(seen[name])} and {_shown(its)}"
            )


# A lone surrogate (legal in JSON text as an escape, not encodable as UTF-8) can only sit inside
# a JSON string, where backslashreplace writes it back as the same \uXXXX escape.
JSON_SAFE = "backslashreplace"
# One shared encoder: json.dumps with keywords builds a new one on every call.
_encode_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumps(data: Any) -> bytes:
    """Compact JSON as UTF-8, lone surrogates kept as their escapes."""
    return _encode_compact(data).encode("utf-8", JSON_SAFE)


def encode_header(header: Header) -> bytes:
    return dumps(header.to_json()) + b"\n"
