"""What the views say of a GOLEM answer that came after its tool call returned
(`FrameSeen.late`), and of a tool call whose result is another GOLEM exchange's answer
(`FrameSeen.answer_of`), in words: both decided by the session's tracker as the frames were
decoded (golem_proxy/live/late_answers.py), read here, never derived again.

`show` and the TUI's table put the words after a row's status (`status_note`,
`noted_status`), in the `Tone.OUT_OF_TURN` tone (`Flow.out_of_turn`); `show --json` has them
as ``late`` and ``answer_of``, `query` and `export --format parquet` as the columns ``late``,
``answer_of`` and ``status_note``, `stats` counts them, the TUI's detail says them under the
flow, and `check` warns of each; the live log says them on the exchange's line, in the same
words (`late_words`, `answer_of_words`: it has no rows to name a call or an exchange by).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

from golem_core.contract import Violation, violation
from golem_core.mcp_rules import R_LATE_ANSWER

from ..events import AnswerOf, FrameSeen, ToolCallRef
from .flows import Flow
from .tool_calls import CallKey, attribution_refs, candidates_text, tool_call_name

__all__ = [
    "NOTE_SEPARATOR",
    "answer_of",
    "answer_of_text",
    "answer_of_words",
    "is_late",
    "late_text",
    "late_violation",
    "late_words",
    "misread_words",
    "noted_status",
    "status_note",
]

NOTE_SEPARATOR = " · "
"""Between a row's status and its `status_note`."""


def is_late(flow: Flow) -> bool:
    """Whether a GOLEM flow's answer came after every tool call it belongs to returned."""
    response = flow.response
    return response is not None and response.late


def answer_of(flow: Flow) -> Optional[AnswerOf]:
    """The GOLEM exchange whose answer a tool call's result is, when not its own."""
    response = flow.response
    return None if response is None else response.answer_of


def late_text(flow: Flow, rows: Mapping[CallKey, int] = {}) -> Optional[str]:
    """``late: after its tool call #7 returned`` (each call by its row where ``rows`` knows
    it, else by tool and MCP id); None for an answer in time."""
    if not is_late(flow):
        return None
    return late_words(attribution_refs(flow) or (), rows)


def late_words(refs: Sequence[ToolCallRef], rows: Mapping[CallKey, int] = {}) -> str:
    """``late: after its tool call #7 returned`` for a late answer of the tool calls ``refs``
    (each by its row where ``rows`` knows it, else by tool and MCP id)."""

    def named(ref: ToolCallRef) -> str:
        row = rows.get((ref.conn, ref.index))
        return tool_call_name(ref) if row is None else f"#{row}"

    calls = "tool call" if len(refs) == 1 else "tool calls"
    return f"late: after its {calls} {candidates_text(refs, named, ', ')} returned"


def answer_of_text(
    flow: Flow, number: Optional[int] = None, own: Sequence[int] = ()
) -> Optional[str]:
    """``its result is #8's answer (execute_python), not its own #10's: …`` for a tool call
    whose result is another exchange's answer (``number``: that exchange's row, where known;
    ``own``: the rows of the call's own GOLEM exchanges, where known); None otherwise."""
    found = answer_of(flow)
    if found is None:
        return None
    return answer_of_words(found, number, own)


def answer_of_words(found: AnswerOf, number: Optional[int] = None, own: Sequence[int] = ()) -> str:
    """``its result is #8's answer (execute_python), not its own: …`` for a tool call whose
    result is the answer of the GOLEM exchange ``found`` (by its row ``number`` where known,
    else by route and connection)."""
    where = f"#{number}" if number is not None else f"{found.route} conn {found.conn}"
    whose = found.tool or found.method or "?"
    mine = "its own " + ", ".join(f"#{n}'s" for n in own) if own else "its own"
    return (
        f"its result is {where}'s answer ({whose}), not {mine}: "
        "the server reads answers out of order"
    )


def misread_words(response: FrameSeen, calls: Sequence[ToolCallRef] = ()) -> Optional[str]:
    """What an exchange's line says of its answer ``response`` where no rows name calls or
    exchanges (the live log): `late_words` of ``calls`` (its request's) for a late GOLEM
    answer, `answer_of_words` for a tool call whose result is another exchange's answer;
    None for any other answer."""
    if response.answer_of is not None:
        return answer_of_words(response.answer_of)
    return late_words(calls) if response.late else None


def status_note(
    flow: Flow,
    calls: Mapping[CallKey, int] = {},
    answer_row: Optional[int] = None,
    own: Sequence[int] = (),
) -> Optional[str]:
    """What every view with rows says after a row's status when its answer came out of turn
    (`Flow.out_of_turn`): `answer_of_text` for a tool call whose result is another exchange's
    answer (``answer_row``: that exchange's row, where known; ``own``: the rows of the call's
    own GOLEM exchanges, where shown), else `late_text` for a late GOLEM answer (``calls``:
    the rows of its tool calls, where known); None for an answer in turn."""
    found = answer_of(flow)
    if found is not None:
        return answer_of_words(found, answer_row, own)
    return late_text(flow, calls)


def noted_status(status: str, note: Optional[str]) -> str:
    """``ok · late: after its tool call #7 returned``: a row's ``status`` with its
    `status_note` (``note``) after it, as `show` prints it; ``status`` alone without one."""
    return f"{status}{NOTE_SEPARATOR}{note}" if note else status


def late_violation(refs: Sequence[ToolCallRef], undelivered: str = "") -> Violation:
    """The warning of a GOLEM answer that came after its tool calls (``refs``) had returned:
    published by the GOLEM route's tap as the answer is decoded (tap_frames.py), found
    again by `check` (`McpAuditor`) in a recording made before that. ``undelivered``: why
    the answer never reached the server (`FrameSeen.undelivered`: it had closed its
    connection, ``client gone``), whose connection then holds nothing a later call could
    read: the warning says the answer was late, and no more."""
    calls = candidates_text(refs, tool_call_name, ", ")
    late = f"the plugin's answer came after its tool call {calls} had returned"
    if undelivered:
        text = (
            f"{late}; the answer never reached the server (undelivered: {undelivered}): "
            "its connection holds no answer a later call could read"
        )
    else:
        text = (
            f"{late}: the answer stays on the server's connection; a server that reads "
            "answers in order without matching ids hands it to its next call"
        )
    return violation(R_LATE_ANSWER, text)
