"""The live log's verbosity (log.py), and which events it shows at each: a cheap test made
before a line is (`may_show`), so that a flood of what a log never prints takes no room from
what it does, and a problem's line (a violation, a malformed frame, a framing error, a gap)
named for the counting of its repeats (`_problem`)."""

from __future__ import annotations

import enum
from collections.abc import Hashable
from typing import Optional

from golem_core.contract import Severity
from golem_core.messages import Malformed, Notification, Request
from golem_core.profiles import Profile
from golem_core.profiles.mcp import is_notification

from .. import events
from ..events import Event
from ..status_tone import Tone, outcome_tone
from .log_asked import AskedCalls
from .log_under import StepsUnderCalls

__all__ = ["ShownAtVerbosity", "Verbosity"]


class Verbosity(enum.IntEnum):
    QUIET = 0
    """Problems only: error responses, violations, malformed frames, abnormal closes."""
    NORMAL = 1
    """Every exchange, notification and connection."""
    VERBOSE = 2
    """Also every frame as it arrives, with a preview of its body."""


class ShownAtVerbosity:
    """Mixed into `EventLog`: what it shows at its verbosity."""

    verbosity: Verbosity
    profile: Profile
    route_profiles: dict[str, Profile]
    _asked: AskedCalls
    _under: Optional[StepsUnderCalls]

    def may_show(self, event: Event) -> bool:
        """False for an event this log never prints at its verbosity (a frame that is neither
        malformed nor a notification, below verbose; any frame when quiet, but a malformed
        one; an exchange that went well, when quiet): a cheap test, so that such a flood never
        takes room from the lines it prints. With a tool layer and the proxy acting on frames
        (`golem-proxy mcp` with ``--fault`` or ``--intercept``) every event: the rows it
        follows place the proxy's steps under each tool call (`StepsUnderCalls`), and
        `render` leaves out what it does not show."""
        if self._under is not None:
            return True
        if isinstance(event, events.FrameSeen) and self.verbosity < Verbosity.VERBOSE:
            if (
                isinstance(event.message, Malformed)
                or self._never_delivered(event)
                or self._asked.wants(event, self._profile(event.route))
            ):
                return True
            return self.verbosity is Verbosity.NORMAL and isinstance(event.message, Notification)
        if isinstance(event, events.ExchangeCompleted):
            return not self._unshown(event)
        return True

    def _unshown(self, exchange: events.ExchangeCompleted) -> bool:
        """An exchange a quiet log leaves out: one that went well (not a problem). An answer
        that came after its tool call returned, or a call's result that is another's answer,
        is one, whatever its outcome."""
        return (
            self.verbosity < Verbosity.NORMAL
            and outcome_tone(exchange.outcome) is Tone.OK
            and not isinstance(exchange.request.message, Malformed)
            and not (exchange.response.late or exchange.response.answer_of is not None)
        )

    def _problem(self, event: Event) -> Optional[tuple[str, int, Hashable, str]]:
        """For a problem's line that this log shows (a violation, a malformed frame, a
        framing error, a gap in what was observed): its route and connection, what its
        repeats share (the kind and what exactly), and its name."""
        if isinstance(event, events.ViolationSeen):
            if not self._shows_violation(event):
                return None
            rule = event.violation.rule
            return event.route, event.conn, ("violation", rule), rule
        if isinstance(event, events.FrameSeen) and isinstance(event.message, Malformed):
            if not self._malformed(event):
                return None
            kind = event.message.kind
            return event.route, event.conn, kind, f"malformed {kind.value}"
        if isinstance(event, events.FramingErrorSeen):
            error = event.kind
            return event.route, event.conn, error, f"framing error: {error.value}"
        if isinstance(event, events.ObservationLost):
            reason = event.reason
            return event.route, event.conn, reason, f"unobserved: {reason.value}"
        return None

    def _profile(self, route: str) -> Profile:
        return self.route_profiles.get(route, self.profile)

    def _shows_violation(self, event: events.ViolationSeen) -> bool:
        """Warnings only when verbose."""
        return event.violation.severity is not Severity.WARNING or (
            self.verbosity >= Verbosity.VERBOSE
        )

    def _malformed(self, frame: events.FrameSeen) -> bool:
        """A malformed frame, which is a problem line (an MCP notification is typed as a
        request without an id, and is none)."""
        message = frame.message
        return isinstance(message, Malformed) and not (
            self._profile(frame.route).tool_layer and is_notification(message)
        )

    @staticmethod
    def _never_delivered(frame: events.FrameSeen) -> bool:
        """A request its receiver never got (`FrameSeen.undelivered`): no exchange line will
        ever say it, so its own line does, whatever the verbosity."""
        return bool(frame.undelivered) and isinstance(frame.message, Request)
