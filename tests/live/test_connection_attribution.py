"""The decision for a GOLEM connection that carried nothing, on its own: the calls in flight
when it opened, on its close, only when no byte crossed it."""

from __future__ import annotations

from golem_core.profiles import MCP
from golem_proxy.events import ConnectionClosed, ConnectionOpened
from golem_proxy.live.attribution import ToolCallTracker
from golem_proxy.live.connection_attribution import MAX_NOTED, ConnectionAttribution
from tests.live.test_attribution import answer, call


def opened(conn: int) -> ConnectionOpened:
    return ConnectionOpened(conn=conn, route="main", client="c", upstream="u", t=0.0)


def closed(conn: int, sent: int = 0, received: int = 0) -> ConnectionClosed:
    return ConnectionClosed(
        conn=conn,
        route="main",
        reason="upstream 127.0.0.1:9 unreachable: Connection refused",
        t=1.0,
        bytes_c2s=sent,
        bytes_s2c=received,
        abnormal=True,
    )


def tools(event: ConnectionClosed) -> list[str]:
    assert event.tool_calls is not None
    return [ref.tool for ref in event.tool_calls]


def test_the_calls_in_flight_at_the_open_not_at_the_close() -> None:
    tracker = ToolCallTracker(MCP)
    connections = ConnectionAttribution(tracker)
    tracker.watch(call(0, "a", "create_box"))
    connections.opened(opened(2))
    tracker.watch(answer(0, "a"))  # the call gave up while the upstream did not answer
    tracker.watch(call(1, "b", "list_layers"))
    assert tools(connections.closed(closed(2))) == ["create_box"]


def test_outside_any_call_and_overlapping_calls() -> None:
    tracker = ToolCallTracker(MCP)
    connections = ConnectionAttribution(tracker)
    connections.opened(opened(2))
    assert tools(connections.closed(closed(2))) == []
    tracker.watch(call(0, "a", "create_box"))
    tracker.watch(call(1, "b", "list_layers"))
    connections.opened(opened(3))
    assert tools(connections.closed(closed(3))) == ["create_box", "list_layers"]


def test_a_connection_a_byte_crossed_decides_nothing() -> None:
    tracker = ToolCallTracker(MCP)
    connections = ConnectionAttribution(tracker)
    tracker.watch(call(0, "a", "create_box"))
    for conn, sent, received in ((2, 17, 0), (3, 0, 5)):
        connections.opened(opened(conn))
        assert connections.closed(closed(conn, sent, received)).tool_calls is None


def test_a_close_whose_open_was_not_seen_decides_nothing() -> None:
    """A connection opened before a new observing process took over (or let go past the
    bound): no decision rather than a guessed one."""
    tracker = ToolCallTracker(MCP)
    connections = ConnectionAttribution(tracker)
    tracker.watch(call(0, "a", "create_box"))
    assert connections.closed(closed(2)).tool_calls is None
    for conn in range(10, 10 + MAX_NOTED + 1):
        connections.opened(opened(conn))
    assert connections.closed(closed(10)).tool_calls is None  # the oldest, let go
    assert tools(connections.closed(closed(11))) == ["create_box"]
    assert connections.closed(closed(11)).tool_calls is None  # decided once
