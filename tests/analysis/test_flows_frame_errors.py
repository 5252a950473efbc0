"""A framing error's row carries the violation the tap reports right after it."""

from __future__ import annotations

from golem_core.contract import Severity
from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import FlowTracker
from tests.support.trace_builder import golem_session


def test_framing_error_rows_carry_their_violation() -> None:
    tracker = FlowTracker(GOLEM)
    for event in golem_session().events:
        tracker.apply(event)
    errored = [flow for flow in tracker.flows if flow.frame_error is not None]
    assert [flow.frame_error.kind.value for flow in errored if flow.frame_error] == [
        "oversized",
        "truncated",
    ]
    assert [[v.rule for v in flow.violations] for flow in errored] == [
        ["golem.frame.oversized"],
        ["golem.frame.truncated"],
    ]
    assert all(flow.worst_severity is Severity.ERROR for flow in errored)
