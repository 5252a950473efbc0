"""`FlowTracker.let_go`: the live TUI's bound lets its oldest settled flows go; pending ones
stay and are still answered, and what would have followed a row let go lands in none."""

from __future__ import annotations

from golem_core.contract import Violation
from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import ORPHAN_RULE, FlowTracker
from golem_proxy.events import Direction, ViolationSeen
from tests.support.frames import frame_seen
from tests.support.sessions import SessionBuilder


def _tracker_with(builder: SessionBuilder) -> FlowTracker:
    tracker = FlowTracker(GOLEM)
    for event in builder.events:
        tracker.apply(event)
    builder.events = []
    return tracker


def test_the_oldest_settled_flows_go_and_a_pending_one_stays_to_be_answered() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    waiting = s.request(1, "scene.list_objects", {}, 0.1)
    for i in range(5):
        s.respond(s.request(1, "ping", {}, 0.2 + i), 0.3 + i)
    tracker = _tracker_with(s)
    first = tracker.flows

    gone = tracker.let_go(3)

    assert [flow.number for flow in gone] == [2, 3, 4]
    assert [flow.number for flow in tracker.flows] == [1, 5, 6]
    assert tracker.flows is not first  # a new list: the caller remaps its indexes from the old
    s.respond(waiting, 9.0)
    answered = None
    for event in s.events:
        answered = tracker.apply(event) or answered
    assert answered is tracker.flows[0] and not answered.pending


def test_keep_spares_flows_and_fewer_go_when_the_rest_are_pending() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    for i in range(4):
        s.respond(s.request(1, "ping", {}, i + 0.1), i + 0.2)
    s.request(1, "scene.list_objects", {}, 9.0)
    tracker = _tracker_with(s)
    tracker.flows[0].marked = True

    gone = tracker.let_go(10, keep=lambda flow: flow.marked)

    assert [flow.number for flow in gone] == [2, 3, 4]
    assert [flow.number for flow in tracker.flows] == [1, 5]
    assert tracker.let_go(10, keep=lambda flow: flow.marked) == []


def test_what_follows_a_flow_let_go_lands_in_no_row() -> None:
    """An orphan answer's violation follows its frame; once its row is let go the tracker
    holds it no more (it would keep the row alive), and the violation is placed nowhere."""
    tracker = FlowTracker(GOLEM)
    orphan = frame_seen(GOLEM, Direction.S2C, 0, b'{"id":"x","result":{}}', orphan=True)
    (flow,) = [tracker.apply(orphan)]
    assert flow is not None and not flow.pending

    assert tracker.let_go(1) == [flow] and tracker.flows == []

    violation = ViolationSeen(
        conn=1,
        route="main",
        direction=Direction.S2C,
        frame_index=0,
        t=0.2,
        violation=Violation(ORPHAN_RULE, "answers no outstanding request"),
    )
    assert tracker.apply(violation) is None
    assert flow.violations == ()
