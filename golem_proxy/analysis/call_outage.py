"""A tool call made while a GOLEM route was not listening, or during which one stopped
listening, as the views say it: the decision is the tracker's
(`golem_proxy.live.attribution`), carried by the call's request frame and its answer
(`FrameSeen.routes_down`); this module only words it."""

from __future__ import annotations

from typing import Optional

from ..events import RouteDown
from ..terminal import safe_text
from .flow import Flow

__all__ = ["outage_label", "outage_text", "routes_down", "went_down"]


def routes_down(flow: Flow) -> tuple[RouteDown, ...]:
    """The GOLEM routes that were not listening when a ``tools/call`` was made, as its request
    frame carries them (`FrameSeen.routes_down`); empty for any other flow."""
    request = flow.request
    return () if request is None or request.routes_down is None else request.routes_down


def went_down(flow: Flow) -> tuple[RouteDown, ...]:
    """The GOLEM routes that went down while a ``tools/call`` was in flight (the plugin went
    away under it), as its answer carries them; empty for any other flow, and for a call
    that was never answered."""
    response = flow.response
    return () if response is None or response.routes_down is None else response.routes_down


def _said(routes: tuple[RouteDown, ...], since: str) -> list[str]:
    """Each route and its time, ``since`` between them (``down since``, ``went down at``)."""
    return [f"{safe_text(d.route, 40)} {since} {d.since:.3f} s" for d in routes]


def outage_label(flow: Flow) -> Optional[str]:
    """``main down since 1.553 s`` for a tool call made while a GOLEM route was not listening
    (a connection its server tried there was refused by the system, unseen), ``main went
    down at 2.104 s`` for one during which it stopped listening; None otherwise."""
    said = _said(routes_down(flow), "down since") + _said(went_down(flow), "went down at")
    return ", ".join(said) if said else None


def outage_text(flow: Flow) -> Optional[str]:
    """`outage_label` in a sentence: what the call's row cannot show, and why."""
    before = _said(routes_down(flow), "down since")
    during = _said(went_down(flow), "at")
    said = []
    if before:
        said.append(
            f"made while a GOLEM route was not listening ({', '.join(before)}: its upstream "
            "refused a connection)"
        )
    if during:
        said.append(
            f"a GOLEM route stopped listening while it was in flight ({', '.join(during)}: "
            "its upstream refused a connection)"
        )
    if not said:
        return None
    return (
        f"{'; '.join(said)}: any connection this call's server tried there "
        f"{'after that ' if not before else ''}was refused by the system, as it would be "
        "without the proxy, and never reached the proxy, so nothing of it can be seen"
    )
