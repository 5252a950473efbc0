"""Compact rows: a recording's flows keep their payloads and compact messages, and every
view of them (table, detail pane, filters, find, export, copy-as-call) is what it was with
the parsed messages kept, read the fast way (`golem_proxy.recording.fast_reader`) as read by
the exact reader; what a loaded flow costs stays bounded."""

from __future__ import annotations

import dataclasses
import gc
import tracemalloc
from pathlib import Path
from typing import Any, Optional

from golem_proxy.analysis.flows import Flow
from golem_proxy.events import Event, FrameSeen
from golem_proxy.recording.format import Header
from golem_proxy.recording.reader import read_recording
from golem_proxy.recording.samples import samples
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import Progress, SourceInfo
from golem_proxy.tui.compact import compactor_for, is_compact
from golem_proxy.tui.export import call_command, request_json, save_events
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.sources import RecordingSource
from golem_proxy.tui.widgets.flows_table import row_cells
from tests.recording.test_v1_pairing import as_version_1, mixed
from tests.support.sessions import bulk_session, demo_session, write_recording

from .helpers import loaded, run
from .test_fast_reader import OTHER_LINES

FILTERS = [
    "",
    "~e",
    "~m get",
    "~q layer",
    "~s guid",
    "~s",
    "~q",
    "~c OBJECT_NOT_FOUND",
    "~violation",
    "~pending",
    "Default",
    "~s result & !~e",
    "~q \\d{3}",
]
FINDS = ["layer", "guid", "not_found", "ok", "zzz-not-there"]


def _traces(tmp_path: Path) -> list[str]:
    """The demo trace, a bulk one, the shipped samples, a version-1 file, a JSON-RPC session
    of every shape (pipelined, a server's request, an orphan, notifications), and a bulk
    trace with lines of other kinds among its exchanges (intercept, fault, gap, violation)."""
    demo = str(tmp_path / "demo.jsonl")
    write_recording(demo, demo_session())
    bulk = tmp_path / "bulk.jsonl"
    write_recording(str(bulk), bulk_session(300))
    lines = bulk.read_bytes().split(b"\n")
    lines[200:200] = list(OTHER_LINES)
    mingled = tmp_path / "mingled.jsonl"
    mingled.write_bytes(b"\n".join(lines))
    return [
        demo,
        str(bulk),
        *(str(path) for path in samples().values()),
        str(as_version_1(bulk, tmp_path / "v1.jsonl")),
        str(mixed(tmp_path / "mixed.jsonl")),
        str(mingled),
    ]


class _Folding:
    """A sink that folds each push into ``model`` at once (no app)."""

    def __init__(self, model: SessionModel) -> None:
        self.model = model

    def push_many(self, events: list[Event], progress: Optional[Progress] = None) -> int:
        self.model.apply(events)
        return len(events)

    def describe(self, info: SourceInfo) -> None:
        pass  # notes above the table: no app to show them

    def finish(self, reason: str = "", *, failed: bool = False) -> None:
        assert not failed, reason


def _load(path: str, *, compact: bool, exact: bool = False) -> SessionModel:
    source = RecordingSource.open(path, exact=exact)
    compactor = compactor_for(source, source.profile) if compact else None
    model = SessionModel(source.profile, compactor)
    source.run(_Folding(model))  # type: ignore[arg-type]
    model.loading = False
    return model


def _members(frame: Optional[FrameSeen]) -> Any:
    if frame is None:
        return None
    message = frame.message
    names = [f.name for f in dataclasses.fields(message)]
    parsed_class = next(c for c in type(message).__mro__ if c.__module__ == "golem_core.messages")
    return frame.payload, parsed_class, {name: getattr(message, name) for name in names}


def _written(model: SessionModel, path: Path) -> bytes:
    header = Header.new(model.profile.name, ())
    save_events(str(path), header, model.events_for_view(), model.filter_text)
    # The header's creation time differs from one file to the next; the events must not.
    return path.read_bytes().split(b"\n", 1)[1]


def test_compact_flows_show_what_parsed_ones_do(tmp_path: Path) -> None:
    for trace in _traces(tmp_path):
        # Read line by line and parsed, as against read the fast way and compact.
        full, compact = _load(trace, compact=False, exact=True), _load(trace, compact=True)
        assert len(full.flows) == len(compact.flows) > 0, trace
        compacted = [f for f in compact.flows if f.request is not None and is_compact(f.request)]
        assert compacted, f"nothing compacted in {trace}"
        for before, after in zip(full.flows, compact.flows):
            assert row_cells(before, full) == row_cells(after, compact), trace
            assert _members(before.request) == _members(after.request), trace
            assert _members(before.response) == _members(after.response), trace
            assert before.outcome == after.outcome
            assert request_json(before) == request_json(after)
            target = "127.0.0.1:9876"
            assert call_command(before, full.profile, target) == call_command(
                after, compact.profile, target
            )
        for number, text in enumerate(FILTERS):
            full.set_filter(text)
            compact.set_filter(text)
            assert full.view == compact.view, (trace, text)
            name = f"{Path(trace).stem}-{number}.jsonl"
            assert _written(full, tmp_path / f"full-{name}") == _written(
                compact, tmp_path / f"compact-{name}"
            ), (trace, text)
        full.set_filter("")
        compact.set_filter("")
        for needle in FINDS:
            for forward in (True, False):
                assert full.find(needle, 0, forward) == compact.find(needle, 0, forward)


def test_the_whole_view_written_out_is_the_recording_read(tmp_path: Path) -> None:
    """Frames and exchanges taken back from their flows write out as the events read."""
    # Not the mingled trace: a held request's intercept step and a gap note belong to no
    # flow, and a view holds only the events of its flows and their connections.
    for number, trace in enumerate(_traces(tmp_path)[:-1]):
        recording = read_recording(trace)
        expected = tmp_path / f"read-{number}.jsonl"
        save_events(str(expected), Header.new(recording.profile.name, ()), recording.events, "")
        for compact in (False, True):
            written = _written(
                _load(trace, compact=compact), tmp_path / f"{compact}-{number}.jsonl"
            )
            assert written == expected.read_bytes().split(b"\n", 1)[1], (trace, compact)


def test_every_event_of_a_compact_model_is_the_event_read(tmp_path: Path) -> None:
    """The event list keeps an exchange as a stand-in made again from its flow: equal to
    the one read."""
    trace = _traces(tmp_path)[0]
    full, compact = _load(trace, compact=False, exact=True), _load(trace, compact=True)
    before, after = full.events, compact.events
    assert len(before) == len(after)
    for one, other in zip(before, after):
        assert type(one) is type(other)
        if isinstance(one, FrameSeen):
            assert isinstance(other, FrameSeen)
            assert _members(one) == _members(other)
        elif not hasattr(one, "request"):
            assert one == other


def _parsed_source(path: str) -> RecordingSource:
    """A recording source, read line by line, that does not say how its routes were parsed:
    the TUI keeps its frames as read (as it keeps a live session's)."""
    source = RecordingSource.open(path, exact=True)
    source.route_profiles = None
    return source


def _detail_texts(source: RecordingSource) -> list[str]:
    async def body() -> list[str]:
        app = GolemProxyApp(source, source.profile, "test")
        texts = []
        async with app.run_test(size=(160, 50)) as pilot:
            await loaded(pilot)
            for flow in app.model.flows:
                app.detail.show(flow, app.profile, app.model.caused_by(flow))
                await pilot.pause()
                texts.append(app.detail.text())
        return texts

    return run(body())


def test_the_detail_pane_shows_a_compact_flow_as_a_parsed_one(demo_path: str) -> None:
    parsed = _parsed_source(demo_path)
    texts = _detail_texts(parsed)
    assert texts == _detail_texts(RecordingSource.open(demo_path))


MEMORY_FLOWS = 3000
MAX_BYTES_PER_FLOW = 1172  # 1,156 measured: two frames of 19 slots, their messages, the row
"""What one more loaded flow of `bulk_session` may cost (Python allocations, tracemalloc):
about 995 bytes with compact frames whose ids are read on demand (1,075 with the id kept,
about 2,200 with the parsed messages kept, and 3,460 before frames, flows and messages were
slotted; a row's slot more, `Flow.ended_waiting`, costs 8, as `Flow.answered_in` and
`Flow.unanswered_at` each do: 1,091; a frame's `late` and `answer_of`, 16 a frame, and the
row's `stderr` and `closed_by_proxy`: 1,139; the row's `proxy_under`, the proxy's steps under
a tool call: 1,156)."""


def _held_after_loading(path: str) -> tuple[int, int]:
    source = RecordingSource.open(path)
    model = SessionModel(source.profile, compactor_for(source, source.profile))
    gc.collect()
    tracemalloc.start()
    try:
        source.run(_Folding(model))  # type: ignore[arg-type]
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return held, len(model.flows)


def test_a_loaded_flow_costs_a_bounded_memory(tmp_path: Path) -> None:
    """Loading twice the flows costs twice the memory, and each flow at most
    MAX_BYTES_PER_FLOW: nothing kept per flow grows with the trace."""
    flows = MEMORY_FLOWS
    small, large = str(tmp_path / "small.jsonl"), str(tmp_path / "large.jsonl")
    write_recording(small, bulk_session(flows))
    write_recording(large, bulk_session(2 * flows))
    held_small, count_small = _held_after_loading(small)
    held_large, count_large = _held_after_loading(large)
    assert (count_small, count_large) == (flows, 2 * flows)
    per_flow = (held_large - held_small) / flows
    assert per_flow < MAX_BYTES_PER_FLOW, f"{per_flow:.0f} bytes a flow"
    assert held_large / held_small < 2.1


def test_a_flow_still_pending_keeps_its_parsed_request(demo_path: str) -> None:
    """Its answer is further on: the reader reads the request's message when it comes."""
    compact = _load(demo_path, compact=True)
    pending = [f for f in compact.flows if f.pending]
    assert pending
    assert all(f.request is not None and not is_compact(f.request) for f in pending)
    answered: list[Flow] = [
        f for f in compact.flows if f.response is not None and f.outcome and not f.outcome.failed
    ]
    assert answered
    assert all(f.response is not None and is_compact(f.response) for f in answered)
