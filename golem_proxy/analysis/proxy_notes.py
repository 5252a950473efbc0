"""What the proxy itself did to a row's frames (``--fault``, ``--intercept``), in the words every
view puts after the row's status: ``TIMEOUT (--fault error)``, ``ok (answered by hand)``,
``unanswered (withheld: --fault drop)``, ``ok (+31.0 s --fault delay)``.

The decision is the proxy's, made where it forwarded the frame and recorded as its step events
(`FaultInjected`, `InterceptStep`), which the flow tracker places on the row of the frame they
acted on (`Flow.faults`): read here, never guessed from the frames. A status that says it
already (``unanswered (truncated by --fault truncate)``, ``undelivered (withheld: --fault
drop)``) gets no second word of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Optional, Union

from golem_core.contract import Violation
from golem_core.mcp_rules import R_LATE_ANSWER

from ..events import Direction, FaultInjected, InterceptKind, InterceptStep

__all__ = [
    "ProxyStep",
    "acted",
    "after_return",
    "changes_answer",
    "delay_seconds",
    "held_of",
    "proxy_words",
    "step_names",
    "under_words",
    "violation_by_proxy",
]

ProxyStep = Union[FaultInjected, InterceptStep]

_CHANGES_BYTES = frozenset(("corrupt", "truncate", InterceptKind.EDITED.label))
"""Steps after which the frame's bytes are the proxy's, not its sender's."""
_MAKES_ANSWER = frozenset(("error", InterceptKind.ANSWERED.label))
"""Steps that withheld a request and answered it in the receiver's place."""
_HOLDS = frozenset(
    (
        "delay",
        InterceptKind.HELD.label,
        InterceptKind.ACCEPTED.label,
        InterceptKind.RELEASED.label,
    )
)
"""Steps that only held the frame: its timing is the proxy's."""


def acted(step: ProxyStep) -> bool:
    """Whether ``step`` changed what crossed: not a fault that was not applied (an error
    fault on a frame without an id: the receiver answered it, live/faults.py)."""
    return not (isinstance(step, FaultInjected) and step.fault == "error" and not step.withheld)


def changes_answer(step: ProxyStep) -> bool:
    """Whether ``step`` made or changed the answer its row's request got: an answer made,
    withheld, cut, corrupted or edited, or a request changed or withheld before its receiver
    answered it; not a step that only held a frame (a delay, a slice, an interception
    accepted or released as it came), after which the answer is its receiver's still. An
    answer withheld that was one of several requests' with its id (`ProxyStep.among`) is
    placed on each, and changed at most one of them: it makes none the proxy's, so that a
    failure of the peer's among them is not left out of the errors."""
    if _shared_answer(step):
        return False
    return acted(step) and step.fault not in _HOLDS and step.fault != "slice"


def _shared_answer(step: ProxyStep) -> bool:
    """Whether ``step`` acted on an answer whose id several requests waited with
    (`ProxyStep.among`): which of them it was for, the wire does not say."""
    return step.among > 1 and step.direction is Direction.S2C


def delay_seconds(steps: Iterable[ProxyStep]) -> float:
    """How long the proxy's ``--fault delay`` held the row's frames, in seconds, as each
    delay's event carries it (`FaultInjected.held_s`)."""
    return sum(held_of(step) or 0.0 for step in steps)


def held_of(step: ProxyStep) -> Optional[float]:
    """The seconds a ``--fault delay`` held its frame, as its event carries it
    (`FaultInjected.held_s`); None for another step, or a delay that says no amount."""
    if isinstance(step, FaultInjected) and step.fault == "delay":
        return step.held_s
    return None


def _seconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _words(step: ProxyStep) -> Optional[str]:
    """The words of one step; None when it says nothing (a fault not applied)."""
    if isinstance(step, InterceptStep):
        kind = step.kind
        if kind is InterceptKind.HELD:
            return "held by hand"
        if kind is InterceptKind.ACCEPTED:
            return "held, accepted by hand"
        if kind is InterceptKind.EDITED:
            return "edited by hand"
        if kind is InterceptKind.ANSWERED:
            return "answered by hand"
        if kind is InterceptKind.RELEASED:
            return "held, released at its timeout"
        if kind is InterceptKind.LOST:
            return "lost while held"
        return f"withheld: {kind.label}"  # dropped
    fault = step.fault
    if fault == "error":
        return "--fault error" if step.withheld else None
    if fault in ("drop", "reset") and step.withheld:
        if _shared_answer(step):
            # Its id was pipelined more than once: said on each row it may have answered.
            return (
                f"withheld: --fault {fault}, an answer of id {step.message_id} that"
                f" {step.among} requests waited for: this one's or another's"
            )
        return f"withheld: --fault {fault}"
    return f"--fault {fault}"


def proxy_words(
    steps: Sequence[ProxyStep], said: Sequence[ProxyStep] = (), answer_row: Optional[int] = None
) -> str:
    """What the proxy did to a row's frames (its ``steps``, `Flow.faults`), in words: ``--fault
    error``, ``answered by hand``, ``withheld: --fault drop``, ``+31.0 s --fault delay``,
    joined with ``; ``; empty when it did nothing. ``said``: the steps the row's status says
    already (the one that withheld its request, `Flow.withheld_by`; one that cut the
    answering side's stream). ``answer_row``: the row the request's answer became when the
    proxy changed it (`Flow.answer_changed_in`): ``its answer corrupted by --fault corrupt:
    #7``."""
    words: list[str] = []
    held = any(
        isinstance(step, InterceptStep) and step.kind is not InterceptKind.HELD for step in steps
    )
    delayed = delay_seconds(steps)
    for step in steps:
        if any(step is done for done in said):
            continue
        if isinstance(step, InterceptStep) and step.kind is InterceptKind.HELD and held:
            continue  # its decision says it
        if isinstance(step, FaultInjected) and step.fault == "delay":
            text: Optional[str] = (
                f"+{_seconds(delayed)} --fault delay" if delayed else "--fault delay"
            )
        elif answer_row is not None and step.direction is Direction.S2C:
            text = _changed_answer(step, answer_row)
        else:
            text = _words(step)
        if text is not None and text not in words:
            words.append(text)
    return "; ".join(words)


def under_words(
    rows: Iterable[tuple[int, Sequence[ProxyStep]]], returned: Optional[float] = None
) -> str:
    """What the proxy did to the GOLEM rows under a tool call (`Flow.proxy_under`), each
    named: ``GOLEM #8: --fault error``, joined with ``; ``; empty when it did nothing. A row
    on which the proxy acted after the call returned (at ``returned``, its answer's time)
    says so: ``GOLEM #7: +1.2 s --fault delay, after the call returned``."""
    said: list[str] = []
    for row, steps in rows:
        words = proxy_words(steps)
        if not words:
            continue
        late = ", after the call returned" if after_return(steps, returned) else ""
        said.append(f"GOLEM #{row}: {words}{late}")
    return "; ".join(said)


def after_return(steps: Iterable[ProxyStep], returned: Optional[float]) -> bool:
    """Whether the proxy took one of ``steps`` after the call it was under returned (at
    ``returned``; None: it has not)."""
    return returned is not None and any(step.t > returned for step in steps if acted(step))


def _changed_answer(step: ProxyStep, row: int) -> Optional[str]:
    """The words of a step on a request's answer that became row ``row`` of its own."""
    if isinstance(step, InterceptStep):
        done = "edited by hand" if step.kind is InterceptKind.EDITED else _words(step)
    else:
        done = f"corrupted by --fault {step.fault}" if step.fault == "corrupt" else _words(step)
    return None if done is None else f"its answer {done}: #{row}"


def step_names(steps: Iterable[ProxyStep]) -> list[str]:
    """The names of the steps that changed what crossed (``--fault error``,
    ``intercept:answer``), each once, in order: the ``faults`` of `query`."""
    names: list[str] = []
    for step in steps:
        if not acted(step):
            continue
        name = step.fault if isinstance(step, InterceptStep) else f"--fault {step.fault}"
        if name not in names:
            names.append(name)
    return names


def violation_by_proxy(
    steps: Sequence[ProxyStep], direction: Optional[Direction], violation: Violation
) -> Optional[str]:
    """The name of the proxy's step that made ``violation`` (found in a frame of
    ``direction`` of a row the proxy acted on), or None when the frame's sender made it: a
    frame the proxy corrupted, cut or edited (its direction); an answer the proxy made in
    the receiver's place (the answer's); a late answer the proxy held (``--fault delay``,
    an interception)."""
    if direction is None:
        return None
    for step in steps:
        if not acted(step):
            continue
        name = step.fault if isinstance(step, InterceptStep) else f"--fault {step.fault}"
        if step.fault in _CHANGES_BYTES and step.direction is direction:
            return name
        if step.fault in _MAKES_ANSWER and step.direction is direction.reverse:
            return name
        if (
            step.fault in _HOLDS
            and step.direction is direction
            and violation.rule == R_LATE_ANSWER.id
        ):
            return name
    return None
