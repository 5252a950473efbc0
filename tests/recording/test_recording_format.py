"""The recording format: what docs/recording-format.md promises, checked against the code."""

from __future__ import annotations

import io
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.contract import Severity, Violation
from golem_core.framing import FrameErrorKind
from golem_core.messages import Role
from golem_core.outcome import OK
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile
from golem_proxy.events import (
    BytesDiscarded,
    ConnectionClosed,
    ConnectionOpened,
    Direction,
    Event,
    EventsMissed,
    ExchangeCompleted,
    FaultInjected,
    FrameSeen,
    FramingErrorSeen,
    GapReason,
    ObservationLost,
    SpoolFull,
    StreamEnded,
    ToolCallRef,
    UpstreamStatus,
    ViolationSeen,
)
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.format import (
    Header,
    RecordingError,
    RecordingReader,
    RecordingWriter,
    RouteInfo,
    encode_event,
    encode_header,
    read_recording,
)
from golem_proxy.recording.line_guard import check_line, decode_json
from golem_proxy.recording.schema import FRAME_MEMBERS, FRAME_OPTIONAL, KIND_MEMBERS
from golem_proxy.recording.writer import IOV_MAX, write_all
from tests.support.cli_helpers import run_cli
from tests.support.frames import frame_seen
from tests.support.trace_builder import golem_session, write_recording

DOC = Path(__file__).resolve().parents[2] / "docs" / "recording-format.md"


def frame(
    payload: bytes,
    direction: Direction = Direction.C2S,
    index: int = 0,
    t: float = 0.5,
    profile: Profile = GOLEM,
    redacted: tuple[str, ...] = (),
    answers: Optional[int] = None,
) -> FrameSeen:
    """A frame as the tap publishes it: a request says whether it waits for an answer, a
    response which request it answers (``answers``)."""
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    size = len(profile.frame_payload(payload)) if b"\n" not in payload else len(payload) + 4
    message = profile.parse(payload, role)
    asks = message.role is Role.REQUEST or (message.role is None and role is Role.REQUEST)
    return frame_seen(
        profile,
        direction,
        index,
        payload,
        t=t,
        size=size,
        redacted=redacted,
        expects_answer=asks and profile.expects_response(message),
        answers=answers,
    )


def one_of_each() -> list[Event]:
    """One event of every type the writer records."""
    request = frame(b'{"id": "r1", "method": "ping", "params": {}}')
    response = frame(
        b'{"id": "r1", "result": {"alive": true}, "error": null}', Direction.S2C, answers=0
    )
    broken = Violation("golem.message.malformed", "bad", "$", Severity.ERROR, "invalid-json")
    orphan_verdict = Violation("pairing.orphan-response", "no request", "$.id", Severity.ERROR)
    return [
        ConnectionOpened(
            conn=1, route="main", client="127.0.0.1:5000", upstream="127.0.0.1:9876", t=0.25
        ),
        request,
        ViolationSeen(
            conn=1, route="main", direction=Direction.C2S, frame_index=0, t=0.5, violation=broken
        ),
        response,
        ExchangeCompleted(
            conn=1,
            route="main",
            request=request,
            response=response,
            outcome=OK,
        ),
        FramingErrorSeen(
            conn=1,
            route="main",
            direction=Direction.C2S,
            t=0.75,
            kind=FrameErrorKind.OVERSIZED,
            detail="too big",
            raw=b"\xff" * 4,
            recoverable=True,
            declared_length=99,
        ),
        BytesDiscarded(
            conn=1, route="main", direction=Direction.C2S, t=0.75, raw=b"\x00\x01", final=True
        ),
        FaultInjected(
            conn=1,
            route="main",
            direction=Direction.S2C,
            t=0.8,
            fault="drop",
            detail="withheld response",
            method="ping",
            withheld=True,
        ),
        FaultInjected(
            conn=1,
            route="main",
            direction=Direction.S2C,
            t=0.82,
            fault="delay",
            detail="delayed 300 ms: response",
            held_s=0.300734,
            method="ping",
            message_id="r1",
        ),
        ViolationSeen(
            conn=1,
            route="main",
            direction=Direction.S2C,
            frame_index=1,
            t=0.85,
            violation=orphan_verdict,
            orphan=True,
        ),
        StreamEnded(conn=1, route="main", direction=Direction.S2C, t=0.88, unanswered=(2, 3)),
        EventsMissed(count=3, t=0.9, consumer="recorder"),
        _session(0.92, GapReason.RESTARTED, "the observing process was killed by SIGKILL"),
        ObservationLost(
            conn=1,
            route="main",
            direction=Direction.S2C,
            t=0.93,
            reason=GapReason.RESTARTED,
            size=57,
            detail="57 bytes forwarded while no observing process recorded",
        ),
        ConnectionClosed(
            conn=1,
            route="main",
            reason="client closed",
            t=1.0,
            bytes_c2s=10,
            bytes_s2c=20,
            abnormal=True,
            resets=(Direction.S2C, Direction.C2S),
        ),
        # A connection that carried nothing, in a session with an MCP layer: the tool
        # calls in flight when it opened.
        ConnectionClosed(
            conn=2,
            route="main",
            reason="upstream 127.0.0.1:9876 unreachable: Connection refused",
            t=1.1,
            abnormal=True,
            tool_calls=(ToolCallRef(conn=3, index=2, id=1, tool="list_layers"),),
        ),
        UpstreamStatus(
            route="main", t=1.25, up=False, detail="upstream 127.0.0.1:9876 refuses connections"
        ),
        UpstreamStatus(
            route="main", t=1.5, up=True, detail="upstream 127.0.0.1:9876 answers again"
        ),
        SpoolFull(t=1.6, limit=16 * 1024 * 1024),
        _session(1.75, GapReason.STOPPED, "the observing process was stopped"),
    ]


def _session(t: float, reason: GapReason, detail: str) -> ObservationLost:
    """The session's own gap (connection 0): observation stopped, or restarted."""
    return ObservationLost(
        conn=0, route="", direction=Direction.C2S, t=t, reason=reason, size=0, detail=detail
    )


def roundtrip(events: list[Event], profile: str = "golem") -> list[Event]:
    data = write_recording(events, profile)
    reader = RecordingReader(io.BytesIO(data))
    return list(reader)


def test_every_event_kind_and_member_is_documented() -> None:
    doc = DOC.read_text(encoding="utf-8")
    kinds = set()
    for seq, event in enumerate(one_of_each(), 1):
        line = encode_event(event, GOLEM, seq)
        assert line is not None
        data = json.loads(line)
        kinds.add(data["kind"])
        assert re.search(rf"^\| `{re.escape(data['kind'])}` \|", doc, re.M), data["kind"]
        for member in data:
            assert f"`{member}`" in doc, f"member {member!r} of {data['kind']} is undocumented"
    assert kinds == {
        "open", "close", "frame", "exchange", "violation", "frame-error", "discarded", "fault",
        "gap", "upstream", "unobserved", "observation-restarted", "observation-stopped", "end",
        "spool-full",
    }  # fmt: skip
    # The optional members of frame lines too.
    for optional in ("raw", "note", "redacted", "msg", "id", "method"):
        assert f"`{optional}`" in doc


def test_every_event_type_roundtrips() -> None:
    events = one_of_each()
    assert roundtrip(events) == events


def test_requests_of_one_method_share_its_name() -> None:
    # A viewer keeps every request of a recording: one method string each was ~60 bytes a flow.
    requests = [
        frame(b'{"id": "r%d", "method": "ping", "params": {}}' % n, index=n) for n in (1, 2)
    ]
    first, second = roundtrip(list(requests))
    assert isinstance(first, FrameSeen) and isinstance(second, FrameSeen)
    assert first == requests[0] and second == requests[1]
    assert first.method is second.method


PAYLOADS = [
    '{"id": "x", "method": "creation.create_text", "params": {"text": "Grüße, 世界 🧊"}}'.encode(),
    b'{\n  "id": "x",\n  "method": "ping",\n  "params": {}\n}',  # spans lines
    b'{"id": "x", "method": "ping", "params": {"s": "\xff\xfe"}}',  # invalid UTF-8
    b'{"id": "x", "method": ',  # invalid JSON
    b"",  # empty
    b"[1, 2, 3]",  # not an object
    b'   {"id":"x","method":"ping","params":{}}\t  ',  # odd spacing kept verbatim
    b'{"id": "x", "method": "m", "params": {"k": ",\\"msg\\":}"}}',  # the splice key in a string
    b'{"id": "x", "method": "m", "params": {"k": "\\u00e9"}}',  # ASCII-escaped text
]


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("direction", list(Direction))
def test_frames_keep_their_exact_payload(payload: bytes, direction: Direction) -> None:
    event = frame(payload, direction)
    (back,) = roundtrip([event])
    assert isinstance(back, FrameSeen)
    assert back.payload == payload
    assert back == event


def test_verbatim_splice_is_the_last_member_and_valid_json() -> None:
    payload = PAYLOADS[0]
    line = encode_event(frame(payload), GOLEM, 1)
    assert line is not None and line.endswith(b',"msg":' + payload + b"}\n")
    data = json.loads(line)
    assert list(data)[-1] == "msg"
    assert data["msg"]["params"]["text"] == "Grüße, 世界 🧊"


@pytest.mark.parametrize("payload", [PAYLOADS[1], PAYLOADS[2], PAYLOADS[3]])
def test_undecodable_or_multiline_payloads_are_stored_base64(payload: bytes) -> None:
    line = encode_event(frame(payload), GOLEM, 1)
    assert line is not None and line.count(b"\n") == 1
    data = json.loads(line)
    assert "msg" not in data and "raw" in data


READ_BY_PEERS_ONLY = [
    # A plugin's json.dumps writes NaN for a float that is not a number.
    (b'{"status": "success", "result": {"volume": NaN}}', "not finite"),
    (b'{"status": "success", "result": {"low": -Infinity}}', "not finite"),
    (b'{"status": "success", "result": {"big": 1e999}}', "not finite"),
    (b'{"status": "success", "result": ' + b"[" * 300 + b"]" * 300 + b"}", "deeper than 255"),
]


@pytest.mark.parametrize(("payload", "why"), READ_BY_PEERS_ONLY)
def test_a_payload_the_reader_would_refuse_verbatim_is_stored_raw_and_read_back(
    tmp_path: Path, payload: bytes, why: str
) -> None:
    """Python's JSON reads these, and so does the tap: written verbatim, their line was one
    the reader refuses (NaN is not JSON; it nests 256 levels at most), and the whole
    recording could not be opened. Stored raw, with a note, they read back as they were."""
    event = frame(payload, Direction.S2C)
    line = encode_event(event, GOLEM, 1)
    assert line is not None
    check_line(line)
    data = decode_json(line)  # strict, as the reader reads a line
    assert "msg" not in data and why in data["note"] and data["note"].endswith("; stored raw")
    (back,) = roundtrip([event])
    assert isinstance(back, FrameSeen)
    assert back.payload == payload and repr(back.message) == repr(event.message)
    path = tmp_path / "peers.jsonl"
    path.write_bytes(write_recording([event]))
    shown = run_cli("show", str(path))
    assert shown.returncode == 0, shown.stderr


@pytest.mark.parametrize(("payload", "why"), [READ_BY_PEERS_ONLY[0], READ_BY_PEERS_ONLY[3]])
def test_a_redacted_payload_the_reader_would_refuse_is_stored_raw_too(
    payload: bytes, why: str
) -> None:
    """A redacted frame's line holds its redacted message: with NaN or nested too deep, it
    too is stored raw (its payload is the redacted message encoded, nothing redacted in it)."""
    event = frame(payload, Direction.S2C, redacted=("result.secret",))
    line = encode_event(event, GOLEM, 1)
    assert line is not None
    check_line(line)
    data = decode_json(line)
    assert "msg" not in data and why in data["note"] and data["redacted"] == ["result.secret"]
    (back,) = roundtrip([event])
    assert isinstance(back, FrameSeen)
    assert back.payload == payload and back.redacted == ("result.secret",)


def test_a_payload_with_nan_only_in_a_string_stays_verbatim() -> None:
    payload = b'{"status": "success", "result": {"text": "NaN, Infinity"}}'
    line = encode_event(frame(payload, Direction.S2C), GOLEM, 1)
    assert line is not None and line.endswith(b',"msg":' + payload + b"}\n")


def test_redacted_frames_store_the_redacted_object() -> None:
    obj = {"id": "x", "method": "scripting.execute_python", "params": {"code": "«redacted»"}}
    event = frame(GOLEM.encode_payload(obj), redacted=("params.code",))
    line = encode_event(event, GOLEM, 1)
    assert line is not None
    assert json.loads(line)["redacted"] == ["params.code"]
    assert roundtrip([event]) == [event]


def test_notifications_and_server_exchanges_roundtrip_and_are_documented() -> None:
    def jsonrpc(
        payload: bytes, direction: Direction, index: int, answers: Optional[int] = None
    ) -> FrameSeen:
        return frame(payload, direction, index, profile=JSONRPC_NDJSON, answers=answers)

    note = jsonrpc(b'{"jsonrpc":"2.0","method":"notifications/progress"}', Direction.S2C, 0)
    asked = jsonrpc(b'{"jsonrpc":"2.0","id":1,"method":"roots/list"}', Direction.S2C, 1)
    call = jsonrpc(b'{"jsonrpc":"2.0","id":1,"method":"state"}', Direction.C2S, 0)
    answer = jsonrpc(b'{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}', Direction.C2S, 1, 1)
    events: list[Event] = [
        note,
        asked,
        call,
        answer,
        ExchangeCompleted(conn=1, route="main", request=asked, response=answer, outcome=OK),
    ]
    assert roundtrip(events, "jsonrpc-ndjson") == events
    lines = [json.loads(encode_event(e, JSONRPC_NDJSON, 1) or b"") for e in events]
    assert lines[0]["type"] == "notification" and lines[0]["method"] == "notifications/progress"
    assert lines[4]["kind"] == "server-exchange" and (lines[4]["req"], lines[4]["resp"]) == (1, 1)
    doc = DOC.read_text(encoding="utf-8")
    assert re.search(r"^\| `server-exchange` \|", doc, re.M) and "`notification`" in doc


def test_jsonrpc_ndjson_frames_roundtrip() -> None:
    payload = b'{"jsonrpc":"2.0","id":1,"method":"state","params":{}}'
    request = frame(payload, profile=JSONRPC_NDJSON)
    response = frame(
        b'{"jsonrpc":"2.0","id":1,"result":{"theme":"dark"}}',
        Direction.S2C,
        profile=JSONRPC_NDJSON,
        answers=0,
    )
    events: list[Event] = [
        request,
        response,
        ExchangeCompleted(conn=1, route="main", request=request, response=response, outcome=OK),
    ]
    assert roundtrip(events, "jsonrpc-ndjson") == events


def test_a_realistic_session_roundtrips() -> None:
    tap = golem_session()
    assert roundtrip(tap.events) == tap.events


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(list(Direction)))
def test_any_payload_roundtrips(payload: bytes, direction: Direction) -> None:
    event = frame(payload, direction)
    assert roundtrip([event]) == [event]


def test_truncated_file_reads_up_to_the_last_complete_line() -> None:
    data = write_recording(golem_session().events)
    lines = data.splitlines(keepends=True)
    header_end = len(lines[0])
    complete = []
    offset = 0
    for line in lines:
        offset += len(line)
        complete.append(offset)
    for cut in range(header_end, len(data), 97):
        reader = RecordingReader(io.BytesIO(data[:cut]))
        events = list(reader)
        whole = max(end for end in complete if end <= cut)
        expected = list(RecordingReader(io.BytesIO(data[:whole])))
        assert events == expected
        assert reader.truncated_tail == (cut != whole)


def test_a_damaged_middle_line_names_its_number() -> None:
    lines = write_recording(one_of_each()).splitlines(keepends=True)
    lines[3] = b"{not json\n"
    with pytest.raises(RecordingError, match="line 4"):
        list(RecordingReader(io.BytesIO(b"".join(lines))))


def test_overlong_lines_are_refused() -> None:
    payload = b'{"id": "x", "method": "m", "params": {"k": "' + b"a" * 500 + b'"}}'
    data = write_recording([frame(payload)])
    with pytest.raises(RecordingError, match="longer than"):
        list(RecordingReader(io.BytesIO(data), max_line=400))


@pytest.mark.parametrize(
    "first",
    [b"", b'{"format": "something-else"}\n', b'{"format":"golem-proxy-recording","version":99}\n'],
)
def test_non_recordings_are_refused(first: bytes) -> None:
    with pytest.raises(RecordingError):
        RecordingReader(io.BytesIO(first))


def test_unknown_event_kinds_are_skipped() -> None:
    data = write_recording(one_of_each()[:1]) + b'{"seq":2,"t":1.0,"kind":"hologram"}\n'
    assert len(list(RecordingReader(io.BytesIO(data)))) == 1


def test_recording_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    header = Header("golem", (RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876"),), "now")
    with RecordingWriter.create(str(path), header) as writer:
        writer.write(one_of_each()[0])
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_recording(str(path)).events == one_of_each()[:1]
    with pytest.raises(FileExistsError):
        RecordingWriter.create(str(path), header)


def test_the_writer_follows_the_member_lists_the_scanner_is_built_from() -> None:
    """The fast scanner's pattern is built from `schema.KIND_MEMBERS`: a writer that changed
    a line's members or their order without it would make the scanner miss lines silently."""
    for seq, event in enumerate([*one_of_each(), *golem_session().events], 1):
        line = encode_event(event, GOLEM, seq)
        assert line is not None
        data = json.loads(line)
        members = KIND_MEMBERS[data["kind"]]
        keys = list(data)
        if data["kind"] == "frame":
            assert keys[: len(FRAME_MEMBERS)] == list(FRAME_MEMBERS)
            rest = keys[len(FRAME_MEMBERS) :]
            extra = ("msg", "raw", "note", "redacted")
            assert all(key in FRAME_OPTIONAL or key in extra for key in rest), rest
            assert [k for k in rest if k in FRAME_OPTIONAL] == [
                k for k in FRAME_OPTIONAL if k in data
            ]
            continue
        assert keys == [member for member in members if member in data], data["kind"]


def test_old_lines_say_withheld_and_orphan_the_old_way() -> None:
    """Files written before faults and violations carried the members: the detail's first
    word and the rule id."""
    lines = [
        b'{"seq":1,"t":0.1,"kind":"fault","conn":1,"route":"main","dir":"c2s","fault":"drop",'
        b'"detail":"withheld request: ping","method":"ping"}\n',
        b'{"seq":2,"t":0.2,"kind":"violation","conn":1,"route":"main","dir":"s2c","frame":0,'
        b'"rule":"pairing.orphan-response","message":"m","path":"$.id","severity":"error"}\n',
    ]
    data = encode_header(Header.new("golem", [])) + b"".join(lines)
    fault, verdict = list(RecordingReader(io.BytesIO(data)))
    assert isinstance(fault, FaultInjected) and fault.withheld
    assert isinstance(verdict, ViolationSeen) and verdict.orphan


def test_a_delay_says_how_long_it_held_in_a_member_and_old_lines_in_words() -> None:
    """A delay's line carries the hold its relay measured (``held``), which the reader takes
    over its words; one written before the member says it only in its words, which the
    reader reads there, once: a view reads the event's field."""
    line = (
        b'{"seq":1,"t":0.1,"kind":"fault","conn":1,"route":"main","dir":"s2c","fault":"delay",'
        b'"detail":"delayed 300 ms: response","method":"ping"'
    )
    header = encode_header(Header.new("golem", []))
    said = {b"}": 0.3, b',"held":1.25}': 1.25, b',"held":0}': 0.0}
    for tail, held in said.items():
        (fault,) = list(RecordingReader(io.BytesIO(header + line + tail + b"\n")))
        assert isinstance(fault, FaultInjected) and fault.held_s == held, tail
    (other,) = list(
        RecordingReader(io.BytesIO(header + line.replace(b'"delay"', b'"drop"') + b"}\n"))
    )
    assert isinstance(other, FaultInjected) and other.held_s is None
    for bad in (b'"1"', b"-1", b"true"):
        with pytest.raises(RecordingError, match="line 2: held must be a number of seconds"):
            list(RecordingReader(io.BytesIO(header + line + b',"held":' + bad + b"}\n")))


def test_a_step_carries_the_id_of_the_message_it_acted_on() -> None:
    """A fault's ``id`` is the id the proxy read in its message, of a message's type; one
    written before the member has none (None), and a damaged one is refused."""
    line = (
        b'{"seq":1,"t":0.1,"kind":"fault","conn":1,"route":"main","dir":"s2c","fault":"drop",'
        b'"detail":"withheld response: work","method":"work","withheld":true'
    )
    header = encode_header(Header.new("golem", []))
    said = {b"}": None, b',"id":3}': 3, b',"id":"3"}': "3", b',"id":null}': None}
    for tail, ident in said.items():
        (fault,) = list(RecordingReader(io.BytesIO(header + line + tail + b"\n")))
        assert isinstance(fault, FaultInjected) and fault.message_id == ident, tail
        assert type(fault.message_id) is type(ident)
    for bad in (b"true", b"1.5", b"[3]"):
        with pytest.raises(RecordingError, match="line 2: a step's id must be a string"):
            list(RecordingReader(io.BytesIO(header + line + b',"id":' + bad + b"}\n")))


def test_a_close_without_tool_calls_reads_as_before_and_a_bad_one_is_refused() -> None:
    """Files written before closes carried a decision read as they did; a damaged decision
    is refused, as a frame's is."""
    line = (
        b'{"seq":1,"t":0.1,"kind":"close","conn":2,"route":"main","reason":"refused",'
        b'"bytes":{"c2s":0,"s2c":0},"abnormal":true'
    )
    header = encode_header(Header.new("golem", []))
    (closed,) = list(RecordingReader(io.BytesIO(header + line + b"}\n")))
    assert isinstance(closed, ConnectionClosed) and closed.tool_calls is None
    empty = line + b',"tool_calls":[]}\n'
    (closed,) = list(RecordingReader(io.BytesIO(header + empty)))
    assert isinstance(closed, ConnectionClosed) and closed.tool_calls == ()
    bad = line + b',"tool_calls":[{"conn":1,"n":0,"id":true,"tool":"x"}]}\n'
    with pytest.raises(RecordingError, match="line 2: a tool call's id must be"):
        list(RecordingReader(io.BytesIO(header + bad)))


def test_a_close_says_which_way_resets_went_and_a_bad_one_is_refused() -> None:
    """A close says the resets that crossed (none: a clean close); one written before it
    says nothing (None), and a damaged one is refused."""
    line = (
        b'{"seq":1,"t":0.1,"kind":"close","conn":2,"route":"main","reason":"x",'
        b'"bytes":{"c2s":0,"s2c":0},"abnormal":true'
    )
    header = encode_header(Header.new("golem", []))
    said = {b"}": None, b',"resets":[]}': (), b',"resets":["c2s"]}': (Direction.C2S,)}
    for tail, resets in said.items():
        (closed,) = list(RecordingReader(io.BytesIO(header + line + tail + b"\n")))
        assert isinstance(closed, ConnectionClosed) and closed.resets == resets, tail
    for bad in (b'"c2s"', b'["up"]', b"[1]", b"{}"):
        data = header + line + b',"resets":' + bad + b"}\n"
        with pytest.raises(RecordingError, match='line 2: resets must be a list of "c2s"'):
            list(RecordingReader(io.BytesIO(data)))


def test_pieces_reach_a_file_whole_and_in_order_past_one_system_calls_worth(
    tmp_path: Path,
) -> None:
    """`write_all` writes more pieces than one `os.writev` takes, a large one among them."""
    pieces = [b"%d\n" % n for n in range(IOV_MAX * 2 + 5)]
    pieces[IOV_MAX - 1] = b"x" * (4 * 1024 * 1024) + b"\n"
    path = tmp_path / "pieces"
    with open(path, "wb") as stream:
        write_all(stream.fileno(), pieces)
    assert path.read_bytes() == b"".join(pieces)


def test_a_payload_with_nan_written_verbatim_by_an_older_writer_reads_back(tmp_path: Path) -> None:
    """Writers before payloads with NaN were stored raw spliced them verbatim; the payload is
    what a peer sent, read with the peers' JSON, so such a recording opens (its members stay
    strict JSON), in every reader."""
    event = frame(b'{"status": "success", "result": {"volume": 1.5}}', Direction.S2C)
    older = write_recording([event]).replace(b'"volume": 1.5', b'"volume": NaN')
    (back,) = list(RecordingReader(io.BytesIO(older)))
    assert isinstance(back, FrameSeen)
    assert back.payload == b'{"status": "success", "result": {"volume": NaN}}'
    assert repr(back.message.obj) == repr({"status": "success", "result": {"volume": math.nan}})
    (fast,) = list(FastRecordingReader(io.BytesIO(older)))
    assert repr(fast) == repr(back)
    path = tmp_path / "older.jsonl"
    path.write_bytes(older)
    shown = run_cli("show", str(path))
    assert shown.returncode == 0, shown.stderr
    damaged = older.replace(b'"t":0.5', b'"t":NaN')
    with pytest.raises(RecordingError, match="line 2"):
        list(RecordingReader(io.BytesIO(damaged)))


def test_a_fault_line_claiming_what_the_proxy_never_writes_is_refused() -> None:
    """``among`` counts the requests that waited with an id: 1 at least; ``server_request`` is
    a step on a frame the server sent, never on the client's."""
    header = encode_header(Header.new("golem", []))
    line = (
        b'{"seq":1,"t":0.1,"kind":"fault","conn":1,"route":"main","dir":"DIR","fault":"drop",'
        b'"detail":"withheld","method":"ping","withheld":true'
    )
    # Two requests wait with the answer's id (what more among may say: test_step_claims.py).
    asked = [frame(b'{"id": 1, "method": "ping", "params": {}}', index=n) for n in (0, 1)]
    fine = write_recording(asked)
    fine += line.replace(b"DIR", b"s2c").replace(b'"seq":1,', b'"seq":3,')
    fine += b',"id":1,"among":2,"server_request":false}\n'
    (*_, fault) = list(RecordingReader(io.BytesIO(fine)))
    assert isinstance(fault, FaultInjected) and fault.among == 2
    refused = {
        b's2c",': (b',"among":0}', "line 2: among must be a whole number from 1"),
        b'c2s",': (b',"server_request":true}', "line 2: server_request on a step of the client"),
    }
    for direction, (tail, said) in refused.items():
        data = header + line.replace(b'DIR",', direction) + tail + b"\n"
        with pytest.raises(RecordingError, match=said):
            list(RecordingReader(io.BytesIO(data)))
