"""The hand-formatted exchange line is byte for byte what json.dumps writes for its members."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, ExchangeCompleted
from golem_proxy.recording.schema import dumps
from golem_proxy.recording.writer import _exchange_line, exchange_members
from tests.support.frames import frame_seen


def exchange(
    method: str,
    route: str,
    t: float,
    latency: float,
    answer: dict[str, Any],
    asker: Direction,
    payload: bytes = b"",
) -> ExchangeCompleted:
    payload = payload or GOLEM.encode_payload({"id": "a", "method": method, "params": {}})
    request = frame_seen(GOLEM, asker, 4, payload, route=route, t=t, expects_answer=True)
    response = frame_seen(
        GOLEM, asker.reverse, 5, GOLEM.encode_payload(answer), route=route, t=t + latency
    )
    outcome = GOLEM.outcome(request.message, response.message)
    return ExchangeCompleted(
        conn=2, route=route, request=request, response=response, outcome=outcome
    )


ANSWERS = [
    {"id": "a", "success": True, "result": {}},
    {"id": "a", "success": False, "error": {"code": "X", "message": 'n"o\u2028'}},
    {"id": "a", "success": True, "result": {"error": "failed inside a success envelope"}},
]


EXCHANGES = st.builds(
    exchange,
    method=st.text(),
    route=st.text(),
    t=st.floats(min_value=0, max_value=1e7, allow_nan=False),
    latency=st.floats(min_value=0, max_value=1e4, allow_nan=False),
    answer=st.sampled_from(ANSWERS),
    asker=st.sampled_from([Direction.C2S, Direction.S2C]),
)


@given(event=EXCHANGES, seq=st.integers(min_value=1, max_value=2**40))
def test_any_exchange(event: ExchangeCompleted, seq: int) -> None:
    assert _exchange_line(event, seq) == dumps(exchange_members(event, seq)) + b"\n"


def test_a_lone_surrogate_in_the_method_is_kept_as_its_escape() -> None:
    # Legal JSON text (an escape), not encodable as UTF-8.
    payload = b'{"id": "a", "method": "a\\ud800b", "params": {}}'
    event = exchange("", "main", 1.0, 0.5, ANSWERS[0], Direction.C2S, payload)
    assert event.method == "a\ud800b"
    line = _exchange_line(event, 1)
    assert line == dumps(exchange_members(event, 1)) + b"\n"
    assert b"\\ud800" in line
