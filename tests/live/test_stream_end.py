"""A plugin that goes away while a request waits for its answer: its end of stream is said when
it happens (`StreamEnded`), not when the client, which may not be reading, closes the connection
long after; the request reads as unanswered from then on, in the live events and the recording."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import (
    ConnectionClosed,
    Direction,
    Event,
    FramingErrorSeen,
    StreamEnded,
)
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.recording.reader import read_recording
from tests.support.harness import connect, start_proxy, stop_proxy
from tests.support.peers import EchoUpstream

REQUEST = GOLEM.encode({"id": "a", "method": "scene.list_layers", "params": {}})
AGAIN = GOLEM.encode({"id": "b", "method": "ping", "params": {}})


async def wait_until(found: Callable[[], object]) -> None:
    with trio.fail_after(10):
        while not found():
            await trio.sleep(0.01)


@pytest.mark.trio
async def test_the_upstream_ending_while_a_request_waits_is_said_when_it_happens(
    tmp_path: Path,
) -> None:
    record = tmp_path / "gone.jsonl"
    upstream = EchoUpstream(echo=False, close_after=len(REQUEST))  # reads it, then is gone
    async with trio.open_nursery() as nursery:
        await nursery.start(upstream.serve)
        running = await start_proxy(nursery, upstream.address, record=str(record))
        client = await connect(running.listen)
        await client.send_all(REQUEST)
        assert await client.receive_some() == b""  # the plugin's end, passed on
        await wait_until(lambda: running.of_type(StreamEnded))
        [ended] = running.of_type(StreamEnded)
        assert (ended.direction, ended.unanswered) == (Direction.S2C, (0,))
        assert not running.of_type(ConnectionClosed)  # the client has not acted yet
        await client.send_all(AGAIN)  # a client that had not read: refused by the gone plugin
        await wait_until(lambda: running.of_type(ConnectionClosed))
        await client.aclose()
        await stop_proxy(running)
        nursery.cancel_scope.cancel()
    [closed] = running.of_type(ConnectionClosed)
    assert closed.t >= ended.t
    tracker = FlowTracker(GOLEM)
    for event in read_recording(str(record)).events:
        tracker.apply(event)
    first, second = tracker.flows
    assert first.status(GOLEM) == "unanswered (upstream closed)"
    assert first.stream_ended is not None
    assert first.stream_ended.t == pytest.approx(ended.t, abs=1e-6)
    # Sent after the end, refused at once by the plugin's closed socket: it never got it.
    assert second.status(GOLEM) == "undelivered (upstream gone)"
    assert second.stream_ended is None


def test_no_end_is_said_without_a_request_waiting_or_once_both_sides_ended() -> None:
    said: list[object] = []
    tap = ConnectionTap(1, "main", GOLEM, said.append)
    tap.process(Direction.C2S, REQUEST, 0.1)
    tap.process(Direction.C2S, b"", 0.2)  # the client ended first: the close follows
    tap.process(Direction.S2C, b"", 0.3)
    assert not [e for e in said if isinstance(e, StreamEnded)]
    idle: list[object] = []
    tap = ConnectionTap(2, "main", GOLEM, idle.append)
    tap.process(Direction.S2C, b"", 0.3)  # nothing waited
    assert not [e for e in idle if isinstance(e, StreamEnded)]


def test_an_answer_cut_by_the_end_says_the_end_after_the_cut_frame() -> None:
    """A plugin killed while it wrote its answer: the decoder reports the truncated frame and
    stops, with no end of stream of its own; the end is said after the cut frame."""
    said: list[object] = []
    tap = ConnectionTap(1, "main", GOLEM, said.append)
    tap.process(Direction.C2S, REQUEST, 0.1)
    answer = GOLEM.encode({"id": "a", "result": {"layers": []}, "error": None})
    tap.process(Direction.S2C, answer[: len(answer) // 2], 0.2)
    tap.process(Direction.S2C, b"", 0.3)
    kinds = [type(e).__name__ for e in said if isinstance(e, (FramingErrorSeen, StreamEnded))]
    assert kinds == ["FramingErrorSeen", "StreamEnded"]
    [ended] = [e for e in said if isinstance(e, StreamEnded)]
    assert ended.unanswered == (0,)


def test_an_end_naming_a_request_already_answered_changes_nothing(tmp_path: Path) -> None:
    """A damaged (or hand-made) file: an ``end`` line naming a request whose answer was read
    settles nothing, and the request keeps its one row."""
    said: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, said.append)
    tap.process(Direction.C2S, REQUEST, 0.1)
    tap.process(Direction.S2C, GOLEM.encode({"id": "a", "result": {}, "error": None}), 0.2)
    said.append(StreamEnded(conn=1, route="main", direction=Direction.S2C, t=0.3, unanswered=(0,)))
    tracker = FlowTracker(GOLEM)
    for event in said:
        tracker.apply(event)
    [flow] = tracker.flows
    assert flow.status(GOLEM) == "ok" and flow.stream_ended is None
