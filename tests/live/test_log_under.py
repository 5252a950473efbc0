"""What the live log's tools/call line says of the proxy's steps under the call
(`StepsUnderCalls.words`): each kind of step once, with its count, a few kinds at most, so a
tool that made thousands of GOLEM calls under one rule reads as one phrase, not thousands."""

from __future__ import annotations

from types import SimpleNamespace

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, FaultInjected
from golem_proxy.live.log_under import GROUPS_SAID, StepsUnderCalls


def _delay(method: str) -> FaultInjected:
    return FaultInjected(
        conn=2, route="main", direction=Direction.C2S, t=0.0, detail="delayed 0 ms",
        method=method, fault="delay", held_s=0.0,
    )  # fmt: skip


def _words(rows: list[tuple[int, str]]) -> str:
    under = StepsUnderCalls(GOLEM)
    for row, method in rows:
        under._methods[row] = method
    call = SimpleNamespace(proxy_under=[(row, [_delay(method)]) for row, method in rows])
    under._call = call  # type: ignore[assignment]
    return under.words()


def test_the_same_step_under_many_calls_is_said_once_with_its_count() -> None:
    words = _words([(row, "scene.create_layer") for row in range(5000)])
    assert words.count("scene.create_layer") == 1
    assert words.endswith("(5,000 times)"), words


def test_more_kinds_than_said_are_counted() -> None:
    words = _words([(row, f"scene.m{row}") for row in range(GROUPS_SAID + 3)])
    assert words.count(";") == GROUPS_SAID
    assert words.endswith("… 3 more (show lists them)"), words
