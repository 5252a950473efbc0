"""Where the TUI sends a flow's request again (`r`, `E`) and where `Y`'s command line points:
the listen address of the flow's own route in a live proxy run by another process, so the copy
goes through the proxy and is recorded with the others; else one address for every flow (the
plugin given by ``tui FILE --target``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from ..net.addresses import Address

__all__ = ["ResendTargets"]


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
