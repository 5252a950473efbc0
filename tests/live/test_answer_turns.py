"""When ``--fault error``'s answers may go (`AnswerTurns`): sans-IO, then what holding them
costs a real proxy on loopback."""

from __future__ import annotations

import tracemalloc

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, FaultInjected
from golem_proxy.live.answer_turns import AnswerTurns
from golem_proxy.live.faults import FaultPlan
from golem_proxy.live.proxy_options import ProxyOptions
from tests.support.harness import start_proxy, stop_proxy
from tests.support.peers import EchoUpstream


def _released(turns: AnswerTurns) -> list[bytes]:
    """What the proxy sends now, as `FaultRelay` does: each answer due, until none is."""
    sent = []
    while (reply := turns.due()) is not None:
        sent.append(reply)
        turns.went()
    return sent


def test_an_answer_goes_at_once_when_nothing_waits_before_it() -> None:
    turns = AnswerTurns(by_position=True)
    assert turns.hold(b"a", "--fault error") is None
    turns.asked += 1
    turns.took(Direction.S2C)  # the plugin answered it
    assert turns.hold(b"b", "--fault error") is None
    assert len(turns) == 0


def test_answers_wait_for_as_many_answers_as_requests_before_them_and_keep_their_order() -> None:
    turns = AnswerTurns(by_position=True)
    turns.asked += 1
    assert turns.hold(b"a", "--fault error") == 1  # one answer of the plugin's before it
    turns.asked += 1
    assert turns.hold(b"b", "--fault error") == 3  # two of the plugin's, and a
    assert _released(turns) == []
    turns.took(Direction.S2C)  # whatever id it carries: the client takes it for the first request's
    assert _released(turns) == [b"a"]
    turns.took(Direction.S2C)
    assert _released(turns) == [b"b"]


def test_an_answer_being_sent_keeps_a_later_one_behind_it() -> None:
    turns = AnswerTurns(by_position=True)
    turns.asked += 1
    assert turns.hold(b"a", "--fault error") == 1
    turns.took(Direction.S2C)
    assert turns.due() == b"a"  # being sent: still held
    assert turns.hold(b"b", "--fault error") == 1  # so b goes after it, not at once
    turns.went()
    assert _released(turns) == [b"b"]


def test_once_the_plugins_side_ended_nothing_waits() -> None:
    turns = AnswerTurns(by_position=True)
    turns.asked += 1
    assert turns.hold(b"a", "--fault error") == 1
    turns.end()
    assert _released(turns) == [b"a"]
    turns.asked += 1
    assert turns.hold(b"b", "--fault error") is None


def test_answers_not_sent_are_counted_by_what_made_them() -> None:
    turns = AnswerTurns(by_position=True)
    assert turns.not_sent() is None
    turns.asked += 2
    turns.hold(b"a", "--intercept")
    turns.hold(b"b", "--fault error")
    turns.hold(b"c", "--fault error")
    assert turns.not_sent() == (
        "1 answer of --intercept and 2 of --fault error not sent: the connection ended first"
    )


def test_clients_that_pair_replies_by_id_get_them_at_once() -> None:
    turns = AnswerTurns(by_position=False)
    turns.asked += 1  # a call the server may never answer (cancelled)
    assert turns.hold(b"a", "--fault error") is None
    assert len(turns) == 0


HELD = 1500


@pytest.mark.trio
async def test_answers_held_cost_memory_in_proportion_to_their_number() -> None:
    """A client pipelines requests the plugin is slow on, each followed by one the proxy
    answers with an error: each error is held behind all the requests before it, and its
    turn costs one number, not the set of those requests."""
    requests = b"".join(
        GOLEM.encode({"id": f"a{i}", "method": "scene.list_layers", "params": {}})
        + GOLEM.encode({"id": f"b{i}", "method": "ping", "params": {}})
        for i in range(HELD)
    )
    forwarded = len(requests) // 2  # the a's: each frame of a pair has the same size
    plan = FaultPlan.parse(["error:code=TIMEOUT,message=busy,method=ping"], 1)
    async with trio.open_nursery() as nursery:
        upstream = EchoUpstream(echo=False)  # reads everything, answers nothing
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=0.5, faults=plan)
        proxy = await start_proxy(nursery, upstream.address, options=options)
        tracemalloc.start(1)
        try:
            client = await trio.open_tcp_stream(proxy.listen.host, proxy.listen.port)
            await client.send_all(requests)
            await upstream.wait_received(forwarded)
            with trio.fail_after(20):  # every error decided, held behind the requests before it
                while len(proxy.of_type(FaultInjected)) < HELD:
                    await trio.sleep(0.01)
            snapshot = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        held = snapshot.filter_traces(
            [
                tracemalloc.Filter(True, "*/golem_proxy/live/answer_turns.py"),
                tracemalloc.Filter(True, "*/golem_proxy/live/faults.py"),
            ]
        )
        size = sum(stat.size for stat in held.statistics("filename"))
        await client.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    # About 100 bytes a held answer; a set of the requests before each was ~40 MB here.
    assert size < 1 << 20, f"{size:,} bytes"
