"""Every contract rule this version documents, by id: the rules of each profile, of pairing
and of the method catalogue checks. Built from the tuples where the rules are declared (next to
the checks that report them), so a rule cannot be known to the checks and missing here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import pairing
from .catalogue import (
    R_MISSING_REQUIRED,
    R_RENAMED_PARAM,
    R_SHAPE_MISMATCH,
    R_UNKNOWN_METHOD,
    R_UNREAD_PARAM,
)
from .contract import Rule, rule_table
from .mcp_rules import MCP_RULES
from .profiles import PROFILES, Profile

__all__ = ["CATALOGUE_RULES", "RULES", "all_rules"]

CATALOGUE_RULES = (
    R_UNKNOWN_METHOD,
    R_UNREAD_PARAM,
    R_MISSING_REQUIRED,
    R_RENAMED_PARAM,
    R_SHAPE_MISMATCH,
)


def all_rules(profiles: Iterable[Profile] = ()) -> Mapping[str, Rule]:
    """A read-only mapping rule id → rule over ``profiles`` (every known profile when none
    is given), pairing, the catalogue checks and the MCP layer's rules, in that order.
    Raises ValueError when two different rules share an id."""
    chosen = tuple(profiles) or tuple(PROFILES.values())
    return rule_table(
        *(profile.rules for profile in chosen), pairing.RULES, CATALOGUE_RULES, MCP_RULES
    )


RULES = all_rules()
"""Every rule, built once at import (read-only)."""
