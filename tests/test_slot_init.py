"""`slot_init` builds the instance the dataclass would, and refuses a class it cannot."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from golem_core.messages import Role
from golem_core.outcome import Outcome, OutcomeKind
from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, ExchangeCompleted, FrameSeen, ToolCallRef
from golem_proxy.slot_init import slot_init


def _seen(**changes: object) -> dict[str, object]:
    payload = GOLEM.encode_payload({"id": "a", "method": "m", "params": {}})
    values: dict[str, object] = dict(
        conn=2,
        route="main",
        direction=Direction.C2S,
        index=4,
        t=1.5,
        size=len(payload) + 4,
        payload=payload,
        message=GOLEM.parse(payload, Role.REQUEST),
    )
    values.update(changes)
    return values


def test_frame_seen_with_defaults() -> None:
    built = slot_init(FrameSeen)(**_seen())  # type: ignore[arg-type]
    assert type(built) is FrameSeen
    assert built == FrameSeen(**_seen())  # type: ignore[arg-type]
    assert built.redacted == () and built.answers is None and not built.late


def test_frame_seen_every_field() -> None:
    call = ToolCallRef(conn=1, index=0, id=7, tool="t")
    values = _seen(redacted=("params.x",), elided=3, tool_calls=(call,), expects_answer=True,
                   answers=2, orphan=True, undelivered="client gone", delivered_bytes=5,
                   late=True)  # fmt: skip
    built = slot_init(FrameSeen)(**values)  # type: ignore[arg-type]
    assert built == FrameSeen(**values)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        built.conn = 3  # type: ignore[misc]  # still frozen


def test_exchange() -> None:
    request = FrameSeen(**_seen())  # type: ignore[arg-type]
    response = FrameSeen(**_seen(direction=Direction.S2C, t=2.0))  # type: ignore[arg-type]
    outcome = Outcome(OutcomeKind.OK, "ok")
    values = dict(conn=2, route="main", request=request, response=response, outcome=outcome)
    assert slot_init(ExchangeCompleted)(**values) == ExchangeCompleted(**values)  # type: ignore[arg-type]


def test_a_missing_field_is_refused() -> None:
    with pytest.raises(TypeError):
        slot_init(FrameSeen)(conn=1)  # type: ignore[call-arg]


def test_classes_it_cannot_build() -> None:
    @dataclass
    class NoSlots:
        a: int

    @dataclass(slots=True)
    class Factory:
        a: list[int] = field(default_factory=list)

    @dataclass(slots=True)
    class Posted:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (NoSlots, Factory, Posted):
        with pytest.raises(TypeError):
            slot_init(cls)
