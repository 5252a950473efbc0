"""`outage_plan`: what the GOLEM routes' lines of a recording say each tool call met, read
from the decisions recorded (a close's ``tool_calls``, the ``upstream`` lines, a frame's
``tool_calls``), never from the bytes."""

from __future__ import annotations

import dataclasses
from typing import Optional

from golem_core.messages import Request, Response
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    FrameSeen,
    RouteDown,
    StreamEnded,
    ToolCallRef,
    UpstreamStatus,
)
from golem_proxy.replay.mcp_script import ClientStep, McpScript
from golem_proxy.replay.outage_plan import PluginEnd, RouteOutage, outage_plan

MCP_CONN = 1


def _call(index: int, tool: str, start: float, end: Optional[float]) -> ClientStep:
    params = {"name": tool, "arguments": {}}
    return ClientStep(b"{}", index, "tools/call", index, params, t=start, answer_t=end)


def _ref(call: ClientStep) -> ToolCallRef:
    assert call.tool is not None and isinstance(call.id, int)
    return ToolCallRef(conn=MCP_CONN, index=call.index, id=call.id, tool=call.tool)


def _opened(conn: int, t: float) -> ConnectionOpened:
    return ConnectionOpened(conn=conn, route="main", client="c", upstream="u", t=t)


def _refused(conn: int, t: float, *calls: ClientStep) -> ConnectionClosed:
    return ConnectionClosed(
        conn=conn,
        route="main",
        reason="upstream 127.0.0.1:9 unreachable: Connection refused",
        t=t,
        abnormal=True,
        tool_calls=tuple(_ref(call) for call in calls),
    )


def _upstream(t: float, up: bool) -> UpstreamStatus:
    return UpstreamStatus(route="main", t=t, up=up, detail="")


def _request(conn: int, t: float, call: ClientStep) -> FrameSeen:
    message = Request(id="r", method="scene.list_layers", params={}, obj={})
    return FrameSeen(
        conn=conn, route="main", direction=Direction.C2S, index=0, t=t, size=10,
        payload=b"{}", message=message, tool_calls=(_ref(call),),
    )  # fmt: skip


def _plan(calls: list[ClientStep], events: list[Event]) -> dict[int, dict[str, RouteOutage]]:
    return outage_plan(McpScript(calls, MCP_CONN), events).calls


def test_a_refused_connection_resets_and_the_route_stays_down_until_back() -> None:
    first, during, after = _call(3, "a", 1.0, 1.1), _call(5, "b", 2.0, 2.1), _call(7, "c", 4.0, 4.1)
    events: list[Event] = [
        _opened(1, 1.01),
        _upstream(1.02, up=False),
        _refused(1, 1.03, first),
        _upstream(3.0, up=True),
        _opened(2, 4.01),
        _request(2, 4.02, after),
    ]
    plan = _plan([first, during, after], events)
    # The first call: nothing went wrong before it, so nothing of the new build's is closed.
    assert plan[3]["main"] == RouteOutage(resets=1, refused=True)
    assert plan[5]["main"] == RouteOutage(drop_open=True, refused=True)
    # After `back`: the server connects again (the outage closed its connection), nothing down.
    assert plan[7]["main"] == RouteOutage(drop_open=True)


def test_a_call_that_reached_the_plugin_after_back_is_served() -> None:
    # Down when the call began, back under it: its request crossed, so it was not refused.
    call = _call(3, "a", 1.0, 3.0)
    events: list[Event] = [
        _upstream(0.5, up=False),
        _upstream(1.5, up=True),
        _opened(1, 1.6),
        _request(1, 1.7, call),
    ]
    assert not _plan([call], events)[3]["main"].is_outage


def test_a_close_naming_several_calls_is_no_calls_reset() -> None:
    one, two = _call(3, "a", 1.0, 2.0), _call(5, "b", 1.1, 2.0)
    events: list[Event] = [_opened(1, 1.2), _refused(1, 1.3, one, two)]
    plan = _plan([one, two], events)
    assert all(not routes["main"].is_outage for routes in plan.values())


def test_a_connection_open_when_the_call_begins_is_kept() -> None:
    first, second = _call(3, "a", 1.0, 1.1), _call(5, "b", 2.0, 2.1)
    events: list[Event] = [_opened(1, 1.01), _request(1, 1.02, first)]
    plan = _plan([first, second], events)
    # Nothing open yet, but no outage before it: the new build's connections are left alone.
    assert 3 not in plan
    assert 5 not in plan  # the connection was open: the call is served as it was


def test_a_call_marked_as_made_while_a_route_was_down_is_refused_there() -> None:
    """The call's request frame carries the decision (``routes_down``): it stands, whatever
    the upstream lines' times would say (here they say nothing: a span is ahead of it)."""
    first = _call(0, "list_layers", 1.0, 1.1)
    second = dataclasses.replace(
        _call(1, "create_layer", 2.0, 2.1), routes_down=(RouteDown(route="main", since=1.05),)
    )
    events: list[Event] = [_opened(5, 1.01), _refused(5, 1.02, first), _upstream(3.0, False)]
    plan = outage_plan(McpScript([first, second], MCP_CONN, {}), events)
    assert plan.for_step(1)["main"].refused
    assert not plan.for_step(0)["main"].refused  # its own connection was reset, before any span


def test_connections_open_at_a_call_are_counted_from_sorted_times() -> None:
    """Open when the call began: opened before it and closed after it. A close written
    ahead of its open (a hostile file) never makes a connection open, nor a count negative."""
    calls = [_call(i, "list_layers", float(i), float(i) + 0.5) for i in range(4)]
    events: list[Event] = [
        _upstream(-1.0, up=False),  # an outage around every call: connections may be dropped
        _upstream(9.0, up=True),
        _opened(5, 0.5),  # open from 0.5 to 2.5: calls 1 and 2 find it open
        ConnectionClosed(conn=5, route="main", reason="", t=2.5),
        _opened(6, 2.7),  # closed before it opened
        ConnectionClosed(conn=6, route="main", reason="", t=0.2),
        ConnectionClosed(conn=7, route="main", reason="", t=0.1),  # no open read
    ]
    plan = outage_plan(McpScript(calls, MCP_CONN, {}), events)
    assert [plan.for_step(i).get("main", RouteOutage()).drop_open for i in range(4)] == [
        True,
        False,
        False,
        True,
    ]


def test_a_call_after_a_quiet_stretch_with_no_connection_open_keeps_the_new_builds() -> None:
    """No connection open when a call began is no reason to close the new build's, unless
    the route went down since the call before: a server that connects for each call, or
    whose connection the idle timeout closed, is served as it was."""
    calls = [_call(i, "list_layers", float(i), float(i) + 0.5) for i in range(3)]
    events: list[Event] = [
        _opened(5, 0.1),
        _request(5, 0.2, calls[0]),
        ConnectionClosed(conn=5, route="main", reason="client closed", t=0.6),
        _upstream(1.5, up=False),  # between the second call and the third
        _upstream(1.7, up=True),
    ]
    plan = outage_plan(McpScript(calls, MCP_CONN, {}), events)
    assert [plan.for_step(i).get("main", RouteOutage()).drop_open for i in range(3)] == [
        False,
        False,
        True,
    ]


def _found_dead(conn: int, t: float) -> ConnectionClosed:
    return ConnectionClosed(
        conn=conn,
        route="main",
        reason="upstream closed; the client's next bytes were refused (reset)",
        t=t,
        bytes_c2s=120,
        bytes_s2c=200,
        abnormal=True,
        gone_before_write=True,
    )


def test_a_connection_the_plugin_left_while_idle_is_reset_for_the_call_that_found_it() -> None:
    """The plugin went away and came back between two calls while the server's connection sat
    idle: the second call's request met a reset on it (the close says so, decided where the
    proxy held the plugin's close), however long the plugin had been back. That call alone
    has its open connections reset; the route never went down."""
    first = _call(1, "list_layers", 1.0, 1.1)
    second = _call(3, "create_layer", 5.0, 5.2)
    third = _call(5, "list_layers", 6.0, 6.1)
    events: list[Event] = [
        _opened(2, 1.01),
        _request(2, 1.02, first),
        _request(2, 5.01, second),
        _found_dead(2, 5.05),
        _opened(3, 6.01),
        _request(3, 6.02, third),
    ]
    assert _plan([first, second, third], events) == {3: {"main": RouteOutage(reset_open=True)}}
    assert RouteOutage(reset_open=True).is_outage


def test_a_connection_found_dead_that_the_call_opened_itself_is_no_reset_at_its_start() -> None:
    """Only a connection open when the call began was left by the plugin before it: one the
    call opened and found dead later is the call's own (nothing to reset as it begins)."""
    call = _call(1, "layer_report", 1.0, 3.0)
    events: list[Event] = [_opened(2, 1.5), _request(2, 1.6, call), _found_dead(2, 2.5)]
    assert _plan([call], events) == {}


def test_only_the_call_whose_bytes_met_the_dead_connection_is_reset() -> None:
    """Overlapping calls on one connection: the first one's request crossed it while the
    plugin was there, the second one's met the reset. The second alone is planned so (the
    connection's last request frame names it); a close naming no call alone plans none."""
    slow = _call(1, "boolean_union", 1.0, 10.0)
    quick = _call(3, "list_layers", 5.0, 6.0)
    events: list[Event] = [
        _opened(2, 0.5),
        _request(2, 1.1, slow),
        _request(2, 5.6, quick),
        _found_dead(2, 5.7),
    ]
    assert _plan([slow, quick], events) == {3: {"main": RouteOutage(reset_open=True)}}
    ambiguous = dataclasses.replace(_request(2, 5.6, quick), tool_calls=(_ref(slow), _ref(quick)))
    events[2] = ambiguous
    assert _plan([slow, quick], events) == {}


def _frame(conn: int, t: float, call: ClientStep, index: int, payload: bytes = b"{}") -> FrameSeen:
    """A request frame of ``call`` (expecting an answer) that is the ``index``-th the server
    wrote on ``conn``."""
    message = Request(id=f"r{index}", method="scene.list_layers", params={}, obj={})
    return FrameSeen(
        conn=conn, route="main", direction=Direction.C2S, index=index, t=t, size=10,
        payload=payload, message=message, tool_calls=(_ref(call),), expects_answer=True,
    )  # fmt: skip


def _answer(conn: int, t: float, call: ClientStep, index: int) -> FrameSeen:
    message = Response(id=f"r{index}", result={}, obj={})
    return FrameSeen(
        conn=conn, route="main", direction=Direction.S2C, index=index, t=t, size=10,
        payload=b"{}", message=message, tool_calls=(_ref(call),), answers=index,
    )  # fmt: skip


def _ended(conn: int, t: float, *unanswered: int) -> StreamEnded:
    return StreamEnded(conn=conn, route="main", direction=Direction.S2C, t=t, unanswered=unanswered)


def _closed_after_end(conn: int, t: float, *, refused: bool) -> ConnectionClosed:
    reason = "upstream closed; the client's next bytes were refused (reset)"
    return ConnectionClosed(
        conn=conn, route="main", reason=reason if refused else "client closed", t=t,
        abnormal=refused,
    )  # fmt: skip


def test_a_request_written_to_a_connection_the_plugin_had_left_never_reached_it() -> None:
    """The plugin stopped while the server sat idle: the next call's request was written to
    the dead connection and refused (``gone_before_write``), then its reconnect was reset
    and the route went down. Nothing of that call reached the plugin, so it is planned
    refused after its reset, not served on a reconnect (the real server retries at once)."""
    first = _call(2, "list_layers", 1.0, 1.1)
    second = _call(3, "list_layers", 2.0, 2.1)
    events: list[Event] = [
        _opened(2, 1.01),
        _frame(2, 1.02, first, 0),
        _answer(2, 1.03, first, 0),
        _frame(2, 2.01, second, 1),
        _found_dead(2, 2.02),
        _opened(3, 2.03),
        _upstream(2.04, up=False),
        _refused(3, 2.05, second),
    ]
    plan = _plan([first, second], events)
    assert plan[3]["main"] == RouteOutage(resets=1, refused=True, reset_open=True)


def test_the_plugin_ending_under_a_call_plans_its_unanswered_requests_unanswered() -> None:
    """The plugin was killed while a slow call's request waited: the ``end`` line names it.
    That call is planned with the request the plugin never answered (the stand-in ends its
    side when it comes); the next call's request, written after the end to the same
    connection and refused with a reset (the close), never reached the plugin, and is
    planned nothing of its own: the ended connection resets it."""
    first = _call(2, "list_layers", 1.0, 1.1)
    slow = _call(3, "execute_python", 2.0, 2.8)
    later = _call(4, "list_layers", 5.0, 5.1)
    events: list[Event] = [
        _opened(2, 1.01),
        _frame(2, 1.02, first, 0),
        _answer(2, 1.03, first, 0),
        _frame(2, 2.01, slow, 1, b'{"id":"x","method":"scripting.execute_python"}'),
        _ended(2, 2.7, 1),
        _frame(2, 5.01, later, 2),
        _closed_after_end(2, 5.02, refused=True),
    ]
    ended = PluginEnd((b'{"id":"x","method":"scripting.execute_python"}',), reset_after=True)
    assert _plan([first, slow, later], events) == {3: {"main": RouteOutage(ends=(ended,))}}
    assert RouteOutage(ends=(ended,)).is_outage
    # Had the route been down from the end on, the later call would be refused there: its
    # request was never taken.
    down = [*events, _upstream(2.75, up=False)]
    assert _plan([first, slow, later], down)[4]["main"].refused


def test_requests_taken_after_the_plugins_end_are_not_reset() -> None:
    """A clean close after frames written past the end: they were taken, never answered, so
    the stand-in drops the server's later bytes rather than resetting them; with nothing
    written after the end (or the recording cut short), a reset, as from a plugin gone."""
    slow = _call(3, "execute_python", 2.0, 2.8)
    later = _call(4, "list_layers", 5.0, 5.1)
    ended = [_opened(2, 1.0), _frame(2, 2.01, slow, 0), _ended(2, 2.7, 0)]
    taken = [*ended, _frame(2, 5.01, later, 1), _closed_after_end(2, 5.02, refused=False)]
    assert not _plan([slow, later], taken)[3]["main"].ends[0].reset_after
    for events in (ended, [*ended, _closed_after_end(2, 3.0, refused=False)]):
        assert _plan([slow, later], events)[3]["main"].ends[0].reset_after


def test_an_end_naming_a_request_of_no_one_call_plans_none() -> None:
    slow = _call(3, "execute_python", 2.0, 2.8)
    other = _call(5, "list_layers", 2.1, 2.8)
    ambiguous = dataclasses.replace(_frame(2, 2.01, slow, 0), tool_calls=(_ref(slow), _ref(other)))
    events: list[Event] = [_opened(2, 1.0), ambiguous, _ended(2, 2.7, 0)]
    assert _plan([slow, other], events) == {}


def test_a_connection_the_proxy_closed_while_idle_is_closed_before_the_next_call() -> None:
    """The proxy's ``--idle-timeout`` close between two calls is played as the next call
    begins, and is no outage; a close the proxy did not make is none of it."""
    first, second, third = _call(3, "a", 1.0, 1.1), _call(5, "b", 3.0, 3.1), _call(7, "c", 5.0, 5.1)
    idle = ConnectionClosed(conn=1, route="main", reason="idle for 1 s (--idle-timeout)", t=2.1)
    events: list[Event] = [
        _opened(1, 1.01),
        _request(1, 1.02, first),
        idle,
        _opened(2, 3.01),
        _request(2, 3.02, second),
        dataclasses.replace(idle, conn=2, reason="client closed", t=4.0),
    ]
    plan = _plan([first, second, third], events)
    assert plan == {5: {"main": RouteOutage(idle_closed=1)}}
    assert not plan[5]["main"].is_outage
