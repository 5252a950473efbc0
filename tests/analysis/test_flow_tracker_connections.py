"""`FlowTracker.connections`: a view that keeps every flow keeps every connection; a streaming
one (``keep=False``: `show`, `stats`) keeps the open ones only, and counts them all."""

from __future__ import annotations

from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import FlowTracker
from tests.support.sessions import SessionBuilder


def _session(connections: int) -> SessionBuilder:
    s = SessionBuilder(check=False)
    for conn in range(1, connections + 1):
        s.open(conn, float(conn))
        s.respond(s.request(conn, "ping", {}, conn + 0.1), conn + 0.2)
        if conn < connections:  # the last one stays open
            s.close(conn, conn + 0.3)
    return s


def test_a_streaming_view_forgets_closed_connections_and_counts_them() -> None:
    streaming, keeping = FlowTracker(GOLEM, keep=False), FlowTracker(GOLEM)
    for event in _session(50).events:
        streaming.apply(event)
        keeping.apply(event)
    assert list(streaming.connections) == [50] and streaming.connections[50].is_open
    assert streaming.connections_seen == keeping.connections_seen == 50
    assert len(keeping.connections) == 50


def test_a_line_naming_a_closed_connection_does_not_open_it_again() -> None:
    """A damaged file: a request after its connection's close. The streaming view let the
    connection go, and still knows it closed (a recording cut short is one whose
    connections never closed)."""
    s = _session(2)
    s.request(1, "ping", {}, 9.0)
    s.close(1, 9.5)  # and closed twice
    tracker = FlowTracker(GOLEM, keep=False)
    for event in s.events:
        tracker.apply(event)
    assert list(tracker.connections) == [2] and tracker.connections_seen == 2
