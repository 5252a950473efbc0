"""Contract violations: the typed result of checking a message or an exchange against a
profile's rules. Rules are identified by stable ids so recordings, `check` reports and tests can
refer to them. A rule is a plain value declared next to the check that reports it; nothing is
registered on import. Whoever needs the whole set builds it with `rule_table` from the rules
the profiles and checkers declare (`golem_core.rulebook.RULES` is that table)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional

__all__ = ["Rule", "Severity", "Violation", "rule", "rule_table", "violation"]


class Severity(enum.Enum):
    ERROR = "error"
    """The peer broke the contract: a conforming counterpart would fail or misbehave."""
    WARNING = "warning"
    """Tolerated by the reference implementation but outside the documented contract."""


@dataclass(frozen=True)
class Rule:
    """A documented contract rule."""

    id: str
    severity: Severity
    summary: str
    source: str
    """Where the rule comes from: a spec section, or a catalogue."""


@dataclass(frozen=True)
class Violation:
    """One broken rule. ``path`` is a JSON path into the message (``$`` for the whole frame);
    ``outcome`` is the profile's own name for it where the profile has one (the Scrybe
    contract's ``InvalidEnvelope(WrongVersion)``, for instance)."""

    rule: str
    message: str
    path: str = "$"
    severity: Severity = Severity.ERROR
    outcome: Optional[str] = None

    def to_json(self) -> dict[str, str]:
        data = {"rule": self.rule, "message": self.message, "path": self.path}
        data["severity"] = self.severity.value
        if self.outcome is not None:
            data["outcome"] = self.outcome
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, str]) -> Violation:
        return cls(
            data["rule"],
            data["message"],
            data.get("path", "$"),
            Severity(data.get("severity", "error")),
            data.get("outcome"),
        )


def rule(rule_id: str, severity: Severity, summary: str, source: str) -> Rule:
    """The same as ``Rule(...)``: a plain value, nothing is registered."""
    return Rule(rule_id, severity, summary, source)


def rule_table(*groups: Iterable[Rule]) -> Mapping[str, Rule]:
    """A read-only mapping rule id → rule over every rule of ``groups``, in order.

    Raises ValueError when two different rules share an id (the same rule listed twice is
    fine: a profile's tuple may reuse a shared rule)."""
    table: dict[str, Rule] = {}
    for group in groups:
        for item in group:
            known = table.setdefault(item.id, item)
            if known != item:
                raise ValueError(f"duplicate rule id {item.id!r}")
    return MappingProxyType(table)


def violation(of: Rule, message: str, path: str = "$", outcome: Optional[str] = None) -> Violation:
    """Build a violation of ``of``, with the rule's severity."""
    return Violation(of.id, message, path, of.severity, outcome)
