"""The attribution rule on its own: which tool call a GOLEM frame belongs to, decided from
the MCP frames decoded before it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from golem_core.profiles import GOLEM, MCP
from golem_proxy.events import (
    ConnectionClosed,
    Direction,
    ExchangeCompleted,
    FrameSeen,
    GapReason,
    ObservationLost,
    RouteDown,
    UpstreamStatus,
)
from golem_proxy.live.attribution import MAX_IN_FLIGHT, ToolCallTracker
from tests.support.frames import frame_seen


def mcp_frame(direction: Direction, index: int, obj: dict[str, Any]) -> FrameSeen:
    payload = json.dumps(obj).encode()
    return frame_seen(MCP, direction, index, payload, route="mcp", size=len(payload) + 1)


def call(index: int, ident: Any, tool: str) -> FrameSeen:
    params = {"name": tool, "arguments": {}}
    return mcp_frame(
        Direction.C2S,
        index,
        {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params},
    )


def answer(index: int, ident: Any) -> FrameSeen:
    return mcp_frame(
        Direction.S2C, index, {"jsonrpc": "2.0", "id": ident, "result": {"content": []}}
    )


def exchanged(request: FrameSeen, response: FrameSeen) -> ExchangeCompleted:
    return ExchangeCompleted(
        conn=request.conn,
        route="mcp",
        request=request,
        response=response,
        outcome=MCP.outcome(request.message, response.message),
    )


def golem_frame() -> FrameSeen:
    payload = b'{"id": "x", "method": "ping", "params": {}}'
    return frame_seen(GOLEM, Direction.C2S, 0, payload, conn=2, size=len(payload) + 4)


def tools(tracker: ToolCallTracker) -> list[str]:
    calls = tracker.annotate(golem_frame()).tool_calls
    assert calls is not None
    return [c.tool for c in calls]


def test_outside_any_call_is_no_tool_call() -> None:
    tracker = ToolCallTracker(MCP)
    assert tools(tracker) == []
    tracker.watch(mcp_frame(Direction.C2S, 0, {"jsonrpc": "2.0", "id": 0, "method": "initialize"}))
    assert tools(tracker) == []


def test_one_call_in_flight_owns_the_frame_until_its_answer() -> None:
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, "a", "create_box"))
    annotated = tracker.annotate(golem_frame())
    assert annotated.tool_calls is not None
    [ref] = annotated.tool_calls
    assert (ref.conn, ref.index, ref.id, ref.tool) == (1, 0, "a", "create_box")
    tracker.watch(answer(0, "a"))
    assert tools(tracker) == []


def test_overlapping_calls_are_ambiguous_with_every_candidate() -> None:
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 1, "one"))
    tracker.watch(call(1, 2, "two"))
    assert tools(tracker) == ["one", "two"]
    tracker.watch(answer(0, 1))
    assert tools(tracker) == ["two"]


def test_ids_one_and_string_one_are_different_calls() -> None:
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 1, "number"))
    tracker.watch(answer(0, "1"))
    assert tools(tracker) == ["number"]


CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}


def test_a_cancelled_call_stays_in_flight_until_its_answer_or_the_connection_ends() -> None:
    # A server may go on with a cancelled call (a tool that cannot be interrupted) and send
    # GOLEM frames for it: frames meanwhile name it too (ambiguous), never only the next call.
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 5, "slow"))
    tracker.watch(mcp_frame(Direction.C2S, 1, CANCEL))
    assert tools(tracker) == ["slow"]
    tracker.watch(call(2, 6, "other"))
    assert tools(tracker) == ["slow", "other"]
    tracker.watch(answer(0, 5))  # the late answer (a client ignores it) ends the call
    assert tools(tracker) == ["other"]
    tracker.watch(ConnectionClosed(conn=1, route="mcp", reason="gone", t=0.0))
    assert tools(tracker) == []


def test_a_cancelled_call_never_answered_ends_once_a_later_request_is_answered() -> None:
    # A server that honours the cancellation never answers it: once it answers a request
    # sent after the cancellation, it has read it, and the call is over.
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 4, "early"))
    tracker.watch(call(1, 5, "slow"))
    tracker.watch(mcp_frame(Direction.C2S, 2, CANCEL))
    tracker.watch(call(3, 6, "next"))
    tracker.watch(answer(0, 4))  # sent before the cancellation: says nothing of it
    assert tools(tracker) == ["slow", "next"]
    tracker.watch(answer(1, 6))
    assert tools(tracker) == []
    tracker.watch(call(4, 7, "after"))
    assert tools(tracker) == ["after"]


def test_a_servers_own_request_with_a_calls_id_does_not_end_the_call() -> None:
    # Server and client ids are apart: the server's ping id 5 is no answer to call 5.
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 5, "slow"))
    ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    tracker.watch(mcp_frame(Direction.S2C, 0, ping))
    assert tools(tracker) == ["slow"]
    tracker.watch(mcp_frame(Direction.C2S, 1, {"jsonrpc": "2.0", "id": 5, "result": {}}))
    assert tools(tracker) == ["slow"]  # the client's answer to the ping is no request either
    tracker.watch(answer(1, 5))
    assert tools(tracker) == []


def test_calls_never_answered_are_bounded() -> None:
    tracker = ToolCallTracker(MCP)
    for number in range(MAX_IN_FLIGHT + 3):
        tracker.watch(call(number, number, f"t{number}"))
    assert len(tracker.in_flight) == MAX_IN_FLIGHT
    assert tracker.let_go == 3
    assert tracker.in_flight[0].tool == "t3"


def test_a_row_without_a_frame_is_unknown_not_outside_every_call() -> None:
    from golem_proxy.analysis.flows import Flow
    from golem_proxy.analysis.tool_calls import ToolCallIndex
    from golem_proxy.events import GapReason, ObservationLost

    index = ToolCallIndex({"mcp"})
    gap = Flow(5, 2, "main")
    gap.gap = ObservationLost(
        conn=2, route="main", direction=Direction.C2S, t=0.0, reason=GapReason.BEHIND, size=100
    )
    assert index.attribution(gap).state == "unknown"
    framed = Flow(6, 2, "main", request=ToolCallTracker(MCP).annotate(golem_frame()))
    assert index.attribution(framed).state == "none"


def test_a_call_taken_over_from_the_recording_is_let_go_when_its_answer_may_be_lost() -> None:
    """After a restart, a call the recording shows in flight goes on being attributed, unless
    its server's answers crossed (or may have been left unrecorded) while no process
    observed: an answer among those would never end it, and every GOLEM frame after would
    name a call that is over."""
    kept, doubtful = ToolCallTracker(MCP), ToolCallTracker(MCP)
    for tracker in (kept, doubtful):
        tracker.take_over(call(4, "a", "create_box"))
        assert tools(tracker) == ["create_box"]
    kept.answers_resumed(1, unseen=False)
    doubtful.answers_resumed(1, unseen=True)
    assert tools(kept) == ["create_box"]  # its answer is still to come, and ends it
    kept.watch(answer(9, "a"))
    assert tools(kept) == []
    assert tools(doubtful) == []
    # A call made after the restart is not recovered: a later doubt does not touch it.
    doubtful.watch(call(10, "b", "create_sphere"))
    doubtful.answers_resumed(1, unseen=True)
    assert tools(doubtful) == ["create_sphere"]


def test_a_frame_that_arrived_earlier_names_the_calls_in_flight_then() -> None:
    """A GOLEM request held on its way (``--fault delay``, ``--intercept``) is decoded when it
    goes on: the decision taken as it arrived is the one it carries, whatever ended or started
    meanwhile."""
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 1, "gave_up"))
    as_it_arrived = tracker.at_arrival()
    tracker.watch(answer(0, 1))
    tracker.watch(call(1, 2, "next"))
    calls = as_it_arrived(golem_frame()).tool_calls
    assert [c.tool for c in calls or ()] == ["gave_up"]
    assert tools(tracker) == ["next"]


def test_a_call_answered_while_a_frame_of_its_waits_to_be_decoded_says_so() -> None:
    """A call answered while a GOLEM frame that arrived during it is not decoded yet (held on
    its way) carries ``held_under``; one answered after its frames were decoded, or after the
    read completed none (its mark passed), does not."""
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 1, "gave_up"))
    tracker.at_arrival()(golem_frame())  # decoded at once
    held = tracker.at_arrival()
    answered = tracker.watch(answer(0, 1))
    assert isinstance(answered, FrameSeen) and answered.held_under
    held(golem_frame())  # its own decision, whatever ended meanwhile
    tracker.watch(call(1, 2, "in_time"))
    tracker.at_arrival()(golem_frame())
    passed = tracker.at_arrival()
    passed.passed()
    in_time = tracker.watch(answer(1, 2))
    assert isinstance(in_time, FrameSeen) and not in_time.held_under


def test_an_answer_names_its_requests_calls_not_those_in_flight_as_it_is_decoded() -> None:
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 1, "gave_up"))
    request = tracker.annotate(golem_frame())
    tracker.watch(answer(0, 1))
    tracker.watch(call(1, 2, "next"))
    payload = b'{"id": "x", "result": {}}'
    response = frame_seen(GOLEM, Direction.S2C, 0, payload, conn=2, size=len(payload) + 4)
    assert tracker.annotate(response, request).tool_calls == request.tool_calls
    # An answer to a request that carries no decision (none was made) gets the one of now.
    undecided = golem_frame()
    assert [c.tool for c in tracker.annotate(response, undecided).tool_calls or ()] == ["next"]


def test_a_call_made_while_a_golem_route_is_down_names_it_until_it_is_back() -> None:
    """A call made while a route does not listen carries it (its server's connection attempts
    there are refused by the system, unseen); one made before or after does not."""
    tracker = ToolCallTracker(MCP)
    before = tracker.watch(call(0, 1, "list_layers"))
    assert isinstance(before, FrameSeen) and before.routes_down is None
    tracker.watch(answer(0, 1))
    refused = "upstream 127.0.0.1:9876 refuses connections"
    tracker.upstream(UpstreamStatus(route="main", t=1.5, up=False, detail=refused))
    # Still down, saying so again (another program took the port): the first time stands.
    tracker.upstream(UpstreamStatus(route="main", t=2.5, up=False, detail="trying again"))
    during = tracker.watch(call(1, 2, "create_layer"))
    assert isinstance(during, FrameSeen) and during.routes_down == (
        RouteDown(route="main", since=1.5),
    )
    # Only a tools/call request is marked: its answer and other requests are not.
    assert isinstance(tracker.watch(answer(1, 2)), FrameSeen)
    ping = tracker.watch(mcp_frame(Direction.C2S, 2, {"jsonrpc": "2.0", "id": 3, "method": "ping"}))
    assert isinstance(ping, FrameSeen) and ping.routes_down is None
    tracker.upstream(UpstreamStatus(route="main", t=3.0, up=True, detail="answers again"))
    after = tracker.watch(call(3, 4, "list_layers"))
    assert isinstance(after, FrameSeen) and after.routes_down is None


def test_the_exchange_of_a_call_made_while_a_route_was_down_carries_the_mark() -> None:
    """The tap pairs the frame it decoded; the exchange published takes the marked one, so
    the live log says it too."""
    tracker = ToolCallTracker(MCP)
    tracker.upstream(UpstreamStatus(route="main", t=1.5, up=False, detail="refused"))
    request = call(0, 7, "create_layer")
    marked = tracker.watch(request)
    exchange = exchanged(request, answer(0, 7))
    published = tracker.watch(exchange)
    assert isinstance(published, ExchangeCompleted) and published.request is marked
    # Once only: the mark is let go with its exchange.
    assert tracker.watch(exchange) is exchange


def test_a_servers_own_request_with_a_marked_calls_index_keeps_its_own_frame() -> None:
    """Frame indexes count each direction apart: a server's request (s2c) numbered as a
    marked call (c2s) is its own exchange, and the call keeps its mark for its own."""
    tracker = ToolCallTracker(MCP)
    tracker.upstream(UpstreamStatus(route="main", t=1.5, up=False, detail="refused"))
    marked = tracker.watch(call(5, 9, "create_layer"))
    asked = mcp_frame(Direction.S2C, 5, {"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
    replied = mcp_frame(Direction.C2S, 6, {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}})
    server_exchange = ExchangeCompleted(
        conn=asked.conn,
        route="mcp",
        request=asked,
        response=replied,
        outcome=MCP.outcome(asked.message, replied.message),
    )
    assert tracker.watch(server_exchange) is server_exchange
    response = answer(3, 9)
    exchange = ExchangeCompleted(
        conn=marked.conn,
        route="mcp",
        request=call(5, 9, "create_layer"),
        response=response,
        outcome=MCP.outcome(marked.message, response.message),
    )
    published = tracker.watch(exchange)
    assert isinstance(published, ExchangeCompleted) and published.request is marked


def test_the_answer_of_a_call_in_flight_when_a_route_went_down_carries_it() -> None:
    """The plugin went away under a call: its answer names the route and when it went down
    (what its server tried there after that was refused, unseen). A route already down when a
    call was made is on the request, not again on the answer; a call made after is marked
    by its request only."""
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 1, "boolean_union"))
    tracker.upstream(UpstreamStatus(route="main", t=1.5, up=False, detail="refused"))
    made_while_down = tracker.watch(call(1, 2, "list_layers"))
    assert isinstance(made_while_down, FrameSeen) and made_while_down.routes_down is not None
    # Still down, said again: no new outage for the calls in flight.
    tracker.upstream(UpstreamStatus(route="main", t=2.0, up=False, detail="trying again"))
    tracker.upstream(UpstreamStatus(route="gh", t=2.5, up=False, detail="refused"))
    first = tracker.watch(answer(0, 1))
    assert isinstance(first, FrameSeen) and first.routes_down == (
        RouteDown(route="main", since=1.5),
        RouteDown(route="gh", since=2.5),
    )
    second = tracker.watch(answer(1, 2))
    assert isinstance(second, FrameSeen) and second.routes_down == (
        RouteDown(route="gh", since=2.5),
    )
    # Back, then down again during a call: the new outage, with its own time.
    tracker.upstream(UpstreamStatus(route="main", t=3.0, up=True, detail="answers again"))
    tracker.upstream(UpstreamStatus(route="gh", t=3.0, up=True, detail="answers again"))
    tracker.watch(call(2, 3, "create_layer"))
    tracker.upstream(UpstreamStatus(route="main", t=4.0, up=False, detail="refused"))
    third = tracker.watch(answer(2, 3))
    assert isinstance(third, FrameSeen) and third.routes_down == (
        RouteDown(route="main", since=4.0),
    )
    # Answered already: a later outage is none of its business.
    tracker.upstream(UpstreamStatus(route="main", t=5.0, up=True, detail="answers again"))
    tracker.watch(call(3, 4, "list_layers"))
    tracker.upstream(UpstreamStatus(route="main", t=6.0, up=False, detail="refused"))
    again = tracker.watch(answer(2, 3))
    assert isinstance(again, FrameSeen) and again.routes_down is None


def test_the_exchange_of_a_call_a_route_went_down_under_carries_its_marked_answer() -> None:
    tracker = ToolCallTracker(MCP)
    request = call(0, 7, "create_layer")
    assert tracker.watch(request) is request
    tracker.upstream(UpstreamStatus(route="main", t=1.5, up=False, detail="refused"))
    response = answer(0, 7)
    marked = tracker.watch(response)
    assert isinstance(marked, FrameSeen) and marked.routes_down is not None
    exchange = exchanged(request, response)
    published = tracker.watch(exchange)
    assert isinstance(published, ExchangeCompleted)
    assert published.response is marked and published.request is request
    assert tracker.watch(exchange) is exchange  # once only


def test_what_went_down_under_calls_is_forgotten_with_them() -> None:
    """A call that ends unanswered (its connection closed, a cancelled call let go, the
    in-flight set full) takes its outage with it: an answer that comes later on another
    connection, or with a reused id, is not marked by it."""
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 1, "gone_with_its_connection"))
    tracker.upstream(UpstreamStatus(route="main", t=1.5, up=False, detail="refused"))
    tracker.watch(ConnectionClosed(conn=1, route="mcp", reason="closed", t=2.0))
    reused = tracker.watch(answer(0, 1))
    assert isinstance(reused, FrameSeen) and reused.routes_down is None
    tracker.upstream(UpstreamStatus(route="main", t=3.0, up=True, detail="answers again"))
    for number in range(MAX_IN_FLIGHT + 1):
        tracker.watch(call(number, number, "never_answered"))
    tracker.upstream(UpstreamStatus(route="main", t=4.0, up=False, detail="refused"))
    assert len(tracker._went_down) == MAX_IN_FLIGHT
    tracker.watch(call(MAX_IN_FLIGHT + 1, "last", "one_more"))
    assert len(tracker._went_down) == MAX_IN_FLIGHT - 1  # the oldest let go, and its outage


def test_a_call_taken_over_after_a_restart_is_not_said_to_have_seen_an_older_outage() -> None:
    """After a restart the new process is told of a route down since before it, once the
    calls in flight are taken over from the recording: a call made after the route went down
    has it on its request; its answer does not say it went down during it."""
    tracker = ToolCallTracker(MCP)
    params = {"name": "list_layers", "arguments": {}}
    obj = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params}
    payload = json.dumps(obj).encode()
    made = frame_seen(MCP, Direction.C2S, 3, payload, route="mcp", t=2.0)
    tracker.take_over(dataclasses.replace(made, routes_down=(RouteDown(route="main", since=1.0),)))
    tracker.upstream(UpstreamStatus(route="main", t=1.0, up=False, detail=""))
    answered = tracker.watch(answer(3, 4))
    assert isinstance(answered, FrameSeen) and answered.routes_down is None


def test_an_id_used_again_starts_a_call_with_no_outage_of_the_one_before() -> None:
    tracker = ToolCallTracker(MCP)
    tracker.watch(call(0, 1, "first"))
    tracker.upstream(UpstreamStatus(route="main", t=1.5, up=False, detail="refused"))
    tracker.upstream(UpstreamStatus(route="main", t=2.0, up=True, detail="answers again"))
    tracker.watch(call(1, 1, "same_id_again"))  # a client that reuses an id in flight
    answered = tracker.watch(answer(0, 1))
    assert isinstance(answered, FrameSeen) and answered.routes_down is None


def test_a_call_answered_in_a_frame_too_large_to_observe_ends() -> None:
    """The tap read the answer's id and paired it (`ObservationLost.answers`): the call is no
    longer in flight, so later GOLEM frames are not said to be of it; a gap that names no
    request, or one on the client's side, ends nothing."""
    tracker = ToolCallTracker(MCP)
    for frame in (call(0, 1, "big"), call(1, 2, "small")):
        tracker.watch(frame)

    def gap(direction: Direction, answers: Any) -> ObservationLost:
        return ObservationLost(
            conn=1, route="mcp", direction=direction, t=1.0,
            reason=GapReason.FRAME_TOO_LARGE, size=10, answers=answers,
        )  # fmt: skip

    for unknown in (gap(Direction.S2C, None), gap(Direction.C2S, 0), gap(Direction.S2C, 5)):
        tracker.watch(unknown)
        assert [ref.tool for ref in tracker.in_flight] == ["big", "small"]
    tracker.watch(gap(Direction.S2C, 0))
    assert [ref.tool for ref in tracker.in_flight] == ["small"]
    golem = tracker.annotate(frame_seen(GOLEM, Direction.C2S, 0, b'{"method": "ping"}'))
    assert [ref.tool for ref in golem.tool_calls or ()] == ["small"]
