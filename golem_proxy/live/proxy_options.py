"""A proxy session's options, a route as bound, and one connection's tap built from them:
shared by the relay and by the observing process (``--observer child-process``), which
builds the same taps from the same options on its side of the handoff."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

from golem_core.catalogue import MethodCatalogue
from golem_core.profiles import Profile

from ..events import Event
from ..net.addresses import Address, Route
from .connection_attribution import ConnectionAttribution
from .faults import FaultPlan
from .intercept import InterceptEngine
from .link_holds import HOLD_LIMIT
from .observer import DEFAULT_BUDGET
from .redact import Redactor
from .spool import SPOOL_LIMIT
from .tap import Annotator, ConnectionTap, ObserveLimits

__all__ = ["BoundRoute", "ProxyOptions", "new_tap"]


RESTARTS = 3
"""How many times a session replaces an observing process of its own that died, by default:
enough for a crash now and then, not a loop when each new one dies as it starts."""


@dataclass(frozen=True)
class ProxyOptions:
    enforce_limits: bool = False
    allow_public: bool = False
    connect_timeout: float = 10.0
    drain_timeout: float = 2.0
    """How long live connections may go on after shutdown begins."""
    idle_timeout: Optional[float] = None
    """Close a connection with no traffic in either direction for this long (off by default)."""
    cap: Optional[int] = None
    catalogue: Optional[MethodCatalogue] = None
    redact: tuple[str, ...] = ()
    faults: Optional[FaultPlan] = None
    """``--fault`` rules; routes they can act on forward frame by frame (`fault_relay`)."""
    intercept: Optional[InterceptEngine] = None
    """``--intercept``: routes it applies to forward frame by frame too, holding what its
    filter selects until a decision (`intercept`)."""
    acted_on_elsewhere: bool = False
    """Set on the options an observing process of its own is sent, which leave out the fault
    plan and the intercept engine: the forwarding process acts on frames (`acts_on_frames`)."""
    observer_memory: int = DEFAULT_BUDGET
    """What inspection may hold, all connections together (``--observer-memory``)."""
    observer_hold: float = HOLD_LIMIT
    """With ``--observer child-process``: how long forwarding may wait in one go for the
    recording to catch up before it sheds (``--observer-hold``; observer_link.py; by default
    as long as the observing process keeps acknowledging)."""
    observer_restarts: int = RESTARTS
    """With ``--observer child-process``: how many times a session replaces an observing
    process that died (``--observer-restarts``; observer_process.py)."""
    observer_spool: bool = False
    """With ``--observer child-process`` and a recording: hand the records on through a file
    beside the recording (``--observer-spool``, spool.py), forwarding without waiting for
    observation."""
    spool_limit: int = SPOOL_LIMIT
    """With ``observer_spool``: the spool's bytes not recorded yet past which forwarding waits
    for the recording (``--spool-limit``)."""
    observe: ObserveLimits = field(default_factory=ObserveLimits)
    """What one connection's inspection may hold (``--observe-frame-limit``)."""
    annotate: Optional[Annotator] = None
    """Adds the session's decisions to every frame the routes' taps decode (`golem-proxy mcp`:
    the tool call a GOLEM frame belongs to)."""
    connections: Optional[ConnectionAttribution] = None
    """Sees each route connection's open and close in wire order and adds the session's
    decisions to the close (`golem-proxy mcp`: the tool calls a connection that carried no
    byte failed)."""

    @property
    def acts_on_frames(self) -> bool:
        """The proxy itself acts on frames in this session (``--fault``, ``--intercept``)."""
        return self.faults is not None or self.intercept is not None or self.acted_on_elsewhere


@dataclass(frozen=True)
class BoundRoute:
    """A route with the address its listener is really bound to."""

    route: Route
    listen: Address


def new_tap(
    conn: int,
    route: str,
    profile: Profile,
    publish: Callable[[Event], None],
    options: ProxyOptions,
    redactor: Optional[Redactor],
    *,
    layer: bool = False,
) -> ConnectionTap:
    """One connection's tap with the session's checks, redaction and limits (the relay's, and
    the observing process's when observation runs in a process of its own). With ``layer``, a
    hop served outside the relay (the MCP stdio hop of ``golem-proxy mcp``): it decodes with
    the hop's own profile and takes the session's redaction and frame limits only, not the
    GOLEM routes' catalogue, cap or annotation."""
    if layer:
        return ConnectionTap(
            conn, route, profile, publish, redactor=redactor, limits=options.observe
        )
    return ConnectionTap(
        conn,
        route,
        profile,
        publish,
        catalogue=options.catalogue,
        redactor=redactor,
        cap=options.cap,
        limits=options.observe,
        annotate=options.annotate,
    )
