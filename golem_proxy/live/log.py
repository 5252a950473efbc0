"""The live log: one line per exchange and per notification, coloured by outcome, plus lines
for violations, malformed frames, framing errors and connection events. Consumes the event
stream (it may fall behind under load; it then says how many events it skipped).

What peers send is shown, never obeyed: every string from a frame goes through `safe_text`
into `rich.text.Text`. The proxy and the demo hand it a console on a `TerminalOutput`
(log_output.py), so a terminal that stops reading costs log lines, never a stalled relay."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Optional

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from golem_core.contract import Severity
from golem_core.messages import Malformed, Notification
from golem_core.profiles import Profile
from golem_core.profiles.mcp import TOOLS_CALL, tool_name

from .. import events
from ..analysis.late_answers import misread_words
from ..analysis.spool_full import spool_full_words
from ..analysis.tool_calls import candidates_text, tool_call_name
from ..events import Direction, Event
from ..status_tone import (
    TONE_STYLES,
    Tone,
    cut_frame_status,
    never_delivered_status,
    outcome_tone,
    undelivered_status,
)
from ..table_layout import print_unfolded, terminal_width
from ..terminal import counted, format_latency, format_size, preview_json, safe_text
from .log_asked import AskedCalls
from .log_lines import apart_from_stderr, fold_fields
from .log_repeats import Fold, RepeatFold
from .log_text import WallClock, styled
from .log_under import StepsUnderCalls
from .log_verbosity import ShownAtVerbosity, Verbosity

__all__ = ["EventLog", "Verbosity", "format_size"]


# How much of a peer-controlled string one log line shows (it stays one line on a terminal).
_NAME = 80
_METHOD = 120
_DETAIL = 200
# An exchange line with its columns padded: time and connection, method, outcome, latency,
# sizes. Narrower terminals get the fields unpadded.
_ALIGNED_WIDTH = 100
# The status column's width until a longer status is shown: it then widens to that status
# (never cut but at `_STATUS_LIMIT`), so the latency and sizes after it stay in line.
_STATUS = 18
_STATUS_LIMIT = 60


class EventLog(ShownAtVerbosity):
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
        acts_on_frames: bool = True,
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
        self._wall_clock = WallClock()
        self._where: tuple[str, int, str] = ("", -1, "")
        """The last connection a line was shown for, and its columns (`_prefix_pieces`)."""
        self._repeats = RepeatFold()
        self._status_width = _STATUS
        """The status column's width: the widest status shown so far, at least `_STATUS`."""
        self._asked = AskedCalls()
        layered = profile.tool_layer or any(p.tool_layer for p in self.route_profiles.values())
        self._under = StepsUnderCalls(profile) if layered and acts_on_frames else None
        """`golem-proxy mcp` with ``--fault`` or ``--intercept`` (``acts_on_frames``): the
        proxy's steps under each tool call, for its line (it takes every event: a session
        where the proxy does nothing to frames does not pay for it)."""
        self._says_stderr = apart_from_stderr(console)
        """The log goes elsewhere than our stderr (``--log FILE``): what a wrapped server
        writes to its stderr, which is passed on to ours, is written here too, in its place
        among the calls (a server that dies at start says why only there)."""

    @property
    def stopped(self) -> bool:
        """True once the console's output is gone for good (a `TerminalOutput` whose reader
        closed the pipe): rendering more lines would be wasted work."""
        return bool(getattr(self.console.file, "closed", False))

    def _clock(self, t: float) -> str:
        return self._wall_clock(self.started_wall + t)

    def _prefix(self, t: float, route: str, conn: int) -> Text:
        return styled(self._prefix_pieces(t, route, conn))

    def _prefix_pieces(self, t: float, route: str, conn: int) -> list[tuple[str, str]]:
        """A line's time, route and connection, as `styled` pieces."""
        last_route, last_conn, name = self._where
        if route != last_route or conn != last_conn:  # a burst is mostly one connection's
            name = f"{safe_text(route, _NAME):<5}"
            self._where = (route, conn, name)
        return [
            (self._clock(t), "dim"),
            (" ", ""),
            (name, "cyan"),
            (" ", ""),
            (f"#{conn:<3}", "dim"),
            (" ", ""),
        ]

    def handle(self, event: Event) -> None:
        """Print whatever ``event`` deserves at this verbosity: on a terminal, folded between
        its fields to the terminal's width (never in the middle of a number); elsewhere
        (a pipe, a file) one line per event, for grep. A problem repeated on a connection is
        shown a few times a second, then counted (`golem_proxy.live.log_repeats`)."""
        t: Optional[float] = getattr(event, "t", None)
        if self._under is not None:
            self._under.apply(event)  # every event, shown or not: it places the steps
        if t is not None:
            for fold in self._repeats.ended(t):
                self._print(self._folded(fold))
        problem = self._problem(event)
        if problem is not None and t is not None:
            # Before the line is made: making it is most of what a flood of them costs.
            route, conn, which, what = problem
            if not self._repeats.admit(route, conn, which, what, t):
                return
        line = self.render(event)
        if line is not None:
            self._print(line)

    def flush_repeats(self) -> None:
        """Say what the repeats still being counted did not show (at the end)."""
        for fold in self._repeats.pending():
            self._print(self._folded(fold))

    def _print(self, line: Text) -> None:
        width = terminal_width(self.console)
        if width is not None and line.cell_len > width:
            line = fold_fields(line, width, self.console)
        print_unfolded(self.console, line)

    def _folded(self, fold: Fold) -> Text:
        text = self._prefix(fold.last, fold.route, fold.conn)
        text.append(
            f"… {fold.folded:,} more {safe_text(fold.what, _NAME)} within "
            f"{fold.last - fold.started:.2f} s, not shown (repeats beyond "
            f"{self._repeats.shown} a second are counted)",
            "yellow",
        )
        return text

    def render(self, event: Event) -> Optional[Text]:
        """The line for ``event`` at this verbosity, or None."""
        if isinstance(event, events.ExchangeCompleted):
            asked = event.request
            self._asked.answered(event.conn, asked.direction, asked.index)
            return self._exchange(event)
        if isinstance(event, events.ViolationSeen):
            return self._violation(event)
        if isinstance(event, events.FrameSeen):
            if self._asked.wants(event, self._profile(event.route)):
                self._asked.note(event)
            return self._frame(event)
        if isinstance(event, events.FramingErrorSeen):
            text = self._prefix(event.t, event.route, event.conn)
            arrow, detail = event.direction.arrow, safe_text(event.detail, _DETAIL)
            if event.cut:  # the proxy stopped reading it: no framing error of its sender's
                why = cut_frame_status(safe_text(event.undelivered, _NAME), detail)
                return text.append(f"{arrow} {why}", TONE_STYLES[Tone.UNDELIVERED])
            text.append(f"{arrow} framing error: {event.kind.value}", "bold magenta")
            return text.append(f" — {detail}")
        if isinstance(event, events.ConnectionOpened):
            if self.verbosity < Verbosity.NORMAL:
                return None
            text = self._prefix(event.t, event.route, event.conn)
            client, upstream = safe_text(event.client, _NAME), safe_text(event.upstream, _NAME)
            text.append(f"connected {client} → {upstream}", "dim")
            return text
        if isinstance(event, events.ConnectionClosed):
            self._asked.closed(event.conn)
            if self.verbosity < Verbosity.NORMAL and not event.abnormal:
                return None
            text = self._prefix(event.t, event.route, event.conn)
            style = "yellow" if event.abnormal else "dim"
            text.append(
                f"closed: {safe_text(event.reason, _DETAIL)} ({format_size(event.bytes_c2s)} → / "
                f"{format_size(event.bytes_s2c)} ←)",
                style,
            )
            self._caller(text, event.tool_calls)
            return text
        if isinstance(event, events.StreamEnded):
            # Whatever the verbosity: requests that will not be answered, said when decided.
            text = self._prefix(event.t, event.route, event.conn)
            side = "upstream" if event.direction is events.Direction.S2C else "client"
            waiting = counted(len(event.unanswered), "request")
            # The proxy's own cut is not blamed on the side.
            ended = (
                f"{side} ended its stream"
                if not event.cut
                else (f"the proxy ended the {side}'s stream ({safe_text(event.cut, _NAME)})")
            )
            text.append(
                f"{event.direction.arrow} {ended}: {waiting} it was to answer will not be answered",
                "yellow",
            )
            return text
        if isinstance(event, (events.FaultInjected, events.InterceptStep)):
            text = self._prefix(event.t, event.route, event.conn)
            text.append(f"fault {safe_text(event.fault, _NAME)}", "bold blue")
            method = safe_text(event.method or "", _METHOD)
            text.append(f" {method} {safe_text(event.detail, _DETAIL)}")
            return text
        if isinstance(event, events.UpstreamStatus):
            # Said once per change, whatever the verbosity: every client of the route is
            # refused meanwhile.
            text = Text.assemble(
                (self._clock(event.t), "dim"), " ", (f"{safe_text(event.route, _NAME):<5}", "cyan")
            )
            text.append(
                " upstream back: " if event.up else " upstream down: ",
                "bold green" if event.up else "bold red",
            )
            text.append(safe_text(event.detail, _DETAIL))
            return text
        if isinstance(event, events.SpoolFull):
            # Whatever the verbosity: what a kill -9 would lose changes here.
            text = Text(self._clock(event.t), "dim")
            return text.append(f" {spool_full_words(event)}", "bold yellow")
        if isinstance(event, events.ProcessOutput):
            if not self._says_stderr:
                return None
            lines = event.data.decode("utf-8", "replace").splitlines()
            shown = [
                self._prefix(event.t, event.route, event.conn).append(
                    f"stderr│ {safe_text(line, _DETAIL)}", "yellow"
                )
                for line in lines
                if line.strip()
            ]
            return Text("\n").join(shown) if shown else None
        if isinstance(event, events.EventsMissed):
            return Text(f"… {counted(event.count, 'event')} not shown (log fell behind)", "yellow")
        if isinstance(event, events.ObservationLost):
            # A gap in what was inspected (never in what was forwarded): always worth a line.
            text = self._prefix(event.t, event.route, event.conn)
            text.append(f"{event.direction.arrow} {event.reason.value}: ", "bold yellow")
            text.append(safe_text(event.detail, _DETAIL), "yellow")
            if event.digest:
                text.append(f" {event.digest[:19]}…", "dim")
            answered = self._asked.answering(event)
            if answered is not None:  # the tap paired it: the call it answered
                text.append(f"  the answer to {safe_text(answered, _METHOD)}", "cyan")
            return text
        return None

    def _exchange(self, exchange: events.ExchangeCompleted) -> Optional[Text]:
        request = exchange.request.message
        profile = self._profile(exchange.route)
        if self._unshown(exchange):
            return None
        outcome = exchange.outcome
        tone = outcome_tone(outcome, exchange.undelivered)
        status = safe_text(
            undelivered_status(outcome.text, exchange.undelivered), limit=_STATUS_LIMIT
        )
        style = TONE_STYLES[tone]
        method = safe_text(exchange.method or profile.describe(request), _METHOD)
        if profile.tool_layer and exchange.method == TOOLS_CALL:
            method = f"{method} {safe_text(tool_name(request), _NAME)}"
        if exchange.request.direction is Direction.S2C:
            method = f"← {method}"  # the server asked, the client answered
        # Columns line up on a wide terminal or in a file; a narrow terminal gets the fields
        # without their padding (and folded between them, see `handle`).
        width = terminal_width(self.console)
        narrow = width is not None and width < _ALIGNED_WIDTH
        latency = format_latency(exchange.latency)
        pieces = self._prefix_pieces(exchange.t, exchange.route, exchange.conn)
        pieces += [
            (method if narrow else f"{method:<32}", "bold"),
            (" ", ""),
            (status if narrow else self._status_column(status), style),
            (f" {latency}" if narrow else f" {latency:>9}", "dim"),
            (
                f"  {format_size(exchange.request.size)} → {format_size(exchange.response.size)}",
                "dim",
            ),
        ]
        text = styled(pieces)
        if outcome.message and tone is Tone.FAILED:
            text.append(f"  {safe_text(outcome.message, _DETAIL)}", style)
        for down in exchange.request.routes_down or ():
            # A call made while a GOLEM route did not listen: nothing of it reached the proxy.
            text.append(f"  ⋯ {safe_text(down.route, _NAME)} down since ", "yellow")
            text.append(f"{self._clock(down.since)}", "yellow")
        for down in exchange.response.routes_down or ():
            # A route that stopped listening during the call: nothing after that reached it.
            text.append(f"  ⋯ {safe_text(down.route, _NAME)} went down at ", "yellow")
            text.append(f"{self._clock(down.since)}", "yellow")
        self._caller(text, exchange.request.tool_calls)
        # Decided as the frames were decoded (`FrameSeen.late`, `FrameSeen.answer_of`), said
        # in `show`'s words; last, so that the columns and the call stay where they are.
        note = misread_words(exchange.response, exchange.request.tool_calls or ())
        if note is not None:
            text.append(f"  · {safe_text(note, 2 * _DETAIL)}", "bold yellow")
        under = self._under.words() if self._under is not None else ""
        if under and profile.tool_layer and exchange.method == TOOLS_CALL:
            # As `show` says it on the call's row: the result may be the proxy's doing.
            text.append(f"  · the proxy under it: {safe_text(under, 2 * _DETAIL)}", "bold blue")
        return text

    @staticmethod
    def _caller(text: Text, calls: Optional[tuple[events.ToolCallRef, ...]]) -> None:
        """`golem-proxy mcp`: the tool call an exchange (or a connection that carried
        nothing) belongs to, after its line."""
        if not calls:
            return
        if len(calls) == 1:
            text.append(f"  ⟵ {safe_text(calls[0].tool, _NAME)}", "cyan")
        else:
            # No rows here to name them by (`show`'s #3|#4): each as the TUI's detail names
            # it beside its row, its tool and MCP id (overlapping calls are often of one tool).
            tools = candidates_text(calls, _call_name, " | ")
            text.append(f"  ⟵ ambiguous: {tools}", "cyan")

    def _status_column(self, status: str) -> str:
        """``status`` whole, padded to the status column, which widens to it when it is
        longer (``INVALID_PARAMS (in result)``): what follows lines up on this line and the
        next ones, and no word of a status is ever dropped to keep a column."""
        width = cell_len(status)
        self._status_width = max(self._status_width, width)
        return status + " " * (self._status_width - width)

    def _violation(self, event: events.ViolationSeen) -> Optional[Text]:
        found = event.violation
        if not self._shows_violation(event):
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

    def _undelivered(self, frame: events.FrameSeen) -> Text:
        """The line of a request never delivered, in the columns of an exchange's."""
        text = self._prefix(frame.t, frame.route, frame.conn)
        text.append(f"{safe_text(frame.method or '?', _METHOD):<32} ", "bold")
        why = safe_text(frame.undelivered, _NAME)
        status = self._status_column(never_delivered_status(why, frame.delivered_bytes, frame.size))
        text.append(status, TONE_STYLES[Tone.UNDELIVERED])
        text.append(f" {'':>9}  {format_size(frame.size)} →", "dim")
        self._caller(text, frame.tool_calls)
        return text

    def _frame(self, frame: events.FrameSeen) -> Optional[Text]:
        message = frame.message
        if self._never_delivered(frame):
            return self._undelivered(frame)
        if isinstance(message, Malformed) and self._malformed(frame):
            text = self._prefix(frame.t, frame.route, frame.conn)
            text.append(f"{frame.direction.arrow} malformed {message.kind.value}", "bold magenta")
            text.append(f" ({format_size(frame.size)}): {safe_text(message.detail, _DETAIL)}")
            return text
        if isinstance(message, Notification) and self.verbosity is Verbosity.NORMAL:
            # Complete as it is: its line stands where an exchange's would.
            text = self._prefix(frame.t, frame.route, frame.conn)
            text.append(f"{frame.direction.arrow} ")
            text.append(f"{safe_text(message.method, _METHOD):<30}", "bold")
            text.append(f" {self._status_column('notification')}", "blue")
            text.append(f" {format_size(frame.size):>9}", "dim")
            return text
        if self.verbosity < Verbosity.VERBOSE:
            return None
        text = self._prefix(frame.t, frame.route, frame.conn)
        if isinstance(message, Notification):
            what = "notification"
        else:
            what = "request" if frame.is_request else "response"
        text.append(f"{frame.direction.arrow} {what} {format_size(frame.size)} ", "dim")
        text.append(preview_json(message.obj, 160), "dim")
        return text


def _call_name(call: events.ToolCallRef) -> str:
    return safe_text(tool_call_name(call), 2 * _NAME)
