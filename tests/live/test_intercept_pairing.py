"""The intercept pairs a response with its request by the tap's rule (`tap_pairing`): what its
filter sees of a response is the row the tap's events make of it."""

from __future__ import annotations

from typing import Any

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.analysis.filters import parse_filter
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.live.intercept import HeldFrame, InterceptEngine
from golem_proxy.live.tap import ConnectionTap

pytestmark = pytest.mark.trio


def _payload(obj: dict[str, Any]) -> bytes:
    return GOLEM.encode_payload(obj)


FRAMES = [
    (Direction.C2S, _payload({"id": "r1", "method": "ping", "params": {}})),
    # Malformed (its method is no string) but with an id: the tap waits for its answer.
    (Direction.C2S, _payload({"id": "r2", "method": 5, "params": {}})),
    (Direction.S2C, _payload({"id": "r2", "result": {}, "error": None})),
    (Direction.S2C, _payload({"id": "r1", "result": {}, "error": None})),
    (Direction.S2C, _payload({"id": "r9", "result": {}, "error": None})),
]


def _ignore(held: HeldFrame, kind: object, detail: str) -> None:
    pass


async def test_the_intercept_sees_a_response_with_the_request_the_tap_pairs_it_with() -> None:
    # Answers to a malformed request are errors (`~e`); held for no time at all.
    engine = InterceptEngine(GOLEM, parse_filter("~s & ~e"), timeout=0)
    intercept = engine.connection(1, "main")
    tap_events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, tap_events.append)
    held: list[bytes] = []
    for direction, payload in FRAMES:
        ruling = await intercept.hold(direction, payload, len(payload) + 4, 0.0, _ignore)
        if ruling is not None:
            held.append(payload)
        tap.process(direction, GOLEM.frame_payload(payload), 0.0)
    answers = {
        e.payload: e.answers
        for e in tap_events
        if isinstance(e, FrameSeen) and e.direction is Direction.S2C
    }
    assert answers == {FRAMES[2][1]: 1, FRAMES[3][1]: 0, FRAMES[4][1]: None}
    # Only the answer to the malformed request is an error, for the tap's rows as for the filter.
    assert held == [FRAMES[2][1]]


async def test_a_frame_too_costly_to_parse_is_selected_by_no_filter() -> None:
    """The intercept reads no frame the tap is spared parsing (~750 MiB for 20 MB of
    ``[[],…]``): it goes on as it came, and its answer pairs with no request."""
    engine = InterceptEngine(GOLEM, parse_filter("~q | ~s"), timeout=0)
    intercept = engine.connection(1, "main")
    costly = _payload({"id": "big", "method": "scene.x", "params": [[]] * 6_000_000})
    assert await intercept.hold(Direction.C2S, costly, len(costly) + 4, 0.0, _ignore) is None
    answer = _payload({"id": "big", "result": {}, "error": None})
    ruling = await intercept.hold(Direction.S2C, answer, len(answer) + 4, 0.0, _ignore)
    assert ruling is not None and ruling.method is None  # held: `~q | ~s` is every frame


@pytest.mark.parametrize(("limit", "held"), [(1024 * 1024, False), (1 << 40, True)])
async def test_the_session_parse_limit_decides_what_a_filter_reads(limit: int, held: bool) -> None:
    engine = InterceptEngine(GOLEM, parse_filter("~m scene"), timeout=0)
    intercept = engine.connection(1, "main", limit)
    costly = _payload({"id": "a", "method": "scene.x", "params": [[]] * 100_000})
    ruling = await intercept.hold(Direction.C2S, costly, len(costly) + 4, 0.0, _ignore)
    assert (ruling is not None) is held


async def test_a_request_s_elided_blob_is_not_charged_while_it_waits() -> None:
    """A 4 MiB capture request waiting for its answer is charged what its message holds: its
    blob was elided, so not its characters (charged them too, it stood for twice its size)."""
    engine = InterceptEngine(GOLEM, parse_filter("~m nothing.here"), timeout=0)
    intercept = engine.connection(1, "main")
    blob = _payload({"id": "c1", "method": "scene.x", "params": {"png": "QUJD" * (1 << 20)}})
    assert await intercept.hold(Direction.C2S, blob, len(blob) + 4, 0.0, _ignore) is None
    waiting = intercept._requests.pending_bytes
    assert len(blob) <= waiting < len(blob) + 64 * 1024
