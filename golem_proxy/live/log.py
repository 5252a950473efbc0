"""The live log: one line per exchange, coloured by outcome, plus lines for violations,
malformed frames, framing errors and connection events. Consumes the event stream (it may fall
behind under load; it then says how many events it skipped).

What peers send is shown, never obeyed: every string from a frame goes through `safe_text`
into `rich.text.Text`. The proxy and the demo hand it a console on a `TerminalOutput`
(log_output.py), so a terminal that stops reading costs log lines, never a stalled relay."""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from typing import Optional

from rich.console import Console
from rich.text import Text

from golem_core.contract import Severity
from golem_core.messages import ErrorResponse, Malformed, Response
from golem_core.profiles import Profile
from golem_core.profiles.mcp import TOOLS_CALL, is_notification, tool_call_failed, tool_name

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
    ObservationLost,
    ViolationSeen,
)
from ..terminal import format_latency, format_size, preview_json, safe_text

__all__ = ["EventLog", "Verbosity", "format_size"]


# How much of a peer-controlled string one log line shows (it stays one line on a terminal).
_NAME = 80
_METHOD = 120
_DETAIL = 200


class Verbosity(enum.IntEnum):
    QUIET = 0
    """Problems only: error responses, violations, malformed frames, abnormal closes."""
    NORMAL = 1
    """Every exchange and connection."""
    VERBOSE = 2
    """Also every frame as it arrives, with a preview of its body."""


class EventLog:
    """Renders events as log lines on a rich console.

    Every string a peer controls (methods, ids, error codes and messages, previews, peer and
    route names, details) goes through `safe_text` into `rich.text.Text`: it is never read as
    markup and never reaches the terminal as a control sequence or a lone surrogate."""

    def __init__(
        self,
        console: Console,
        profile: Profile,
        verbosity: Verbosity = Verbosity.NORMAL,
        started_wall: Optional[float] = None,
        route_profiles: Optional[Mapping[str, Profile]] = None,
    ) -> None:
        self.console = console
        self.profile = profile
        self.route_profiles = dict(route_profiles or {})
        """Routes whose frames have a profile of their own (`golem-proxy mcp`'s ``mcp``)."""
        self.verbosity = verbosity
        self.started_wall = (
            started_wall
            if started_wall is not None
            else datetime.datetime.now(datetime.timezone.utc).timestamp()
        )

    @property
    def stopped(self) -> bool:
        """True once the console's output is gone for good (a `TerminalOutput` whose reader
        closed the pipe): rendering more lines would be wasted work."""
        return bool(getattr(self.console.file, "closed", False))

    def _clock(self, t: float) -> str:
        moment = datetime.datetime.fromtimestamp(self.started_wall + t)
        return moment.strftime("%H:%M:%S.%f")[:-3]

    def _prefix(self, t: float, route: str, conn: int) -> Text:
        return Text.assemble(
            (self._clock(t), "dim"),
            " ",
            (f"{safe_text(route, _NAME):<5}", "cyan"),
            " ",
            (f"#{conn:<3}", "dim"),
            " ",
        )

    def handle(self, event: Event) -> None:
        """Print whatever ``event`` deserves at this verbosity."""
        line = self.render(event)
        if line is not None:
            self.console.print(line, soft_wrap=True, highlight=False)

    def render(self, event: Event) -> Optional[Text]:
        """The line for ``event`` at this verbosity, or None."""
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
            text.append(f" — {safe_text(event.detail, _DETAIL)}")
            return text
        if isinstance(event, ConnectionOpened):
            if self.verbosity < Verbosity.NORMAL:
                return None
            text = self._prefix(event.t, event.route, event.conn)
            client, upstream = safe_text(event.client, _NAME), safe_text(event.upstream, _NAME)
            text.append(f"connected {client} → {upstream}", "dim")
            return text
        if isinstance(event, ConnectionClosed):
            if self.verbosity < Verbosity.NORMAL and not event.abnormal:
                return None
            text = self._prefix(event.t, event.route, event.conn)
            style = "yellow" if event.abnormal else "dim"
            text.append(
                f"closed: {safe_text(event.reason, _DETAIL)} ({format_size(event.bytes_c2s)} → / "
                f"{format_size(event.bytes_s2c)} ←)",
                style,
            )
            return text
        if isinstance(event, FaultInjected):
            text = self._prefix(event.t, event.route, event.conn)
            text.append(f"fault {safe_text(event.fault, _NAME)}", "bold blue")
            method = safe_text(event.method or "", _METHOD)
            text.append(f" {method} {safe_text(event.detail, _DETAIL)}")
            return text
        if isinstance(event, EventsMissed):
            return Text(f"… {event.count} events not shown (log fell behind)", "yellow")
        if isinstance(event, ObservationLost):
            # A gap in what was inspected (never in what was forwarded): always worth a line.
            text = self._prefix(event.t, event.route, event.conn)
            text.append(f"{event.direction.arrow} {event.reason.value}: ", "bold yellow")
            text.append(safe_text(event.detail, _DETAIL), "yellow")
            if event.digest:
                text.append(f" {event.digest[:19]}…", "dim")
            return text
        return None

    def _profile(self, route: str) -> Profile:
        return self.route_profiles.get(route, self.profile)

    def _exchange(self, exchange: ExchangeCompleted) -> Optional[Text]:
        response = exchange.response.message
        request = exchange.request.message
        profile = self._profile(exchange.route)
        tool_failed = profile.tool_layer and tool_call_failed(request, response)
        ok = isinstance(response, Response) and not isinstance(request, Malformed)
        if ok and not tool_failed and self.verbosity < Verbosity.NORMAL:
            return None
        status = safe_text(profile.describe_exchange(request, response), limit=60)
        if tool_failed and isinstance(response, Response):
            status, style = "isError", "red"
        elif isinstance(response, Response):
            style = "green"
        elif isinstance(response, ErrorResponse):
            style = "red"
        else:
            style = "magenta"
        text = self._prefix(exchange.t, exchange.route, exchange.conn)
        method = safe_text(exchange.method or profile.describe(request), _METHOD)
        if profile.tool_layer and exchange.method == TOOLS_CALL:
            method = f"{method} {safe_text(tool_name(request), _NAME)}"
        text.append(f"{method:<32}", "bold")
        text.append(" ")
        text.append(f"{status:<18}", style)
        text.append(f" {format_latency(exchange.latency):>9}", "dim")
        text.append(
            f"  {format_size(exchange.request.size)} → {format_size(exchange.response.size)}",
            "dim",
        )
        if isinstance(response, ErrorResponse):
            text.append(f"  {safe_text(str(response.error.message), _DETAIL)}", "red")
        if exchange.violations:
            text.append(f"  ⚠ {len(exchange.violations)}", "yellow")
        calls = exchange.request.tool_calls
        if calls:  # `golem-proxy mcp`: the tool call this exchange belongs to
            tools = "|".join(safe_text(call.tool, _NAME) for call in calls)
            text.append(f"  ⟵ {tools}" if len(calls) == 1 else f"  ⟵ ambiguous: {tools}", "cyan")
        return text

    def _violation(self, event: ViolationSeen) -> Optional[Text]:
        found = event.violation
        if found.severity is Severity.WARNING and self.verbosity < Verbosity.VERBOSE:
            return None
        text = self._prefix(event.t, event.route, event.conn)
        style = "yellow" if found.severity is Severity.WARNING else "bold yellow"
        arrow = event.direction.arrow if event.direction else "·"
        text.append(f"{arrow} ⚠ {safe_text(found.rule, _NAME)}", style)
        text.append(f" {safe_text(found.message, _DETAIL)}")
        if found.path != "$":
            text.append(f" at {safe_text(found.path, _METHOD)}", "dim")
        if found.outcome:
            text.append(f" [{safe_text(found.outcome, _METHOD)}]", "magenta")
        return text

    def _frame(self, frame: FrameSeen) -> Optional[Text]:
        message = frame.message
        # An MCP notification is typed as a request without an id, and is no problem.
        notification = self._profile(frame.route).tool_layer and is_notification(message)
        if isinstance(message, Malformed) and not notification:
            text = self._prefix(frame.t, frame.route, frame.conn)
            text.append(f"{frame.direction.arrow} malformed {message.kind.value}", "bold magenta")
            text.append(f" ({format_size(frame.size)}): {safe_text(message.detail, _DETAIL)}")
            return text
        if self.verbosity < Verbosity.VERBOSE:
            return None
        text = self._prefix(frame.t, frame.route, frame.conn)
        what = "request" if frame.direction is Direction.C2S else "response"
        text.append(f"{frame.direction.arrow} {what} {format_size(frame.size)} ", "dim")
        text.append(preview_json(message.obj, 160), "dim")
        return text
