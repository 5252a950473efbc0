"""What the server told the model in two ``golem-proxy mcp`` recordings, compared for
``diff A B``: its ``initialize`` answer (serverInfo, capabilities, instructions, the protocol
version it chose) and its listings (``tools/list``: each tool's name, description, input and
output schema; the prompts and resources), as `mcp-verify` compares a build's answers with the
recorded ones (`mcp_answers`): a listing by name, not position, a tool added or gone a
difference of its own, GUID-aware, under ``--ignore METHOD:PATH`` and ``--float-tolerance``.

Two sessions whose tool calls match may still differ here: a build that dropped a tool,
renamed a parameter in its ``inputSchema`` or reworded a description the model reads.

The n-th request of a method in A is compared with the n-th of the same method in B, as the
``golem_mcp_session`` fixture pairs them (`mcp_descriptions`), on the MCP hop `mcp-verify`
plays (the first recorded). Unlike the fixture, whose client is the test's own, a request
only one recording made is a difference here (``only in a.jsonl``): the model in the other
session was not told that. What is only told by `mcp-verify` (the server's own version,
`NOTED`; what answers a request the two asked otherwise, `asked_otherwise`) is told here, no
difference. An answer a recording kept only as its size and SHA-256 (a frame over
``--observe-frame-limit``) is compared by those (`digest_difference`). A path the ``--redact``
rules of either recording hid is no difference: each answer goes through the other
recording's rules first, as `mcp-verify` puts a live answer through the recording's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.profiles import get_profile

from .diffing import Comparator, Difference
from .live_redaction import LiveRedaction
from .mcp_answers import asked_otherwise, compare_answer, digest_difference
from .mcp_descriptions import COMPARED
from .mcp_script import ClientStep, McpScript
from .mcp_verify import McpCheck, redacted_answer

__all__ = ["ServerAnswers", "diff_server_answers"]

StepPair = tuple[Optional[ClientStep], Optional[ClientStep]]


@dataclass
class ServerAnswers:
    """Each `COMPARED` request of A paired with its like in B, and its check."""

    checks: list[McpCheck]

    @property
    def different(self) -> list[McpCheck]:
        return [check for check in self.checks if not check.ok]

    @property
    def told(self) -> list[McpCheck]:
        """The checks that match but have something to tell: a noted difference, or why the
        answers were not compared."""
        return [
            check
            for check in self.checks
            if check.ok and (check.notes or check.not_compared is not None)
        ]

    def to_json(self) -> dict[str, Any]:
        def entry(check: McpCheck) -> dict[str, Any]:
            data = check.to_json()
            for key in ("number", "tool", "id", "ok"):
                data.pop(key, None)
            return data

        return {
            "compared": len(self.checks),
            "differing": [entry(check) for check in self.different],
            "told": [entry(check) for check in self.told],
        }


def diff_server_answers(
    a: McpScript,
    b: McpScript,
    comparator: Comparator,
    names: tuple[str, str],
    redact: tuple[Sequence[str], Sequence[str]] = ((), ()),
) -> Optional[ServerAnswers]:
    """The `COMPARED` requests of two recordings' MCP hops paired and their answers compared,
    in words naming the recordings ``names``; ``redact``: each recording's ``--redact``
    rules. None when neither recording made one."""
    pairs = _paired(a, b)
    if not pairs:
        return None
    others = (_redaction(redact[1], redact[0]), _redaction(redact[0], redact[1]))
    checks = []
    for was, now in pairs:
        step = was if was is not None else now
        assert step is not None and step.method is not None
        check = McpCheck(None, None, step.method, step.id)
        if was is None or now is None:
            check.problem = f"only in {names[0] if now is None else names[1]}"
        else:
            _judge(check, (was, now), comparator, names, others)
        checks.append(check)
    return ServerAnswers(checks)


def _paired(a: McpScript, b: McpScript) -> list[StepPair]:
    """A's requests in its order, each with the request of B of the same method and rank;
    then B's requests A has no like for, in B's order."""
    in_b: dict[str, list[ClientStep]] = defaultdict(list)
    for step in _compared(b):
        assert step.method is not None
        in_b[step.method].append(step)
    seen: dict[str, int] = defaultdict(int)
    pairs: list[StepPair] = []
    for step in _compared(a):
        assert step.method is not None
        nth = seen[step.method]
        seen[step.method] += 1
        mates = in_b[step.method]
        pairs.append((step, mates[nth] if nth < len(mates) else None))
    for method, steps in in_b.items():
        pairs += [(None, step) for step in steps[seen[method] :]]
    return pairs


def _compared(script: McpScript) -> list[ClientStep]:
    return [step for step in script.steps if step.is_request and step.method in COMPARED]


def _redaction(rules: Sequence[str], own: Sequence[str]) -> Optional[LiveRedaction]:
    """The rules of the other recording, to put an answer through; None when they hid no
    more than the answer's own recording's already did."""
    if not rules or set(rules) == set(own):
        return None
    return LiveRedaction(get_profile("mcp"), rules)


def _judge(
    check: McpCheck,
    steps: tuple[ClientStep, ClientStep],
    comparator: Comparator,
    names: tuple[str, str],
    others: tuple[Optional[LiveRedaction], Optional[LiveRedaction]],
) -> None:
    """Compare the answers of a pair both recordings made, or say on ``check`` why not."""
    was, now = steps
    method = check.method or "?"
    cancelled = next((i for i, s in enumerate(steps) if _cancelled(s)), None)
    elided = next((i for i, s in enumerate(steps) if s.answer_elided), None)
    if cancelled is not None:
        check.not_compared = f"cancelled in {names[cancelled]} while it waited"
    elif elided is not None:
        check.not_compared = f"its answer in {names[elided]} is too large to parse"
    elif was.answer is not None and now.answer is not None:
        recorded = _through(others[0], was.answer, method)
        live = _through(others[1], now.answer, method)
        told = asked_otherwise(method, was.params, now.params)
        check.differences, check.notes = compare_answer(
            recorded, live, comparator, method, also_noted=told
        )
    elif _answered(was) and _answered(now):
        found = _digests_differ(was, now)
        check.differences = [] if found is None else [found]
    elif was.answer_unobserved or now.answer_unobserved:
        side = 0 if was.answer_unobserved else 1
        check.not_compared = f"its answer in {names[side]} fell in bytes not observed"
    elif _answered(was) or _answered(now):
        answered, unanswered = names if _answered(was) else names[::-1]
        check.problem = f"answered in {answered}; unanswered in {unanswered}"
    else:
        check.not_compared = "unanswered in both"


def _through(
    redaction: Optional[LiveRedaction], answer: dict[str, Any], method: str
) -> dict[str, Any]:
    return redacted_answer(redaction, answer, method) if redaction else answer


def _answered(step: ClientStep) -> bool:
    """Whether the recording holds an answer to ``step``: whole, or its size and digest."""
    return step.answer_line is not None or step.answer_digest is not None


def _cancelled(step: ClientStep) -> bool:
    """Cancelled while it waited and answered with no result (the cancellation's error)."""
    return step.cancelled and (step.answer is None or "result" not in step.answer)


def _digests_differ(was: ClientStep, now: ClientStep) -> Optional[Difference]:
    """None when the two answers, one or both kept only as size and digest, are the same
    frame; else the difference, at ``size/sha256``."""
    if was.answer_digest is not None and now.answer_digest is not None:
        if was.answer_digest == now.answer_digest:
            return None
        return Difference("size/sha256", _kept(was.answer_digest), _kept(now.answer_digest))
    if was.answer_digest is not None:
        return digest_difference(was.answer_digest, now.answer_line or b"")
    assert now.answer_digest is not None
    found = digest_difference(now.answer_digest, was.answer_line or b"")
    return None if found is None else Difference(found.path, found.live, found.recorded)


def _kept(digest: tuple[int, str]) -> str:
    size, sha = digest
    return f"{size} B, {sha}"
