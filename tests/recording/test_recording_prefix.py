"""The hand-formatted frame line prefix is byte for byte what json.dumps writes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, FrameSeen, RouteDown
from golem_proxy.recording.format import MSG_KEY
from golem_proxy.recording.frame_lines import _frame_prefix, frame_members
from golem_proxy.recording.schema import dumps as _dumps
from tests.support.frames import frame_seen


def reference_prefix(event: FrameSeen, seq: int) -> bytes:
    """What the general path writes for the same members."""
    return _dumps(frame_members(event, event.message, seq))[:-1] + MSG_KEY


@pytest.mark.parametrize(
    "obj,role",
    [
        ({"id": 'ü"x\\', "method": "a.b\u2028", "params": {}}, Role.REQUEST),
        ({"id": 5, "result": {}, "error": None}, Role.RESPONSE),
        ({"id": None, "result": None, "error": {"code": 1, "message": "x"}}, Role.RESPONSE),
        ({"id": 1}, Role.RESPONSE),
    ],
)
def test_examples(obj: dict[str, Any], role: Role) -> None:
    payload = GOLEM.encode_payload(obj)
    event = FrameSeen(
        conn=3,
        route='ma"in',
        direction=Direction.C2S,
        index=7,
        t=1.2345678,
        size=len(payload) + 4,
        payload=payload,
        message=GOLEM.parse(payload, role),
    )
    assert _frame_prefix(event, event.message, 9) == reference_prefix(event, 9)


@given(
    ident=st.one_of(st.text(), st.integers(min_value=-(2**63), max_value=2**63)),
    method=st.text(),
    route=st.text(),
    t=st.floats(min_value=0, max_value=1e7, allow_nan=False),
    seq=st.integers(min_value=1, max_value=2**40),
)
def test_any_request(ident: Any, method: str, route: str, t: float, seq: int) -> None:
    payload = GOLEM.encode_payload({"id": ident, "method": method, "params": {}})
    event = frame_seen(GOLEM, Direction.C2S, 0, payload, route=route, t=t, size=10)
    assert _frame_prefix(event, event.message, seq) == reference_prefix(event, seq)


def test_a_call_made_while_a_route_was_down() -> None:
    payload = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}'
    event = dataclasses.replace(
        frame_seen(GOLEM, Direction.C2S, 0, payload, route="mcp", t=2.0, size=len(payload) + 1),
        routes_down=(RouteDown(route="main", since=1.2345678), RouteDown(route='g"h', since=0)),
    )
    prefix = _frame_prefix(event, event.message, 4)
    assert prefix == reference_prefix(event, 4)
    assert (
        b'"routes_down":[{"route":"main","since":1.234568},{"route":"g\\"h","since":0}]' in prefix
    )
