"""What `mcp-verify`'s stand-in played of the recording's marks, said on the calls they
concern: an answer the recording marks late (`late_hold`) and a connection the proxy closed
for ``--idle-timeout`` (`OutageStandIn.idle_closed`).

Played as recorded, it is told on the call (`McpCheck.played`): the same build matches, and
the row says why its error is the recorded one. Where the stand-in could not play it as it
was (the build's call was still waiting when the plugin's recorded time had passed, the
build kept no connection for the proxy to have closed), it is the call's `McpCheck.cause`,
said ahead of the difference it may explain; the call still fails: the build behaves
otherwise than the recorded one did there, and only the user can say whether that is meant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .late_hold import (
    RELEASED_BEHIND,
    RELEASED_BY_CALL,
    RELEASED_BY_LATENCY,
    HeldAnswer,
    LateHold,
)
from .mcp_verify import McpCheck
from .outage_standin import AppliedIdleClose

__all__ = ["explain", "idle_json", "late_json", "played_lines"]


def explain(
    checks: Sequence[McpCheck],
    late: LateHold,
    idle: Sequence[AppliedIdleClose],
    numbers: Mapping[int, int],
) -> None:
    """Give each tool check what the stand-in played during its call (``numbers``: a call's
    request frame index to its number, as ``idle`` names calls by index)."""
    by_number = {check.number: check for check in checks if check.number is not None}
    for check in by_number.values():
        for held in late.of_call(check.number):
            _say(check, *_late_words(held))
        read = late.read_late.get(check.number) if check.number is not None else None
        if read is not None and check.number is not None:
            before = [held for held in late.held if held.late.call.number < check.number]
            _say(check, *_read_words(read, before))
    for item in idle:
        called = by_number.get(numbers.get(item.index, -1))
        if called is not None:
            _say(called, *_idle_words(item))


def _say(check: McpCheck, words: str, played: bool) -> None:
    """Note ``words`` on ``check``: played as recorded, or its cause where it differs (told
    as played where it matched all the same)."""
    if played or check.ok:
        check.played.append(words)
    elif check.cause is None:
        check.cause = words
    else:
        check.cause += f"; {words}"


def _late_words(held: HeldAnswer) -> tuple[str, bool]:
    said = held.late.words()
    if held.released_by == RELEASED_BY_CALL:
        return f"{said}; the stand-in sent it once the call had returned, as recorded", True
    if held.released_by == RELEASED_BY_LATENCY:
        waited = f" {held.waited:.2f} s after it was sent" if held.waited is not None else ""
        return (
            f"{said}; this build's call was still waiting{waited}, longer than the recorded "
            "call took and the plugin's time on top: the stand-in handed it then the answer "
            "the recorded call had given up on",
            False,
        )
    if held.released_by == RELEASED_BEHIND:
        return (
            f"{said}, only as the call read #{held.late.behind}'s answer queued before it; "
            "the stand-in sent it as the plugin had, behind that one",
            True,
        )
    return f"{said}; the stand-in held it, and the run ended first", False


def _read_words(read: tuple[int, str], before: Sequence[HeldAnswer]) -> tuple[str, bool]:
    """A call whose recorded result is another exchange's answer, read out of order after a
    late one (``answer_of``): played as recorded where every late answer served before it
    (``before``: those of the calls before, but those late only behind another) went once
    its call had returned."""
    row, tool = read
    said = f"its recorded result is #{row}'s answer ({tool}), read out of order after a late one"
    before = [held for held in before if held.released_by != RELEASED_BEHIND]
    if before and all(held.released_by == RELEASED_BY_CALL for held in before):
        return f"{said}; the stand-in sent the late answers before it late, as recorded", True
    if not before:
        return f"{said}; the stand-in sent no late answer this run", False
    took = ", ".join(
        dict.fromkeys(
            f"#{held.late.call.number} {held.late.call.tool}"
            for held in before
            if held.released_by != RELEASED_BY_CALL
        )
    )
    return f"{said}; this run {took} was handed its late answer in time", False


def _idle_words(item: AppliedIdleClose) -> tuple[str, bool]:
    said = (
        f"the proxy had closed the server's idle GOLEM connection on {item.route} before "
        "this call (--idle-timeout)"
    )
    if item.closed:
        return f"{said}; the stand-in closed it there too", True
    return f"{said}; this build had none open there for the stand-in to close", False


def late_json(late: LateHold) -> list[dict[str, Any]]:
    """The late answers the stand-in served, and what released each (``call``: its call
    had returned; ``latency``: its call was still waiting when it had taken as long as the
    recorded one and the plugin's time on top; ``behind``: late only behind the answer its
    call read, ``behind`` naming that one's row, and never held; null: the run ended)."""
    return [
        {
            "number": held.late.call.number,
            "tool": held.late.call.tool,
            "row": held.late.row,
            "method": held.late.method,
            "latency": round(held.late.latency, 6),
            "released_by": held.released_by or None,
            "behind": held.late.behind,
        }
        for held in late.held
    ]


def idle_json(
    idle: Sequence[AppliedIdleClose], numbers: Mapping[int, int], tools: Mapping[int, str]
) -> list[dict[str, Any]]:
    """The calls before which the stand-in closed a route's connections, as the proxy had."""
    return [
        {
            "number": numbers.get(item.index),
            "tool": tools.get(item.index),
            "route": item.route,
            "recorded": item.recorded,
            "closed": item.closed,
        }
        for item in idle
    ]


def played_lines(played: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The lines under `mcp-verify`'s table saying what was played (``played``: `late_json`
    as ``late``, `idle_json` as ``idle_close``; no line for nothing)."""
    late, idle = played.get("late"), played.get("idle_close")
    said: list[str] = []
    if idle:
        said.append(_idle_line(idle))
    if late:
        said.append(_late_line(late))
    return said


def _idle_line(idle: Sequence[Mapping[str, Any]]) -> str:
    calls = ", ".join(dict.fromkeys(_call(item) for item in idle))
    said = (
        f"the proxy closed an idle GOLEM connection (--idle-timeout) before {len(idle)} "
        f"recorded tool call(s) ({calls}): "
    )
    closed = sum(1 for item in idle if item["closed"])
    if closed == len(idle):
        return f"{said}the stand-in closed the server's there too"
    if not closed:
        return f"{said}this build had none open there for the stand-in to close"
    return (
        f"{said}the stand-in closed the server's before {closed} of them; this build had "
        "none open before the others"
    )


def _late_line(late: Sequence[Mapping[str, Any]]) -> str:
    own = [item for item in late if item["released_by"] != RELEASED_BEHIND]
    behind = [item for item in late if item["released_by"] == RELEASED_BEHIND]
    said = []
    if own:
        calls = ", ".join(dict.fromkeys(_call(item) for item in own))
        on_time = sum(1 for item in own if item["released_by"] == RELEASED_BY_CALL)
        said.append(
            f"{len(own)} recorded GOLEM answer(s) came late, after their call returned "
            f"({calls}): the stand-in sent {on_time} of them once their call had returned"
            + ("" if on_time == len(own) else " (the rows say why not the others)")
        )
    if behind:
        calls = ", ".join(dict.fromkeys(_call(item) for item in behind))
        said.append(
            f"{len(behind)} more came after their call returned only as the call read the "
            f"answer queued before its own ({calls}): the stand-in sent them as the plugin had"
        )
    return "; ".join(said)


def _call(item: Mapping[str, Any]) -> str:
    number = item.get("number")
    return f"#{number} {item.get('tool')}" if number is not None else str(item.get("tool"))
