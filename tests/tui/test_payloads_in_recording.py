"""A live TUI whose session records keeps no large payload in memory: the recorder notes where
each lies in the file (recording/payload_places.py) and the TUI reads it back when it is
needed (tui/payloads.py `payload_of`): the detail pane, copying, sending again and writing
the view all get the exact bytes; a recording that no longer holds them is said so, and a view
that cannot be written whole is not left behind."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest
from textual.widgets import Tree

from golem_core.messages import Role
from golem_core.profiles import GOLEM, Profile
from golem_proxy.commands._live_tui import live_source
from golem_proxy.events import Event, ExchangeCompleted, FrameSeen
from golem_proxy.live.recorder import Recorder
from golem_proxy.live.session import SessionConfig
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import RecordingWriter, read_recording
from golem_proxy.recording.payload_places import PayloadPlaces
from golem_proxy.testing.client import GolemClient
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.export import request_json, save_events
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.payloads import (
    MOST_WHOLE_COPIES,
    LeftToRecording,
    PayloadBudget,
    PayloadReleased,
    in_recording,
    payload_of,
    release_note,
)
from golem_proxy.tui.saving import left_out_line
from golem_proxy.tui.skeleton import BULK_NUMBERS
from tests.support.sessions import SessionBuilder, golem_header

from .helpers import ManualSource, large_answer_upstream, run, select, wait_for
from .terminal import Terminal, wait_until
from .test_live_proxy import bound_port, config_for, until_stopped
from .test_payloads import MIB, captures, large_request_session, mesh_answers, notices


def recorded(
    path: Path, events: list[Event], profile: Optional[Profile] = None
) -> tuple[list[Event], LeftToRecording]:
    """Record ``events`` at ``path`` as the session's recorder does, and give them on as the
    TUI's hub sink does (`LeftToRecording`, given the session's ``profile`` or not), the
    events first, one at a time."""
    places = PayloadPlaces(str(path))
    lighten = LeftToRecording(places, profile)
    recorder = Recorder(
        RecordingWriter.create(str(path), golem_header(), from_tap=True), places=places
    )
    given = []
    for event in events:
        recorder(event)
        given.append(lighten(event))
    recorder.close()
    return given, lighten


def originals(events: list[Event]) -> dict[tuple[int, str, int], bytes]:
    return {
        (e.conn, e.direction.value, e.index): e.payload for e in events if isinstance(e, FrameSeen)
    }


def test_large_payloads_are_not_kept_and_read_back_exactly(tmp_path: Path) -> None:
    events = captures(6, small_between=True)
    path = tmp_path / "session.jsonl"
    given, lighten = recorded(path, events)
    budget = PayloadBudget(keep=5 * MIB, recording=str(path))
    model = SessionModel(GOLEM, payload_budget=budget)
    model.apply(given)
    assert budget.kept == 0 and budget.released == 0
    assert lighten.count == 6  # the answers; the requests and pings are small
    # The exchanges name the very frames the TUI was given.
    exchanges = [e for e in given if isinstance(e, ExchangeCompleted)]
    assert all(in_recording(e.response) is not None for e in exchanges[::2])
    payloads = originals(events)
    for flow in model.flows:
        for frame in (flow.request, flow.response):
            assert frame is not None
            if flow.method == "viewport.capture" and frame is flow.response:
                assert in_recording(frame) is not None
                assert release_note(frame) is None  # nothing to say: the bytes are there
            key = (frame.conn, frame.direction.value, frame.index)
            assert payload_of(frame) == payloads[key]
    # The view is written whole, each payload read back as it is written.
    saved = model.view_to_save()
    assert saved.left_out == 0 and saved.flows == 12
    view = tmp_path / "view.jsonl"
    save_events(str(view), golem_header(), saved.events, "")
    written = read_recording(str(view))
    assert [f.payload for f in written.events if isinstance(f, FrameSeen)] == [
        e.payload for e in events if isinstance(e, FrameSeen)
    ]


def test_a_recording_that_no_longer_holds_them_is_said_so(tmp_path: Path) -> None:
    events = captures(3)
    path = tmp_path / "session.jsonl"
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(recording=str(path)))
    model.apply(recorded(path, events)[0])
    before_the_cut = model.view_to_save()
    os.truncate(path, path.stat().st_size // 2)
    last = model.flows[-1].response
    assert last is not None
    cut_short = f"the recording {path} ends before it (cut short)"
    with pytest.raises(PayloadReleased) as caught:
        payload_of(last)
    assert str(caught.value) == f"payload not read back: {cut_short}"
    # A view written now leaves out the flows whose answers the cut took, and says why:
    # found by the writing thread (`checked`), not where the screen's thread takes the view.
    taken = model.view_to_save()
    assert (taken.flows, taken.lost, len(taken.in_recording)) == (3, 0, 3)
    saved = taken.checked()
    assert (saved.flows, saved.lost, saved.lost_why) == (1, 2, cut_short)
    assert len(saved.events) < len(taken.events) and len(saved.owners) == len(saved.events)
    line = left_out_line(saved, model)
    assert line == f"2 flows left out, payloads not read back: {cut_short}"
    view = tmp_path / "view.jsonl"
    save_events(str(view), golem_header(), saved.events, "", line)
    written = read_recording(str(view))
    assert written.header.extra["left_out"] == line
    assert [e.response.payload for e in written.exchanges()] == [
        e.response.payload for e in events if isinstance(e, ExchangeCompleted)
    ][:1]
    # Cut while the view was being written (it was checked before): writing it stops at that
    # payload, and leaves no file that looks cut short.
    late = tmp_path / "late.jsonl"
    with pytest.raises(PayloadReleased):
        save_events(str(late), golem_header(), before_the_cut.events, "")
    assert not late.exists()


def test_the_detail_pane_copy_resend_and_save_read_the_bytes_back(tmp_path: Path) -> None:
    events = large_request_session()
    path = tmp_path / "session.jsonl"
    given, lighten = recorded(path, events)
    budget = PayloadBudget(keep=3 * MIB, recording=str(path))
    app = GolemProxyApp(
        ManualSource(given),
        GOLEM,
        "test",
        payload_budget=budget,
        resend_target=Address("127.0.0.1", 9),
    )
    mesh_request = next(e for e in events if isinstance(e, FrameSeen))

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 4)
            assert budget.kept == 0 and lighten.count == 4
            assert "released" not in app.status_bar.text
            await select(pilot, 0)
            assert "released" not in app.detail.text()
            assert "bytes elided>" in app.detail.text()  # the row's message, as the tap had it
            # Copying the elided request copies the request the payload held, read back.
            flow = app.model.flows[0]
            assert in_recording(flow.request) is not None
            assert '"mesh": "BBBB' in request_json(flow)
            await pilot.press("r")  # sent: to a port nobody listens on, which is said
            await wait_for(pilot, lambda: "cannot reach 127.0.0.1:9" in notices(app)[-1])
            assert "sending flow 1 again…" in notices(app)
            saved = tmp_path / "view.jsonl"
            await pilot.press("w")
            await pilot.press("ctrl+a", "ctrl+k", *str(saved), "enter")
            await wait_for(pilot, lambda: any("Wrote" in n for n in notices(app)))
            assert [n for n in notices(app) if "Wrote" in n] == [
                f"Wrote 4 flows (13 events) to {saved}"
            ]
            first = next(e for e in read_recording(str(saved)).events if isinstance(e, FrameSeen))
            assert first.payload == mesh_request.payload
            # The recording cut: writing the view again leaves those flows out, and says why.
            os.truncate(path, 100)
            again = tmp_path / "again.jsonl"
            await pilot.press("w")
            await pilot.press("ctrl+a", "ctrl+k", *str(again), "enter")
            await wait_for(pilot, lambda: "Wrote 0 flows" in notices(app)[-1])
            assert notices(app)[-1].endswith(
                "; 4 flows left out, payloads not read back: "
                f"the recording {path} ends before it (cut short)"
            )
            assert read_recording(str(again)).exchanges() == []

    run(body())


def test_a_malformed_frame_shows_the_start_of_its_bytes_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[int] = []
    pread = os.pread

    def counted(fd: int, size: int, offset: int) -> bytes:
        data = pread(fd, size, offset)
        read.append(len(data))
        return data

    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    raw = b'{"id": "q1", "method": 7, "params": "' + b"A" * 200_000 + b'"}'
    s.request(1, "viewport.capture", {}, 0.1, raw=raw)  # its method is a number: malformed
    path = tmp_path / "session.jsonl"
    given, lighten = recorded(path, s.events)
    assert lighten.count == 1
    app = GolemProxyApp(
        ManualSource(given), GOLEM, "test", payload_budget=PayloadBudget(recording=str(path))
    )

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 1)
            await select(pilot, 0)
            monkeypatch.setattr(os, "pread", counted)
            await pilot.press("e")  # the pane drawn again, its bytes read again
            await wait_for(pilot, lambda: bool(read))
            text = app.detail.text()
            assert "malformed:invalid-method" in text
            # Only what the dump shows is read, with the line's start and end around it.
            assert 4096 < sum(read) < 4096 + 1024
            # The hex dump's 4 KiB, read back, and what it leaves out of the whole payload.
            assert (
                '00000000  7b 22 69 64 22 3a 20 22  71 31 22 2c 20 22 6d 65  |{"id": "q1", "me|'
                in text
            )
            assert f"… {len(raw) - 4096:,} more bytes" in text
            os.truncate(path, 300)
            await pilot.press("e")  # the pane drawn again: the bytes read again
            await wait_for(pilot, lambda: "(cut short)" in app.detail.text())
            assert "00000000" not in app.detail.text()

    run(body())


@pytest.fixture
def large_answers() -> Iterator[Address]:
    """An upstream that answers every GOLEM call with a 1 MiB result string."""
    with large_answer_upstream(MIB) as address:
        yield address


def test_a_live_session_reads_its_answers_back_from_its_recording(
    tmp_path: Path, large_answers: Address
) -> None:
    record = tmp_path / "live.jsonl"
    places = PayloadPlaces(str(record))
    config: SessionConfig = dataclasses.replace(
        config_for(large_answers, record), payload_places=places
    )
    source = live_source(config)
    budget = PayloadBudget(recording=str(record))
    answers: list[object] = []

    def client(port: int) -> None:
        # Connecting pings first: four calls, each answered with 1 MiB.
        with GolemClient("127.0.0.1", port, timeout=10) as golem:
            answers.extend(golem.send_command("viewport.capture") for _ in range(3))

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "live", payload_budget=budget)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: "GOLEM_RHINO_PORT=" in app.banner.text)
            worker = threading.Thread(target=client, args=(bound_port(app),))
            worker.start()
            await wait_for(
                pilot,
                lambda: (
                    len(app.model.flows) == 4
                    and all(flow.response is not None for flow in app.model.flows)
                    and not worker.is_alive()
                ),
            )
            assert budget.kept == 0
            for flow in app.model.flows:
                assert flow.response is not None and in_recording(flow.response) is not None
                answer = payload_of(flow.response)  # read back from the live recording
                assert answer.endswith(b"C" * MIB + b'","error":null}')
        await until_stopped(source)

    run(body())
    assert answers == ["C" * MIB] * 3


def test_the_tui_of_one_process_writes_the_view_with_answers_read_back(
    tmp_path: Path, large_answers: Address
) -> None:
    """``proxy --tui --observer in-process`` on a terminal: the places the session's recorder
    notes reach the TUI of the same process (commands/_live_tui.py)."""
    terminal = Terminal(
        "proxy", "--tui", "--observer", "in-process",
        "--route", f"main@127.0.0.1:0={large_answers}", "--record", "live.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    try:
        port = int(terminal.wait_for(r"GOLEM_RHINO_PORT=(\d+)").group(1))
        with GolemClient("127.0.0.1", port, timeout=10) as golem:  # its ping, then a call
            assert golem.send_command("viewport.capture") == "C" * MIB
        terminal.wait_for(r"2 flows")
        terminal.type("w")
        terminal.wait_for("Write the")
        terminal.type("\r")  # to the path offered: view.jsonl where the proxy runs
        mark = terminal.wait_for(r"Wrote 2 flows").end()
        os.rename(tmp_path / "view.jsonl", tmp_path / "first.jsonl")
        # The bytes are the recording's, not the TUI's: with the recording cut, `w` leaves
        # out both flows (each answered with 1 MiB) and says why.
        os.truncate(tmp_path / "live.jsonl", 100)
        terminal.type("w")
        terminal.wait_for("Write the")
        terminal.type("\r")
        assert wait_until(lambda: "Wrote 0 flows" in terminal.text()[mark:])
        cut = read_recording(str(tmp_path / "view.jsonl"))
        assert cut.exchanges() == []
        assert cut.header.extra["left_out"] == (
            "2 flows left out, payloads not read back: "
            f"the recording {tmp_path / 'live.jsonl'} ends before it (cut short)"
        )
        terminal.type("\x03")
        assert terminal.exit_code() == 0, terminal.text()[-2000:]
    finally:
        terminal.close()
    view = read_recording(str(tmp_path / "first.jsonl"))
    answers = [exchange.response.payload for exchange in view.exchanges()]
    assert len(answers) == 2
    assert all(answer.endswith(b"C" * MIB + b'","error":null}') for answer in answers)


class DiskFullAfter(io.BytesIO):
    """A disk that takes ``room`` bytes of lines (no descriptor), then fails every write."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def writelines(self, lines: object) -> None:
        data = b"".join(lines)  # type: ignore[arg-type]
        if len(data) > self.room:
            raise OSError(28, "No space left on device")
        self.room -= len(data)
        super().write(data)


def test_a_view_leaves_out_the_flows_whose_payloads_never_reached_the_recording(
    tmp_path: Path,
) -> None:
    events = captures(4, small_between=True)
    path = tmp_path / "session.jsonl"
    places = PayloadPlaces(str(path))
    disk = DiskFullAfter(room=0)
    recorder = Recorder(
        RecordingWriter(disk, golem_header(), from_tap=True), places=places, on_error=lambda _: None
    )
    lighten = LeftToRecording(places)
    given = []
    for event in events:
        recorder(event)
        given.append(lighten(event))
    recorder.close()
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(recording=str(path)))
    model.apply(given)
    saved = model.view_to_save()
    assert (saved.flows, saved.left_out, saved.lost) == (4, 0, 4)  # the pings are written
    assert saved.lost_why == (
        f"the recording {path} stopped before it was written ([Errno 28] No space left on device)"
    )
    assert (
        left_out_line(saved, model) == f"4 flows left out, payloads not read back: {saved.lost_why}"
    )
    view = tmp_path / "view.jsonl"
    save_events(str(view), golem_header(), saved.events, "", left_out_line(saved, model))
    assert [e.method for e in read_recording(str(view)).exchanges()] == ["ping"] * 4


def test_an_answer_under_1_mib_left_to_the_recording_keeps_no_blob_in_its_message(
    tmp_path: Path,
) -> None:
    # The tap types a frame under 1 MiB whole: its message holds the 300 KB image string.
    events = captures(2, 300_000)
    answer = originals_in_order(events)[0]
    assert answer.elided == 0 and len(answer.message.obj["result"]["image"]) == 300_000  # type: ignore[attr-defined]
    given, _ = recorded(tmp_path / "session.jsonl", events, GOLEM)
    answers = [e for e in given if isinstance(e, FrameSeen) and not e.is_request]
    for frame, original in zip(answers, originals_in_order(events), strict=True):
        assert in_recording(frame) is not None and frame.elided == 300_000
        result = frame.message.obj["result"]  # type: ignore[attr-defined]
        assert result == {
            "tag": original.message.obj["result"]["tag"],
            "image": "<300000 bytes elided>",
        }  # type: ignore[attr-defined]
        assert payload_of(frame) == original.payload
    # The exchanges name the copies, whose outcome the tap decided on the whole message.
    exchanges = [e for e in given if isinstance(e, ExchangeCompleted)]
    assert [e.response for e in exchanges] == answers
    assert all(e.response is answer for e, answer in zip(exchanges, answers, strict=True))


def originals_in_order(events: list[Event]) -> list[FrameSeen]:
    return [e for e in events if isinstance(e, FrameSeen) and not e.is_request]


def test_only_the_frames_placed_for_them_come_without_their_payloads() -> None:
    places = PayloadPlaces("session.jsonl")
    lighten = LeftToRecording(places)
    events = captures(2)
    first, second = [e for e in events if isinstance(e, FrameSeen) and not e.is_request]
    for answer, size in ((first, len(first.payload)), (second, len(second.payload) - 1)):
        key = (answer.route, answer.conn, answer.direction.value, answer.index)
        places.note(key, 0, size, b"{")  # the second's is not its own: another size
    given = [lighten(event) for event in events]
    frames = [e for e in given if isinstance(e, FrameSeen)]
    assert [in_recording(frame) is not None for frame in frames] == [False, True, False, False]
    assert frames[3] is second and lighten.count == 1
    exchanges = [e for e in given if isinstance(e, ExchangeCompleted)]
    assert exchanges[0].response is frames[1]  # the exchange names the copy the TUI has
    assert exchanges[1] is events[-1]  # untouched


def test_a_connection_whose_flows_the_recording_lost_is_not_written_empty(
    tmp_path: Path,
) -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    s.open(2, 0.0)
    ping = s.request(1, "ping", {}, 0.1)
    s.respond(ping, 0.2, result={"pong": True})
    capture = s.request(2, "viewport.capture", {}, 0.3)
    s.respond(capture, 0.4, result={"image": "A" * 200_000})
    s.close(1, 0.5)
    s.close(2, 0.6)
    path = tmp_path / "session.jsonl"
    model = SessionModel(GOLEM, payload_budget=PayloadBudget(recording=str(path)))
    model.apply(recorded(path, s.events)[0])
    lines = path.read_bytes().split(b"\n")
    answer = next(n for n, line in enumerate(lines) if b'"A' in line and b'"dir":"s2c"' in line)
    path.write_bytes(b"\n".join(lines[:answer]) + b"\n")  # the capture's answer cut off
    saved = model.view_to_save().checked()
    assert (saved.flows, saved.lost) == (1, 1)
    # Connection 2 carried only the flow left out: neither its open nor its close is written.
    assert {getattr(e, "conn", None) for e in saved.events} == {1}
    view = tmp_path / "view.jsonl"
    save_events(str(view), golem_header(), saved.events, "")
    assert [e.method for e in read_recording(str(view)).exchanges()] == ["ping"]


def test_an_answer_of_numbers_left_to_the_recording_keeps_none_in_its_message(
    tmp_path: Path,
) -> None:
    # The tap types it whole: 16,384 numbers parsed, four times their text, held by the row
    # after its bytes had gone. The row keeps a placeholder; the detail pane shows them whole.
    events = mesh_answers(2)
    given, _ = recorded(tmp_path / "session.jsonl", events, GOLEM)
    answers = [e for e in given if isinstance(e, FrameSeen) and not e.is_request]
    for frame, original in zip(answers, originals_in_order(events), strict=True):
        assert in_recording(frame) is not None and payload_of(frame) == original.payload
        assert frame.message.obj["result"]["vertices"] == [  # type: ignore[attr-defined]
            f"<{2 * BULK_NUMBERS} numbers elided>"
        ]
    app = GolemProxyApp(ManualSource(given), GOLEM, "test", payload_budget=PayloadBudget())

    async def body() -> None:
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 2)
            assert [app.model.status(flow) for flow in app.model.flows] == ["ok", "ok"]
            await select(pilot, 1)
            shown = app.detail.query_one("#response-tree", Tree).root.data
            assert shown == json.loads(payload_of(answers[1]))
            # Searched as the row keeps it (docs/filters.md): the elided numbers are not.
            app.model.set_filter("~s mesh1")
            assert [app.model.flows[i].number for i in app.model.view] == [2]
            app.model.set_filter("~s 100007")
            assert list(app.model.view) == []
            # ...and the status line says the search skipped them.
            await pilot.press("slash", *"~s 100007", "enter")
            await wait_for(pilot, lambda: "0 of 2 flows" in app.status_bar.text)
            skipped = "(elided parts of 2 flows not searched)"
            assert skipped in app.status_bar.text
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"~m mesh", "enter")
            await wait_for(pilot, lambda: "2 of 2 flows" in app.status_bar.text)
            assert "not searched" not in app.status_bar.text
            app.find_text = "100007"
            app.action_find(True)
            await wait_for(pilot, lambda: any("No flow contains" in n for n in notices(app)))
            assert notices(app)[-1] == (
                "No flow contains '100007' (elided parts of 2 flows not searched)"
            )

    run(body())


def test_unrecorded_large_frames_go_on_with_their_bulk_elided() -> None:
    # The events waiting for the TUI's next batch held each answer's numbers parsed; now the
    # session's thread elides them, the payload kept (the budget counts it, views read it).
    events = mesh_answers(2)
    redacted = {id(e): e for e in events if isinstance(e, FrameSeen) and e.is_request}
    lighten = LeftToRecording(None, GOLEM)
    given = [lighten(event) for event in events]
    answers = [e for e in given if isinstance(e, FrameSeen) and not e.is_request]
    for frame, original in zip(answers, originals_in_order(events), strict=True):
        assert frame is not original and frame.payload is original.payload
        assert frame.message.obj["result"]["vertices"] == [  # type: ignore[attr-defined]
            f"<{2 * BULK_NUMBERS} numbers elided>"
        ]
    exchanges = [e for e in given if isinstance(e, ExchangeCompleted)]
    assert all(e.response is a for e, a in zip(exchanges, answers, strict=True))
    assert lighten.kept_whole == 2 and lighten.count == 0
    # Small frames, and a redacted large one (a view writes it from its message), as they are.
    assert all(given[i] is events[i] for i, e in enumerate(events) if id(e) in redacted)
    secret = dataclasses.replace(originals_in_order(events)[0], redacted=("result.tag",))
    assert lighten(secret) is secret
    # A request never answered keeps its payload in the copy held for its exchange: at most
    # MOST_WHOLE_COPIES of them are held; frames no exchange names are not held at all.
    request = next(e for e in events if isinstance(e, FrameSeen) and e.is_request)
    mesh = {"id": "m", "method": "geometry.create_mesh", "params": {"v": [1.5] * 2 * BULK_NUMBERS}}
    payload = GOLEM.encode_payload(mesh)
    large = dataclasses.replace(
        request, payload=payload, message=GOLEM.parse(payload, Role.REQUEST)
    )
    for index in range(MOST_WHOLE_COPIES + 10):
        lighten(dataclasses.replace(large, index=index, expects_answer=True))
        lighten(dataclasses.replace(large, index=1000 + index, expects_answer=False))
    assert len(lighten._whole_copies) == MOST_WHOLE_COPIES
