"""What a ``fault`` line says of the frame it acted on, held to the lines before it
(recording/step_check.py): ``among`` (how many requests waited with the id of the answer
withheld) and ``server_request`` (the frame was the server's own request). The views believed
both: ``among: 1000`` where two requests waited said "an answer of id 1 that 1000 requests
waited for" on their rows, and ``server_request`` on a dropped answer put the drop on another
request's row as "undelivered" and left the answer out of what was not inspected. Both readers
refuse such a line alike, naming it; where the file may lack what the proxy saw, nothing is
refused."""

from __future__ import annotations

import io
import re
from typing import Optional

import pytest

from golem_core.outcome import OK
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile
from golem_proxy.events import (
    Direction,
    Event,
    EventsMissed,
    ExchangeCompleted,
    FaultInjected,
    FrameSeen,
    GapReason,
    ObservationLost,
)
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.format import RecordingError, RecordingReader
from tests.recording.test_recording_format import frame
from tests.support.trace_builder import write_recording


def _asked(index: int, ident: object = 1, method: str = "a") -> Event:
    text = f'{{"id": {ident!r}, "method": "{method}", "params": {{}}}}'.replace("'", '"')
    return frame(text.encode(), Direction.C2S, index)


def _drop(among: int, *, withheld: bool = True, server_request: bool = False) -> FaultInjected:
    return FaultInjected(
        conn=1,
        route="main",
        direction=Direction.S2C,
        t=0.6,
        detail="withheld response: ? id=1",
        fault="drop" if withheld else "delay",
        withheld=withheld,
        message_id=1,
        among=among,
        server_request=server_request,
    )


def _read(data: bytes) -> list[Event]:
    """The events of ``data`` by both readers, which must agree."""
    exact = list(RecordingReader(io.BytesIO(data)))
    fast = list(FastRecordingReader(io.BytesIO(data)))
    assert repr(fast) == repr(exact)
    return exact


def _refused(data: bytes, said: str) -> None:
    for reader in (RecordingReader, FastRecordingReader):
        with pytest.raises(RecordingError, match=re.escape(said)):
            list(reader(io.BytesIO(data)))


def _recording(events: list[Event], profile: Optional[Profile] = None) -> bytes:
    return write_recording(events, "jsonrpc-ndjson" if profile is JSONRPC_NDJSON else "golem")


def test_among_up_to_the_requests_waiting_with_the_id_reads() -> None:
    for among in (2, 3):  # 3: the proxy counts a request it is about to send (`AMONG_SLACK`)
        [*_, fault] = _read(_recording([_asked(0), _asked(1, method="b"), _drop(among)]))
        assert isinstance(fault, FaultInjected) and fault.among == among


def test_among_above_the_requests_waiting_with_the_id_is_refused_naming_its_line() -> None:
    data = _recording([_asked(0), _asked(1, method="b"), _drop(1000)])
    _refused(data, "line 4: among says 1000 requests waited with id 1; the lines before it hold 2")
    # Another id, or an id of another type, waits for no answer of id 1.
    for other in (2, "1"):
        data = _recording([_asked(0), _asked(1, ident=other), _drop(3)])
        _refused(data, "line 4: among says 3 requests waited with id 1; the lines before it hold 1")


def test_a_request_answered_waits_no_more() -> None:
    """Two requests of id 1, one answered: a drop of the other answer said to be one of three
    (`AMONG_SLACK` over the one waiting, and no more) is refused."""
    answer = frame(b'{"id": 1, "result": {}, "error": null}', Direction.S2C, 0, answers=0)
    _refused(
        _recording([_asked(0), _asked(1), answer, _drop(3)]),
        "line 5: among says 3 requests waited with id 1; the lines before it hold 1",
    )
    _read(_recording([_asked(0), _asked(1), answer, _drop(2)]))
    # A step on an answer recorded comes after it: the reader paired it with one of them.
    _read(_recording([_asked(0), _asked(1), answer, _drop(3, withheld=False)]))


@pytest.mark.parametrize(
    "missing",
    [
        EventsMissed(count=3, t=0.55),
        ObservationLost(
            conn=1,
            route="main",
            direction=Direction.C2S,
            t=0.55,
            reason=GapReason.FRAME_TOO_LARGE,
            size=1 << 30,
        ),
        FaultInjected(
            conn=1, route="main", direction=Direction.C2S, t=0.55, detail="x", fault="corrupt"
        ),
    ],
)
def test_where_the_file_may_lack_a_request_among_is_not_refused(missing: Event) -> None:
    """A ``gap`` line, a frame not observed, a request the proxy changed: the file may lack a
    request the proxy counted."""
    _read(_recording([_asked(0), _asked(1), missing, _drop(1000)]))


def test_lines_lost_before_the_step_leave_among_unrefused() -> None:
    data = _recording([_asked(0), _asked(1), _drop(4)])
    lines = data.splitlines(keepends=True)
    del lines[2]  # a request's line: the numbering jumps at the step's
    _read(b"".join(lines))


def test_among_on_a_step_that_is_no_answers_is_refused() -> None:
    asked = [_asked(0), _asked(1)]
    on_request = FaultInjected(
        conn=1, route="main", direction=Direction.C2S, t=0.6, detail="x", fault="drop",
        withheld=True, message_id=1, among=2,
    )  # fmt: skip
    _refused(_recording([*asked, on_request]), "line 4: among over 1 on a step of a request")
    without_id = FaultInjected(
        conn=1, route="main", direction=Direction.S2C, t=0.6, detail="x", fault="drop",
        withheld=True, among=2,
    )  # fmt: skip
    _refused(_recording([*asked, without_id]), "line 4: among over 1 on a step without the answer")


def test_server_request_on_a_dropped_answer_is_refused() -> None:
    """No frame of the server's came before the step: what it withheld was an answer (never
    recorded), not a request of the server's (recorded as it came, just before it)."""
    _refused(
        _recording([_asked(0), _drop(1, server_request=True)]),
        "line 3: server_request on a frame withheld that is no request of the server's",
    )


def _server_asks(index: int) -> Event:
    return frame(
        b'{"jsonrpc": "2.0", "id": 1, "method": "ask"}',
        Direction.S2C,
        index,
        profile=JSONRPC_NDJSON,
    )


def _client_asks(index: int) -> Event:
    return frame(
        b'{"jsonrpc": "2.0", "id": 5, "method": "work"}',
        Direction.C2S,
        index,
        profile=JSONRPC_NDJSON,
    )


def test_server_request_after_the_servers_own_request_reads() -> None:
    events = [_client_asks(0), _server_asks(0), _drop(1, server_request=True)]
    *_, fault = _read(_recording(events, JSONRPC_NDJSON))
    assert isinstance(fault, FaultInjected) and fault.server_request


def test_server_request_after_an_answer_that_followed_the_servers_request_is_refused() -> None:
    """The server asked, then answered the client (a whole exchange, read the fast way too):
    the frame withheld after that is no request of the server's."""
    asked = _client_asks(0)
    answer = frame(
        b'{"jsonrpc": "2.0", "id": 5, "result": 1}',
        Direction.S2C,
        1,
        profile=JSONRPC_NDJSON,
        answers=0,
    )
    assert isinstance(asked, FrameSeen) and isinstance(answer, FrameSeen)
    exchange = ExchangeCompleted(conn=1, route="main", request=asked, response=answer, outcome=OK)
    events = [_server_asks(0), asked, answer, exchange, _drop(1, server_request=True)]
    _refused(_recording(events, JSONRPC_NDJSON), "line 6: server_request on a frame withheld")


def test_a_server_request_not_observed_leaves_server_request_unrefused() -> None:
    lost = ObservationLost(
        conn=1,
        route="main",
        direction=Direction.S2C,
        t=0.55,
        reason=GapReason.FRAME_TOO_LARGE,
        size=1 << 30,
    )
    _read(_recording([_client_asks(0), lost, _drop(1, server_request=True)], JSONRPC_NDJSON))


def test_the_same_step_on_a_golem_profile_frame_is_refused_too() -> None:
    """A GOLEM plugin sends no request of its own: a server_request drop follows none."""
    request = frame(b'{"id": "a", "method": "ping", "params": {}}', Direction.C2S, 0, profile=GOLEM)
    _refused(_recording([request, _drop(1, server_request=True)]), "line 3: server_request")
