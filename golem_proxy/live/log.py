"""The live log: one line per exchange, coloured by outcome, plus lines for violations,
malformed frames, framing errors and connection events. Consumes the event stream (it may fall
behind under load; it then says how many events it skipped)."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Optional

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from golem_core.contract import Severity
from golem_core.messages import ErrorResponse, Malformed, Response
from golem_core.profiles import Profile

from ..events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    EventsMissed,
    ExchangeCompleted,
    FaultInjected,
    FrameSeen,
    FramingErrorSeen,
    ViolationSeen,
)

__all__ = ["EventLog", "Verbosity", "format_size"]


class Verbosity(enum.IntEnum):
    QUIET = 0
    """Problems only: error responses, violations, malformed frames, abnormal closes."""
    NORMAL = 1
    """Every exchange and connection."""
    VERBOSE = 2
    """Also every frame as it arrives, with a preview of its body."""


def format_size(size: Optional[int]) -> str:
    if size is None:
        return "-"
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def format_latency(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


class EventLog:
    """Renders events as log lines on a rich console."""

    def __init__(
        self,
        console: Console,
        profile: Profile,
        verbosity: Verbosity = Verbosity.NORMAL,
        started_wall: Optional[float] = None,
    ) -> None:
        self.console = console
        self.profile = profile
        self.verbosity = verbosity
        self.started_wall = (
            started_wall
            if started_wall is not None
            else datetime.datetime.now(datetime.timezone.utc).timestamp()
        )

    def _clock(self, t: float) -> str:
        moment = datetime.datetime.fromtimestamp(self.started_wall + t)
        return moment.strftime("%H:%M:%S.%f")[:-3]

    def _prefix(self, t: float, route: str, conn: int) -> Text:
        return Text.assemble(
            (self._clock(t), "dim"), " ", (f"{route:<5}", "cyan"), " ", (f"#{conn:<3}", "dim"), " "
        )

    def handle(self, event: Event) -> None:
        """Print whatever ``event`` deserves at this verbosity."""
        line = self.render(event)
        if line is not None:
            self.console.print(line, soft_wrap=True, highlight=False)

    def render(self, event: Event) -> Optional[Text]:
        if isinstance(event, ExchangeCompleted):
            return self._exchange(event)
        if isinstance(event, ViolationSeen):
            return self._violation(event)
        if isinstance(event, FrameSeen):
            return self._frame(event)
        if isinstance(event, FramingErrorSeen):
            text = self._prefix(event.t, event.route, event.conn)
            text.append(
                f"{event.direction.arrow} framing error: {event.kind.value}", "bold magenta"
            )
            text.append(f" — {event.detail}")
            return text
        if isinstance(event, ConnectionOpened):
            if self.verbosity < Verbosity.NORMAL:
                return None
            text = self._prefix(event.t, event.route, event.conn)
            text.append(f"connected {event.client} → {event.upstream}", "dim")
            return text
        if isinstance(event, ConnectionClosed):
            if self.verbosity < Verbosity.NORMAL and not event.abnormal:
                return None
            text = self._prefix(event.t, event.route, event.conn)
            style = "yellow" if event.abnormal else "dim"
            text.append(
                f"closed: {event.reason} ({format_size(event.bytes_c2s)} → / "
                f"{format_size(event.bytes_s2c)} ←)",
                style,
            )
            return text
        if isinstance(event, FaultInjected):
            text = self._prefix(event.t, event.route, event.conn)
            text.append(f"fault {event.fault}", "bold blue")
            text.append(f" {event.method or ''} {event.detail}")
            return text
        if isinstance(event, EventsMissed):
            return Text(f"… {event.count} events not shown (log fell behind)", "yellow")
        return None

    def _exchange(self, exchange: ExchangeCompleted) -> Optional[Text]:
        response = exchange.response.message
        request = exchange.request.message
        ok = isinstance(response, Response) and not isinstance(request, Malformed)
        if ok and self.verbosity < Verbosity.NORMAL:
            return None
        status = self.profile.describe_exchange(request, response)
        if isinstance(response, Response):
            style = "green"
        elif isinstance(response, ErrorResponse):
            style = "red"
        else:
            style = "magenta"
        text = self._prefix(exchange.t, exchange.route, exchange.conn)
        method = exchange.method or self.profile.describe(request)
        text.append(f"{method:<32}", "bold")
        text.append(" ")
        text.append(f"{status:<18}", style)
        text.append(f" {format_latency(exchange.latency):>9}", "dim")
        text.append(
            f"  {format_size(exchange.request.size)} → {format_size(exchange.response.size)}",
            "dim",
        )
        if isinstance(response, ErrorResponse):
            text.append(f"  {escape(response.error.message)[:120]}", "red")
        if exchange.violations:
            text.append(f"  ⚠ {len(exchange.violations)}", "yellow")
        return text

    def _violation(self, event: ViolationSeen) -> Optional[Text]:
        found = event.violation
        if found.severity is Severity.WARNING and self.verbosity < Verbosity.VERBOSE:
            return None
        text = self._prefix(event.t, event.route, event.conn)
        style = "yellow" if found.severity is Severity.WARNING else "bold yellow"
        arrow = event.direction.arrow if event.direction else "·"
        text.append(f"{arrow} ⚠ {found.rule}", style)
        text.append(f" {found.message}")
        if found.path != "$":
            text.append(f" at {found.path}", "dim")
        if found.outcome:
            text.append(f" [{found.outcome}]", "magenta")
        return text

    def _frame(self, frame: FrameSeen) -> Optional[Text]:
        message = frame.message
        if isinstance(message, Malformed):
            text = self._prefix(frame.t, frame.route, frame.conn)
            text.append(f"{frame.direction.arrow} malformed {message.kind.value}", "bold magenta")
            text.append(f" ({format_size(frame.size)}): {message.detail}")
            return text
        if self.verbosity < Verbosity.VERBOSE:
            return None
        text = self._prefix(frame.t, frame.route, frame.conn)
        what = "request" if frame.direction is Direction.C2S else "response"
        text.append(f"{frame.direction.arrow} {what} {format_size(frame.size)} ", "dim")
        preview = json.dumps(message.obj, ensure_ascii=False)
        text.append(preview[:160] + ("…" if len(preview) > 160 else ""), "dim")
        return text
