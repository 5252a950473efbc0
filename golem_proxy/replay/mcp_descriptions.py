"""What a server says of itself and of its tools (``initialize``, ``tools/list`` and the other
listings), compared between a recording and a run of the same client against a new build, as
`mcp-verify` compares them (`mcp_answers`, `mcp_verify.judge`): for the ``golem_mcp_session``
fixture, whose client is the test's own. A build whose tool lost its docstring differs though
every tool call matches: the model reads other tools.

The n-th request of a method is compared with the n-th of the same method in the other
session. A request one session made and the other did not is not compared: the test's client
decides what it asks, the build only what it answers. For the same reason, what an answer
echoes of a request the two asked otherwise is told, not failed (`asked_otherwise`): a test
whose `mcp` SDK now asks a newer protocol version in its ``initialize`` gets that version from
the same build.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .diffing import Comparator
from .mcp_answers import LISTINGS, asked_otherwise
from .mcp_script import ClientStep, McpScript
from .mcp_verify import McpCheck, judge

__all__ = ["COMPARED", "compare_descriptions", "descriptions_text"]

COMPARED = frozenset({"initialize", *LISTINGS})
"""The requests whose answers say what the model is told, compared here."""


def compare_descriptions(
    recorded: McpScript, live: McpScript, comparator: Comparator
) -> list[McpCheck]:
    """A check for each `COMPARED` request both sessions made and answered, in recorded order."""
    made: dict[str, list[ClientStep]] = defaultdict(list)
    for step in live.steps:
        if step.is_request and step.method in COMPARED and step.answer is not None:
            made[step.method].append(step)
    seen: dict[str, int] = defaultdict(int)
    checks: list[McpCheck] = []
    for step in recorded.steps:
        method = step.method
        if not step.is_request or method not in COMPARED or step.answer is None:
            continue
        nth = seen[method]
        seen[method] += 1
        if nth >= len(made[method]):
            continue
        live_step = made[method][nth]
        answer = live_step.answer
        assert answer is not None and method is not None
        check = McpCheck(None, None, method, step.id)
        told = asked_otherwise(method, step.params, live_step.params)
        judge(check, step, answer, comparator, also_noted=told)
        checks.append(check)
    return checks


def descriptions_text(path: Path, checks: list[McpCheck]) -> str:
    """The failure's lines for the checks that differ; empty when none does."""
    failed = [check for check in checks if not check.ok]
    if not failed:
        return ""
    methods = ", ".join(dict.fromkeys(check.name for check in failed))
    lines = [f"golem_mcp_session {path}: what the server tells the model differs: {methods}"]
    lines += [f"  {check.name}: {check.first_difference()}" for check in failed]
    return "\n".join(lines)
