"""Contract violations: the typed result of checking a message or an exchange against a
profile's rules. Rules are identified by stable ids so recordings, `check` reports and tests can
refer to them; `RULES` documents every one (the wire contract doc is generated from the same
table's wording)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

__all__ = ["RULES", "Rule", "Severity", "Violation", "rule", "violation"]


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


_RULES: dict[str, Rule] = {}
RULES: Mapping[str, Rule] = _RULES


def rule(rule_id: str, severity: Severity, summary: str, source: str) -> Rule:
    """Register a rule (at import time of the module that checks it) and return it."""
    if rule_id in _RULES:
        raise ValueError(f"duplicate rule id {rule_id!r}")
    registered = Rule(rule_id, severity, summary, source)
    _RULES[rule_id] = registered
    return registered


def violation(of: Rule, message: str, path: str = "$", outcome: Optional[str] = None) -> Violation:
    """Build a violation of a registered rule, with the rule's severity."""
    return Violation(of.id, message, path, of.severity, outcome)
