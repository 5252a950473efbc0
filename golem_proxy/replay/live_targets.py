"""The live plugins `mcp-verify --target` points the server at, and whether they are still
there: a plugin that dies in the middle of a replay fails every call after it, and those
failures are the plugin's, not the server build's.

The server's GOLEM connections go straight to the plugin, unseen, so the plugin is asked
the one thing that tells: whether it still accepts a connection (connected to and closed at
once; a plugin that serves one client at a time takes it from its backlog later and reads
its end). It is asked before the server starts, and after a check that fails when the one
before it matched (the first of a run of failures), never after one that matched, so a
replay that goes well touches the plugin no more than before. Only a refusal says the plugin
went away: the real plugin listens with a backlog of 5 and serves one client at a time, so
the probes of a long run of failures would wait in its backlog, fill it, and the next one
would go unanswered though the plugin is there; and a probe per failure would fill it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ..net.addresses import Address
from ..net.listeners import probe
from .mcp_verify import McpCheck

__all__ = ["PROBE_TIMEOUT", "LiveTargets", "TargetLost"]

PROBE_TIMEOUT = 1.0
"""Seconds a live plugin has to accept the probe's connection."""

PROBES_AT_MOST = 3
"""Probes a run makes after failed checks, at most (a refused one ends the run): each one
accepted may wait in the backlog of a plugin that serves one client at a time (the real
one: a backlog of 5) until the server's connection ends, a full backlog would keep the
server's own reconnect out, and one not answered costs `PROBE_TIMEOUT`."""


@dataclass(frozen=True)
class TargetLost:
    """A live plugin that went away during a replay: where, why, at which check."""

    address: Address
    option: str
    """The option that named it (``--target``, ``--gh-target``)."""
    reason: str
    """Why the probe failed (``connection refused``, …)."""
    number: Optional[int]
    """The failed check's tool call flow number (None for another request)."""
    name: str
    """The failed check's tool (or method)."""
    not_played: int
    """The tool calls after it, not sent."""

    @property
    def call(self) -> str:
        return f"#{self.number} {self.name}" if self.number is not None else self.name

    def to_json(self) -> dict[str, Any]:
        return {
            "address": str(self.address),
            "option": self.option,
            "reason": self.reason,
            "number": self.number,
            "tool": self.name,
            "not_played": self.not_played,
        }


class LiveTargets:
    """The live plugins given (option → address), and the one that went away, once one did."""

    def __init__(self, targets: Mapping[str, Optional[Address]], tool_calls: int) -> None:
        self.targets = {option: address for option, address in targets.items() if address}
        self.tool_calls = tool_calls
        self.lost: Optional[TargetLost] = None
        self._tool_checks = 0
        self._failing = False
        """The last check failed: the plugin was asked then, and is not asked again until a
        check matches."""
        self._probes = 0
        """Probes made after failed checks (`PROBES_AT_MOST`)."""

    async def unreachable(self) -> Optional[tuple[str, Address, str]]:
        """The first live plugin that accepts no connection now: its option, address and
        why; None when each accepts (or none was given)."""
        for option, address in self.targets.items():
            reason = await probe(address, PROBE_TIMEOUT)
            if reason is not None:
                return option, address, reason
        return None

    async def _refusing(self) -> Optional[tuple[str, Address, str]]:
        """The first live plugin that refuses a connection now (or fails it otherwise): its
        option, address and why; None when each accepts, or does not answer in
        `PROBE_TIMEOUT` (a full backlog is no plugin gone)."""
        self._probes += 1
        for option, address in self.targets.items():
            reason = await probe(address, PROBE_TIMEOUT, silence_fails=False)
            if reason is not None:
                return option, address, reason
        return None

    async def after_check(self, check: McpCheck) -> bool:
        """For `play`'s ``after_check``: True (stop the replay) when ``check`` failed, the
        one before it did not, and a live plugin refuses a connection. That check is then not
        the server's difference: it is not compared, saying why, and `lost` says where the
        plugin went."""
        self._tool_checks += check.tool is not None
        failing, self._failing = self._failing, not check.ok
        if check.ok or failing or not self.targets or self._probes >= PROBES_AT_MOST:
            return False
        found = await self._refusing()
        if found is None:
            return False
        option, address, reason = found
        self.lost = TargetLost(
            address,
            option,
            reason,
            check.number,
            check.name,
            self.tool_calls - self._tool_checks,
        )
        check.differences, check.problem = [], None
        check.not_compared = f"the live plugin at {address} ({option}) went away: {reason}"
        return True
