"""The taps of a session with hops served outside the relay (the MCP stdio hop of
``golem-proxy mcp``), where tool-call attribution needs both layers decoded together.

A hop's tap (`new_tap` with ``layer``) decodes with the hop's own profile and takes the
session's redaction and frame limits, not the GOLEM routes' catalogue, cap or annotation.
`LayerTaps` builds every tap of the observing process (``--observer child-process``,
observing.py): it owns the session's one `ToolCallTracker`, made there from the setup (never
sent half-filled from the forwarding process), which follows the MCP hop's events and
annotates the GOLEM routes' frames, all decoded in the order the forwarding process handed
their bytes on. A process that takes over from one that died learns from the recording the
tool calls that were in flight (`LayerTaps.recovered`, `golem_proxy.live.take_up`). The GOLEM
routes' opens and closes go through `LayerTaps.connections_of`, so that a connection that
carried nothing names the tool calls it failed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Optional

from golem_core.profiles import MCP, Profile, get_profile

from ..events import Direction, Event, FrameSeen
from ..recording.format import RouteInfo
from ..recording.mcp_session_scan import McpKnown
from .attribution import ToolCallTracker
from .connection_attribution import ConnectionAttribution
from .proxy_options import ProxyOptions, new_tap
from .redact import Redactor
from .tap import ConnectionTap

__all__ = ["LayerTaps"]


class LayerTaps:
    """Makes each connection's tap in the observing process: the relay's routes' as
    `new_tap` does (annotated with the tool calls in flight when a layer is MCP), the layers'
    as `new_tap` with ``layer`` does (an MCP layer's events followed by the tracker first).
    Called as `new_tap` is."""

    def __init__(self, layers: Sequence[RouteInfo]) -> None:
        self._profiles = {
            layer.name: get_profile(layer.profile) for layer in layers if layer.profile is not None
        }
        self.tracker: Optional[ToolCallTracker] = None
        """The session's one tracker, when a layer is MCP."""
        if any(profile.name == MCP.name for profile in self._profiles.values()):
            self.tracker = ToolCallTracker(MCP)
        self._connections = (
            ConnectionAttribution(self.tracker) if self.tracker is not None else None
        )

    def __call__(
        self,
        conn: int,
        route: str,
        profile: Profile,
        publish: Callable[[Event], None],
        options: ProxyOptions,
        redactor: Optional[Redactor],
    ) -> ConnectionTap:
        """The tap of connection ``conn`` on ``route`` (``options``: the session's, which the
        relay's routes take with this session's annotation)."""
        layer = self._profiles.get(route)
        tracker = self.tracker
        if layer is None:
            if tracker is not None:
                options = dataclasses.replace(options, annotate=tracker)
            return new_tap(conn, route, profile, publish, options, redactor)
        mcp_tracker = self._tracker_of(route)
        if mcp_tracker is not None:
            publish = _watched(mcp_tracker, publish)
        return new_tap(conn, route, layer, publish, options, redactor, layer=True)

    @property
    def followed(self) -> tuple[str, ...]:
        """The methods of the notifications `recovered` follows, besides requests."""
        return ToolCallTracker.NOTICES if self.tracker is not None else ()

    def recovered(self, route: str, frame: FrameSeen) -> None:
        """A frame the recording shows in flight on ``route`` when the observing process before
        this one died (or a notification of `followed` after it), oldest first: followed as
        if just decoded, not published again (the tracker knows the tool calls in flight)."""
        tracker = self._tracker_of(route)
        if tracker is not None:
            tracker.take_over(frame)

    def mcp_routes(self) -> tuple[str, ...]:
        """The MCP hops' routes, whose sessions' rules a restart takes up (`taken_up`)."""
        return tuple(route for route in self._profiles if self._tracker_of(route) is not None)

    def taken_up(self, route: str, known: McpKnown) -> None:
        """What the recording holds of the MCP sessions on ``route`` when the observing
        process before this one died: their rules go on from there (`McpRulesLive.take_up`)."""
        tracker = self._tracker_of(route)
        if tracker is not None:
            tracker.rules_of(route).take_up(known)

    def resumed(self, route: str, conn: int, direction: Direction, unseen: bool) -> None:
        """After a restart, ``direction`` of ``conn`` goes on (``unseen``: bytes of the
        connection crossed, or may be missing, while no process recorded them): the server's
        answers on the MCP hop end, or let go, the calls `recovered` (`ToolCallTracker
        .answers_resumed`); its session's start may have been among them (`McpRulesLive.gap`).
        """
        tracker = self._tracker_of(route)
        if tracker is None:
            return
        if direction is Direction.S2C:
            tracker.answers_resumed(conn, unseen=unseen)
        if unseen:
            tracker.rules_of(route).gap(conn)

    def connections_of(self, route: str) -> Optional[ConnectionAttribution]:
        """What follows ``route``'s opens and closes in wire order (`HandoffSource` sees to
        it), so that a connection that carried nothing names the tool calls it failed: a
        GOLEM route's, when a layer is MCP; None for a layer's own connections."""
        return None if route in self._profiles else self._connections

    def _tracker_of(self, route: str) -> Optional[ToolCallTracker]:
        """The tracker, when ``route`` is the MCP hop it follows."""
        layer = self._profiles.get(route)
        return self.tracker if layer is not None and layer.name == MCP.name else None


def _watched(tracker: ToolCallTracker, publish: Callable[[Event], None]) -> Callable[[Event], None]:
    """``publish``, with the tracker following each event first (as the MCP hop's relay does
    in one process: `golem_proxy.live.stdio_relay.StdioRelay.publish`)."""

    def watch_then_publish(event: Event) -> None:
        for followed in tracker.follow(event):
            publish(followed)

    return watch_then_publish
