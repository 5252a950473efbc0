"""The violations a recording made before `McpAuditor` (mcp_audit.py) told a placeholder from
a tool holds, and every view drops: a ``tools/call`` whose tool's name ``--redact`` hid names
no tool, yet the session's own rules looked the placeholder up (``no tool '«redacted»'``) and
held the call's arguments to the schema of none (``'name' is a required property``). The
rows (`FlowTracker`, for ``show``'s ⚠ column, ``stats``, the TUI) and ``check`` drop them by
`recorded_falsely` alike."""

from __future__ import annotations

from golem_core.mcp_rules import (
    R_ARGUMENTS,
    R_ARGUMENTS_UNCHECKED,
    R_UNDECLARED_ARGUMENT,
    R_UNKNOWN_TOOL,
)
from golem_core.messages import Request
from golem_core.profiles.mcp import TOOLS_CALL

from ..placeholder import REDACTED
from .flow import Flow

__all__ = ["SCHEMA_RULES", "names_placeholder", "recorded_falsely"]

SCHEMA_RULES = frozenset(
    rule.id for rule in (R_ARGUMENTS, R_ARGUMENTS_UNCHECKED, R_UNDECLARED_ARGUMENT, R_UNKNOWN_TOOL)
)
"""The rules that look a call's tool up in the listing, and hold its arguments to its
schema."""


def names_placeholder(flow: Flow) -> bool:
    """Whether ``flow`` is a ``tools/call`` whose tool's name was redacted."""
    message = flow.request.message if flow.request is not None else None
    if isinstance(message, Request) and message.method == TOOLS_CALL:
        name = message.params.get("name") if isinstance(message.params, dict) else None
        return isinstance(name, str) and REDACTED in name
    return False


def recorded_falsely(flow: Flow, rule: str) -> bool:
    """Whether a violation of ``rule`` recorded on ``flow`` is one of those a recording made
    before a placeholder was told from a tool holds (`names_placeholder`, `SCHEMA_RULES`)."""
    return rule in SCHEMA_RULES and names_placeholder(flow)
