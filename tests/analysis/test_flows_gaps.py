"""A gap in what was observed is a row of its own in every view built on flows, and it
survives the round trip through a recording."""

from __future__ import annotations

from pathlib import Path

from golem_core.profiles import GOLEM
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import ConnectionOpened, Direction, GapReason, ObservationLost
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo, read_recording
from tests.support.cli_helpers import run_cli
from tests.support.frames import too_large_gap
from tests.support.restarts import restart_gap

GAP = too_large_gap()


def test_a_gap_becomes_a_flow_with_its_size_and_status() -> None:
    tracker = FlowTracker(GOLEM)
    tracker.apply(ConnectionOpened(conn=1, route="main", client="c", upstream="u", t=0.0))
    flow = tracker.apply(GAP)
    assert flow is not None and flow.gap is GAP
    assert flow.status(GOLEM) == "unobserved:frame-too-large"
    assert flow.response_size == 40 << 20 and flow.request_size is None
    assert not flow.pending and not flow.is_error
    assert tracker.connections[1].bytes_s2c == 40 << 20


def test_a_recorded_gap_reads_back_and_shows(tmp_path: Path) -> None:
    path = tmp_path / "gap.jsonl"
    writer = RecordingWriter.create(
        str(path), Header.new("golem", [RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2")])
    )
    writer.write(ConnectionOpened(conn=1, route="main", client="c", upstream="u", t=0.0))
    writer.write(GAP)
    writer.close()
    events = read_recording(str(path)).events
    assert [type(e).__name__ for e in events] == ["ConnectionOpened", "ObservationLost"]
    assert events[1].digest == GAP.digest and events[1].header == GAP.header
    shown = run_cli("show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "unobserved:frame-too" in shown.stdout  # the status column may cut it


def test_a_restart_is_a_row_and_tells_which_connections_the_new_process_recorded() -> None:
    """The session's restart row, then a connection's: its bytes counted as any gap's; a
    connection with a line after the restart is the new observing process's, one without is
    left as the old one had it."""
    tracker = FlowTracker(GOLEM)
    for conn in (1, 2):
        tracker.apply(ConnectionOpened(conn=conn, route="main", client="c", upstream="u", t=0.0))
    session = ObservationLost(
        conn=0, route="", direction=Direction.C2S, t=1.0, reason=GapReason.RESTARTED, size=0
    )
    flow = tracker.apply(session)
    assert flow is not None and flow.status(GOLEM) == "unobserved:restarted"
    assert tracker.observer == 1
    gap = tracker.apply(restart_gap(1, 1.1, 57, Direction.S2C))
    assert gap is not None and gap.status(GOLEM) == "unobserved:restarted"
    assert gap.response_size == 57 and not gap.pending and not gap.is_error
    tracker.apply(ConnectionOpened(conn=3, route="main", client="c", upstream="u", t=1.2))
    assert tracker.connections[1].bytes_s2c == 57
    assert [tracker.connections[conn].observer for conn in (1, 2, 3)] == [1, 0, 1]
