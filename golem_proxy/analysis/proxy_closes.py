"""Connections the proxy itself closed, on the user's word: told apart by the reason the
forwarding side gave (`golem_proxy.live.pumps`), so that every view can say who closed them."""

from __future__ import annotations

from ..events import ConnectionClosed

__all__ = ["IDLE_TIMEOUT_CLOSE", "closed_by_proxy"]

IDLE_TIMEOUT_CLOSE = "(--idle-timeout)"
"""How the reason of a connection the proxy closed for ``--idle-timeout`` ends."""


def closed_by_proxy(event: ConnectionClosed) -> bool:
    """Whether the proxy itself closed a connection that carried bytes, on the user's word
    (``--idle-timeout``): its server may have kept it to use again, and fail when it does."""
    return event.tool_calls is None and event.reason.endswith(IDLE_TIMEOUT_CLOSE)
