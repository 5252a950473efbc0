"""The end of what a view reads (`FlowTracker.end_input`): a request still waiting for its
answer then stays pending as it was left and says so, ``pending (recording ended)`` at the
end of a file (`take_rest`, what `show` hands on last) and ``pending (session ended)`` where
a live view's session ended: counted as pending, no error, and its answer, should one still
come, settles it as ever."""

from __future__ import annotations

from typing import Optional

from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.analysis.filters import parse_filter
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.analysis.stats import compute_stats
from golem_proxy.events import ConnectionOpened, Direction, ExchangeCompleted, FrameSeen
from golem_proxy.status_tone import Tone
from tests.support.frames import frame_seen


def frame(
    payload: bytes, direction: Direction, index: int, answers: Optional[int] = None
) -> FrameSeen:
    return frame_seen(
        JSONRPC_NDJSON,
        direction,
        index,
        payload,
        route="scrybe",
        t=0.1 * (index + 1),
        size=len(payload) + 1,
        expects_answer=answers is None,
        answers=answers,
    )


def asked(index: int) -> FrameSeen:
    return frame(b'{"jsonrpc":"2.0","id":%d,"method":"m"}' % index, Direction.C2S, index)


def answer(index: int) -> FrameSeen:
    return frame(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % index, Direction.S2C, index, index)


def exchange(index: int) -> ExchangeCompleted:
    request, response = asked(index), answer(index)
    outcome = JSONRPC_NDJSON.outcome(request.message, response.message)
    return ExchangeCompleted(
        conn=1, route="scrybe", request=request, response=response, outcome=outcome
    )


def opened() -> ConnectionOpened:
    return ConnectionOpened(conn=1, route="scrybe", client="c", upstream="u", t=0.0)


def test_a_trace_read_to_its_end_leaves_its_waiting_requests_pending_as_the_recording_ended() -> (
    None
):
    tracker = FlowTracker(JSONRPC_NDJSON, keep=False)
    handed = []
    # Request 0 answered; 1 never; 2's answer read but not its exchange (the file cut there).
    for event in (opened(), asked(0), asked(1), asked(2), answer(0), exchange(0), answer(2)):
        handed += tracker.take_settled(tracker.apply(event))
    rows = handed + tracker.take_rest()
    statuses = [row.status(JSONRPC_NDJSON) for row in rows]
    assert statuses == ["ok", "pending (recording ended)", "pending (recording ended)"]
    waiting = rows[1:]
    assert all(row.pending and not row.is_error and row.tone is Tone.WAITING for row in waiting)
    # As pending as before for what counts and selects them.
    assert compute_stats(rows).overall.pending == 2
    assert [
        row.number for row in rows if parse_filter("~pending").matches(row, JSONRPC_NDJSON)
    ] == [
        2,
        3,
    ]


def test_a_live_views_end_says_the_session_ended_and_a_later_answer_still_settles_the_row() -> None:
    tracker = FlowTracker(JSONRPC_NDJSON)
    for event in (opened(), asked(1), asked(0)):
        tracker.apply(event)
    ended = tracker.end_input("session")
    assert [row.method for row in ended] == ["m", "m"]
    assert [row.number for row in ended] == [1, 2]
    assert [row.status(JSONRPC_NDJSON) for row in tracker.flows] == ["pending (session ended)"] * 2
    tracker.apply(answer(1))
    settled = tracker.apply(exchange(1))
    assert settled is ended[0] and settled.status(JSONRPC_NDJSON) == "ok"
    assert not settled.ended_waiting
