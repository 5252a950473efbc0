"""Where the TUI sends a flow's request again (`r`, `E`) and where `Y`'s command line points:
the listen address of the flow's own route in a live proxy run by another process, so the copy
goes through the proxy and is recorded with the others; else one address for every flow (the
plugin given by ``tui FILE --target``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from ..analysis.flows import Flow
from ..net.addresses import Address
from ..terminal import safe_text

__all__ = ["ResendTargets", "other_layer_note"]


def other_layer_note(flow: Flow) -> str:
    """Why a flow of another layer than the plugin's (the MCP hop of ``golem-proxy mcp``: a
    tool call) is not sent again nor copied as a ``golem-proxy call``: those go to the plugin."""
    return safe_text(
        f"flow {flow.number} is on route {flow.route}, the MCP hop: r, E and Y send to the "
        "plugin; golem-proxy mcp-verify plays tool calls again"
    )


@dataclass(frozen=True)
class ResendTargets:
    by_route: Mapping[str, Address] = field(default_factory=dict)
    """Each route's own address, by route name (a live proxy's listen addresses)."""
    fallback: Optional[Address] = None
    """The address of a flow whose route is not in ``by_route``."""

    def for_route(self, route: str) -> Optional[Address]:
        """The address a flow of ``route`` is sent to, or None when there is none."""
        return self.by_route.get(route, self.fallback)

    def __bool__(self) -> bool:
        return bool(self.by_route) or self.fallback is not None
