"""Which MCP tool call a GOLEM connection that carried nothing failed, decided once, by the
session's tool-call tracker, and carried by the connection's close.

When the plugin is down (Rhino not running), the MCP server's GOLEM connection is accepted by
the proxy and then closed, since the upstream refused it: no frame ever crosses it, so no frame
can name the tool call that opened it, and that call's failure would show nothing under it.
`ConnectionAttribution` follows each GOLEM connection's open and close, in wire order with
the MCP hop (the caller sees to the order: `Proxy` in one process, `HandoffSource` in an
observing process of its own, through `LayerTaps.connections_of`): at the open it notes the
calls the tracker has in flight (`ToolCallTracker.in_flight`, the set a frame decoded then
would name), and a close after which no byte crossed either way gets them as its
``tool_calls`` (`ConnectionClosed.tool_calls`): one, the call that opened it; none, outside
any call; several, ambiguous. Views read that member, as they read a frame's; none
re-derives it.

The decision is the open's, not the close's: a connection whose upstream never answers may end
only after the call that opened it gave up (`ProxyOptions.connect_timeout`).
"""

from __future__ import annotations

import collections
import dataclasses

from ..events import ConnectionClosed, ConnectionOpened, ToolCallRef
from .attribution import ToolCallTracker

__all__ = ["MAX_NOTED", "ConnectionAttribution"]

MAX_NOTED = 4096
"""Open connections whose calls are kept at most: past it the oldest is let go (its close,
if nothing crossed it, then names no decision at all, rather than a guessed one)."""


class ConnectionAttribution:
    """Follows the GOLEM routes' opens and closes; see the module docstring."""

    def __init__(self, tracker: ToolCallTracker) -> None:
        self.tracker = tracker
        self._opened: collections.OrderedDict[int, tuple[ToolCallRef, ...]] = (
            collections.OrderedDict()
        )

    def opened(self, event: ConnectionOpened) -> None:
        """A GOLEM route's connection opened (in wire order): note the calls in flight."""
        self._opened[event.conn] = self.tracker.in_flight
        if len(self._opened) > MAX_NOTED:
            self._opened.popitem(last=False)

    def closed(self, event: ConnectionClosed, carried: bool = False) -> ConnectionClosed:
        """A GOLEM route's connection closed (after its open): with the calls noted at the
        open as its ``tool_calls`` when no byte crossed it either way, else as it is.
        ``carried``: its tap was handed a byte (`ConnectionTap.carried`), forwarded or not:
        a request read and then withheld (a fault, an intercept) or never delivered has its
        own row, and the connection none."""
        self.tracker.late.closed(event.route, event.conn)
        calls = self._opened.pop(event.conn, None)
        if calls is None or carried or event.bytes_c2s or event.bytes_s2c:
            return event
        return dataclasses.replace(event, tool_calls=calls)
