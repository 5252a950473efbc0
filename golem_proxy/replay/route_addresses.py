"""A recorded session's GOLEM route addresses, read in tool results as the addresses of the
same routes now: what `mcp-verify` compares with, as a recorded GUID reads as the live one
that stands for it (`GuidMap`).

`golem-proxy mcp` starts its GOLEM routes on free loopback ports and points the server at
them (``GOLEM_RHINO_HOST``, ``GOLEM_RHINO_PORT``, ``GOLEM_GH_PORT``); the recording's header
keeps where each route listened (``routes[].listen``). A server that names the address it
dialled in a result (GOLEM-3DMCP, while the plugin is down: ``Cannot connect to Rhino plugin
at 127.0.0.1:40429: …``) said the recording's port then and says the stand-in's now, another
in every run. A recorded text that differs from the live one matches when it equals it with
each recorded route address swapped for the address of the same route now (GUIDs too).

Only a whole ``HOST:PORT`` as the recording wrote it (or ``[V6]:PORT``) is swapped: not one
followed by a digit (``…:404291``) or following a letter, digit, dot, hyphen or underscore
(``10.127.0.0.1:40429``). A bare port (``port 40429``) is not: a number alone may be a
count, a size or an id, and reading it as a port could hide a real difference. A text equal
as recorded still matches. The swap is one to one by route: a text naming the main route's
address matches one naming the main route's address now, never the Grasshopper route's nor
any other port.

The stand-in listens on a free port rather than the recorded one: that port was free when
recorded and may be taken now (by anything on the machine, or another run of the same
recording beside this one), so listening there could only be tried, with this mapping
needed anyway when it failed, and which of the two decided a comparison would depend on the
machine; the mapping decides the same way every run, covers ``--target`` (the server pointed
at a live plugin's address) as well, and the report says where it applied.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Optional

from ..net.addresses import Address, parse_address
from ..recording.format import RouteInfo

__all__ = ["RouteAddress", "RouteAddresses"]


@dataclass(frozen=True)
class RouteAddress:
    """Where a route listened when recorded, and where the server was pointed for it now."""

    route: str
    recorded: Address
    live: Address

    def to_json(self) -> dict[str, str]:
        return {"route": self.route, "recorded": str(self.recorded), "live": str(self.live)}


class RouteAddresses:
    """Recorded route addresses and the live ones that stand for them, and the routes whose
    address made a text equal since `take_applied` was last asked."""

    def __init__(self, pairs: Iterable[RouteAddress] = ()) -> None:
        self.pairs = tuple(pair for pair in pairs if _swappable(pair))
        swaps: dict[str, Optional[tuple[str, str]]] = {}
        for pair in self.pairs:
            for recorded, live in _forms(pair.recorded, pair.live):
                known = swaps.get(recorded, (live, pair.route))
                # Two routes recorded at one address: which one a text names cannot be told.
                swaps[recorded] = (live, pair.route) if known == (live, pair.route) else None
        self._swaps = {form: swap for form, swap in swaps.items() if swap is not None}
        self._pattern: Optional[re.Pattern[str]] = None
        if self._swaps:
            forms = "|".join(re.escape(form) for form in sorted(self._swaps, key=len, reverse=True))
            self._pattern = re.compile(rf"(?<![\w.\-])(?:{forms})(?!\d)")
        self._applied: dict[str, None] = {}

    @classmethod
    def between(cls, recorded: Iterable[RouteInfo], live: Mapping[str, Address]) -> RouteAddresses:
        """The recording header's routes paired by name with where the server was pointed
        now (route name → address); a route that listened on no ``HOST:PORT`` (``stdio``,
        ``unix:PATH``) or has no address now is left out."""
        pairs: list[RouteAddress] = []
        for route in recorded:
            now = live.get(route.name)
            if now is None:
                continue
            try:
                address = parse_address(route.listen)
            except ValueError:
                continue
            pairs.append(RouteAddress(route.name, address, now))
        return cls(pairs)

    def __len__(self) -> int:
        return len(self._swaps)

    def to_live(self, text: str) -> tuple[str, tuple[str, ...]]:
        """``text`` with each recorded route address in it the route's address now, and the
        routes it named (empty when it named none: ``text`` as it was)."""
        if self._pattern is None:
            return text, ()
        routes: dict[str, None] = {}

        def swap(match: re.Match[str]) -> str:
            live, route = self._swaps[match.group()]
            routes[route] = None
            return live

        return self._pattern.sub(swap, text), tuple(routes)

    def note(self, routes: Iterable[str]) -> None:
        """Say that ``routes``' addresses made a recorded text equal to the live one."""
        self._applied.update(dict.fromkeys(routes))

    def take_applied(self) -> list[str]:
        """The routes `note` was told of since the last call, in the order told."""
        applied = list(self._applied)
        self._applied.clear()
        return applied

    def to_json(self) -> list[dict[str, str]]:
        return [pair.to_json() for pair in self.pairs]


def _swappable(pair: RouteAddress) -> bool:
    """Whether ``pair`` is two TCP addresses, told apart, the recorded one with a port (not
    a header's ``:0``, written before its route was bound)."""
    recorded, live = pair.recorded, pair.live
    return not recorded.is_unix and not live.is_unix and recorded.port > 0 and recorded != live


def _forms(recorded: Address, live: Address) -> list[tuple[str, str]]:
    """The ways a text writes ``recorded`` (``HOST:PORT``, as an f-string would, and
    ``[V6]:PORT``), each with ``live`` written the same way."""
    forms = [(f"{recorded.host}:{recorded.port}", f"{live.host}:{live.port}")]
    if ":" in recorded.host:
        forms.append((str(recorded), str(live)))
    return forms
