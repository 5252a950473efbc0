"""A tool call made while a GOLEM route was not listening, as the views say it: the
decision is the tracker's (`golem_proxy.live.attribution`), carried by the call's request
frame (`FrameSeen.routes_down`); this module only words it."""

from __future__ import annotations

from typing import Optional

from ..events import RouteDown
from ..terminal import safe_text
from .flow import Flow

__all__ = ["outage_label", "outage_text", "routes_down"]


def routes_down(flow: Flow) -> tuple[RouteDown, ...]:
    """The GOLEM routes that were not listening when a ``tools/call`` was made, as its request
    frame carries them (`FrameSeen.routes_down`); empty for any other flow."""
    request = flow.request
    return () if request is None or request.routes_down is None else request.routes_down


def outage_label(flow: Flow) -> Optional[str]:
    """``main down since 1.553 s`` for a tool call made while a GOLEM route was not listening
    (a connection its server tried there was refused by the system, unseen); None otherwise."""
    down = routes_down(flow)
    if not down:
        return None
    return ", ".join(f"{safe_text(d.route, 40)} down since {d.since:.3f} s" for d in down)


def outage_text(flow: Flow) -> Optional[str]:
    """`outage_label` in a sentence: what the call's row cannot show, and why."""
    label = outage_label(flow)
    if label is None:
        return None
    return (
        f"made while a GOLEM route was not listening ({label}: its upstream refused a "
        "connection): any connection this call's server tried there was refused by the "
        "system, as it would be without the proxy, and never reached the proxy, so nothing "
        "of it can be seen"
    )
