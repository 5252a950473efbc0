"""A frame line over a reader's parse budget that carries no skeleton (recording/
byte_skeleton.py): a recording written before the writer put skeletons beside such payloads,
or a payload stored raw that is no JSON at all. Every reader refused the first (the whole
recording, at that line) and parsed the second in ~900 MiB before refusing it. Now both are
typed from a skeleton made of their bytes, their bytes kept whole."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_core.messages import Malformed, MalformedKind, Response, Role
from golem_core.outcome import OutcomeKind
from golem_core.profiles import GOLEM
from golem_proxy import json_cost
from golem_proxy.events import Direction, Event, ExchangeCompleted, FrameSeen
from golem_proxy.json_cost import parse_cost
from golem_proxy.live.tap_limits import ObserveLimits
from golem_proxy.recording import byte_skeleton
from golem_proxy.recording.byte_skeleton import MOST_MEMBERS, SMALL, skeleton_of_bytes
from golem_proxy.recording.fast_reader import FastRecordingReader
from golem_proxy.recording.format import RecordingReader
from golem_proxy.recording.line_guard import not_one_value
from golem_proxy.recording.schema import MSG_KEY, RecordingError
from tests.replay.test_cli import replaying
from tests.replay.test_large_payloads import _call
from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import TapSimulator, write_recording

ONES = 15_000_000
BULK = b"[" + b"1," * (ONES - 1) + b"1]"
# 30 MB of small numbers: about 514 MiB once parsed by the reader's estimate, over its budget.
ANSWER = b'{"id": "a1", "success": true, "result": ' + BULK + b"}"
ROOT = Path(__file__).resolve().parents[2]


def _session(answer: bytes) -> TapSimulator:
    """A call answered with ``answer``, then a ping, through the real tap, as a proxy
    recorded it before the parse limit (`ObserveLimits.parse`), or with a higher one."""
    tap = TapSimulator(GOLEM, cap=64 * 1024 * 1024, limits=ObserveLimits(parse=1 << 40))
    tap.open(1)
    tap.request(1, {"id": "a1", "method": "mesh.get_mask", "params": {}})
    tap.tick(0.2)
    tap.send(1, Direction.S2C, GOLEM.frame_payload(answer))
    tap.request(1, {"id": "a2", "method": "ping", "params": {}})
    tap.respond(1, {"id": "a2", "success": True, "result": {"pong": True}})
    tap.close(1)
    return tap


def _without_skeletons(recording: bytes) -> bytes:
    """``recording`` as a writer before skeletons wrote it: the payload verbatim alone."""
    lines = recording.split(b"\n")
    for number, line in enumerate(lines):
        if b'"skeleton":' in line:
            start, end = line.index(b',"elided":'), line.index(MSG_KEY)
            lines[number] = line[:start] + line[end:]
    return b"\n".join(lines)


def _read_by_both_readers(path: Path) -> tuple[list[Event], FrameSeen]:
    """The recording's events, equal by both readers, and its second frame (the answer)."""
    with path.open("rb") as stream:
        exact = list(RecordingReader(stream))
    with path.open("rb") as stream:
        assert list(FastRecordingReader(stream)) == exact
    return exact, [event for event in exact if isinstance(event, FrameSeen)][1]


@pytest.fixture(scope="module")
def old_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TapSimulator]:
    tap = _session(ANSWER)
    path = tmp_path_factory.mktemp("old") / "old.jsonl"
    path.write_bytes(_without_skeletons(write_recording(tap.events)))
    return path, tap


def test_an_old_recording_is_read_from_its_payload_s_bytes(
    old_trace: tuple[Path, TapSimulator],
) -> None:
    path, _ = old_trace
    assert b'"skeleton":' not in path.read_bytes()
    exact, answer = _read_by_both_readers(path)
    assert answer.payload == ANSWER
    assert isinstance(answer.message, Response)
    assert answer.message.obj == {"id": "a1", "success": True,
                                  "result": [f"<{len(BULK)} bytes not parsed>"]}  # fmt: skip
    assert answer.elided == len(BULK)
    exchanges = [event for event in exact if isinstance(event, ExchangeCompleted)]
    assert [(e.method, e.outcome.kind.value) for e in exchanges] == [
        ("mesh.get_mask", "ok"),
        ("ping", "ok"),
    ]


def test_the_commands_open_an_old_recording(
    old_trace: tuple[Path, TapSimulator], tmp_path: Path
) -> None:
    path, tap = old_trace
    shown = run_cli("show", "--json", str(path))
    assert shown.returncode == 0, shown.stderr
    first = json.loads(shown.stdout.splitlines()[0])
    assert (first["method"], first["status"]) == ("mesh.get_mask", "ok")
    assert first["response_elided"] == len(BULK)
    checked = run_cli("check", str(path))
    assert checked.returncode in (0, 1), checked.stderr  # 1: the envelope's violations
    assert "note: 1 flow with a payload too large to parse" in checked.stderr
    streams = tmp_path / "streams"
    done = run_cli("export", "--out", str(streams), str(path))
    assert done.returncode == 0, done.stderr
    assert (streams / "conn-0001-s2c.bin").read_bytes() == tap.fed(1, Direction.S2C)


def test_replay_serves_an_old_recording_s_large_answer(
    old_trace: tuple[Path, TapSimulator],
) -> None:
    path, _ = old_trace
    with replaying(str(path)) as (_, ready):
        got = _call(ready[1], int(ready[2]), {"id": 7, "method": "mesh.get_mask", "params": {}})
    assert got == ANSWER.replace(b'"id": "a1"', b'"id": 7', 1)


def _peak_rss_mib(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """The CLI run with ``args`` alone in a child, and the most memory it held (its memory's
    high-water mark: ``ru_maxrss`` would count this process's, kept across ``exec``)."""
    code = (
        "import runpy, sys\n"
        "sys.argv = ['golem-proxy', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('golem_proxy', run_name='__main__')\n"
        "finally:\n"
        "    with open('/proc/self/status') as status:\n"
        "        peak = [line.split()[1] for line in status if line.startswith('VmHWM:')]\n"
        "    print(peak[0], file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)  # fmt: skip
    return done, int(done.stderr.strip().splitlines()[-1]) / 1024


def test_a_broken_payload_too_large_to_parse_is_malformed_without_a_parse(tmp_path: Path) -> None:
    """30 MB of ``[[],…`` that never closes: ~900 MiB for a parse to refuse, before."""
    broken = b'{"id": "a1", "success": true, "result": [' + b"[]," * 10_000_000
    path = tmp_path / "broken.jsonl"
    path.write_bytes(write_recording(_session(broken).events))
    assert b'"raw":' in path.read_bytes()
    _, answer = _read_by_both_readers(path)
    assert answer.payload == broken
    assert isinstance(answer.message, Malformed)
    assert answer.message.kind is MalformedKind.INVALID_JSON
    assert "too large to parse" in answer.message.detail
    shown, peak = _peak_rss_mib("show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "malformed:invalid-json" in shown.stdout
    assert peak < 400, f"show held {peak:.0f} MiB"  # 894 MiB before


def test_a_skeleton_keeps_three_levels_and_what_is_small() -> None:
    large = b"[" + b"0," * SMALL + b"0]"
    payload = (
        b'{"id": 5, "result": {"success": false, "error": {"code": "MESH_TOO_BIG", '
        b'"points": ' + large + b', "more": {"deep": ' + large + b'}}, "mask": ' + large
        + b', "name": "m"}, "text": "' + b"x" * SMALL + b'"}'
    )  # fmt: skip
    skeleton, elided = skeleton_of_bytes(payload, {})
    size = len(large)
    assert skeleton == {
        "id": 5,
        "result": {
            "success": False,
            "error": {"code": "MESH_TOO_BIG", "points": [f"<{size} bytes not parsed>"],
                      "more": f"<{size + 10} bytes not parsed>"},
            "mask": [f"<{size} bytes not parsed>"],
            "name": "m",
        },
        "text": f"<{SMALL + 2} bytes not parsed>",
    }  # fmt: skip
    assert elided == 3 * size + 10 + SMALL + 2


def test_a_wide_object_keeps_its_envelope_past_its_budget() -> None:
    members = b",".join(b'"k%d": [%d]' % (n, n) for n in range(MOST_MEMBERS + 1))
    bulk = b"[" + b"1," * SMALL + b"1]"
    payload = b'{"id": "w", ' + members + b', "result": {"code": "E"}, "more": ' + bulk + b"}"
    skeleton, elided = skeleton_of_bytes(payload, {})
    assert list(skeleton)[-2:] == [f"k{MOST_MEMBERS - 2}", "result"]
    assert len(skeleton) == MOST_MEMBERS + 1 and skeleton["result"] == {"code": "E"}
    assert elided == 2 * len(b"[4095]") + len(bulk)  # "id" is one of the 4,096


def test_a_skeleton_s_placeholders_are_bounded_too() -> None:
    """Past its budget (each value kept counted), a wide result's members are left out, not
    each a placeholder: ~1,200 objects of 4,096 empty arrays were 4.7 million placeholders."""
    wide = b"{" + b",".join(b'"k%d": [%s]' % (n, b"1," * 40 + b"1") for n in range(3000)) + b"}"
    payload = b'{"id": 1, "result": {' + b",".join(b'"o%d": %s' % (n, wide) for n in range(60))
    payload += b"}}"
    skeleton, elided = skeleton_of_bytes(payload, {})
    kept = sum(
        len(value) if isinstance(value, dict) else 1 for value in skeleton["result"].values()
    )
    assert kept <= (16 << 20) // 128 and elided > len(payload) // 2


def test_a_walk_that_would_take_too_long_leaves_the_rest_out() -> None:
    """Text nested deep everywhere is a Python step per bracket: the walks stop at their
    budget, and what they did not reach is left out, the members before it kept."""
    unit = b"[" * 200 + b"]" * 200
    payload = b'{"id": 7, "success": true, "result": {"a": [' + b",".join([unit] * 20_000) + b"]}}"
    skeleton, elided = skeleton_of_bytes(payload, {})
    rest = len(payload) - payload.index(b'{"a"') - 1
    assert skeleton == {"id": 7, "success": True, "result": f"<{rest} bytes not parsed>"}
    assert elided == rest


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b'{"id": 1, "bad": [1, 2,], "x": [' + b"1," * SMALL + b"1]}", "not JSON"),
        (b'{"id": 1, "x": "' + b"a" * SMALL + b"}", "a string that never closes"),
        (b'{"id": 1, "x": [' + b"1," * SMALL + b"1]} {}", "do not close where"),
        (b'{"\\ud8": 1, "x": [' + b"1," * SMALL + b"1]}", "key that does not read"),
        (b'{"id": "\xff", "x": [' + b"1," * SMALL + b"1]}", "not UTF-8"),
    ],
    ids=["a small member", "a string", "two values", "a key", "UTF-8"],
)
def test_what_is_read_of_it_must_be_json(payload: bytes, problem: str) -> None:
    with pytest.raises(RecordingError, match=problem):
        skeleton_of_bytes(payload, {})


def test_what_the_skeleton_parses_is_bounded() -> None:
    """Values small enough to parse each, but many: past the skeleton's budget they are
    placeholders (each ``[[],…`` of 64 KiB costs ~1.4 MiB parsed)."""
    member = b"[" + b"[]," * (SMALL // 3 - 1) + b"[]]"
    payload = b"{" + b",".join(b'"m%d": %s' % (n, member) for n in range(40)) + b"}"
    skeleton, elided = skeleton_of_bytes(payload, {})
    parsed = [
        value for value in skeleton.values() if value != [f"<{len(member)} bytes not parsed>"]
    ]
    assert 0 < len(parsed) < 40 and elided == (40 - len(parsed)) * len(member)


def test_a_line_of_an_old_writer_with_a_member_after_its_payload_is_refused() -> None:
    header = write_recording([]).splitlines()[0]
    frame = (
        b'{"seq":1,"t":0.1,"kind":"frame","conn":1,"route":"main","dir":"s2c","n":0,'
        b'"size":9,"type":"response","id":"a1","msg":' + ANSWER + b',"extra":{}}'
    )
    with pytest.raises(RecordingError, match="not JSON: brackets that do not close"):
        list(RecordingReader(io.BytesIO(header + b"\n" + frame + b"\n")))


def test_what_the_walks_did_not_reach_is_taken_from_the_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the walks' budget the members after the bulk are not known: the line's ``id``
    and ``method`` (the proxy's reading of the whole payload) stand for them."""
    monkeypatch.setattr(byte_skeleton, "MOST_TOKENS", 1000)
    bulk = b"[" + b",".join([b"[1]"] * 20_000) + b"]"
    payload = b'{"success": true, "result": {"m": ' + bulk + b'}, "id": "a1"}'
    skeleton, elided = skeleton_of_bytes(payload, {"id": "a1", "type": "response"})
    rest = len(payload) - payload.index(b'{"m"') - 1
    assert skeleton == {"success": True, "result": f"<{rest} bytes not parsed>", "id": "a1"}
    assert elided == rest


def test_an_envelope_s_short_members_are_read_past_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failure reported inside a success envelope after the bulk still reads as one."""
    monkeypatch.setattr(byte_skeleton, "SKELETON_BUDGET", 1 << 20)
    many = b",".join(b'"b%d": [%s]' % (n, b"1," * 3000 + b"1") for n in range(400))
    payload = b'{"result": {' + many + b', "success": false, "code": "MESH_TOO_BIG"}, "id": 9}'
    skeleton, _ = skeleton_of_bytes(payload, {})
    result = GOLEM.parse_decoded(skeleton, Role.RESPONSE)
    whole = GOLEM.parse(payload, Role.RESPONSE)
    assert skeleton["id"] == 9 and skeleton["result"]["code"] == "MESH_TOO_BIG"
    request = GOLEM.parse(b'{"id": 9, "method": "mesh.get", "params": {}}', Role.REQUEST)
    assert GOLEM.outcome(request, result) == GOLEM.outcome(request, whole)


def test_a_payload_recorded_malformed_stays_malformed(tmp_path: Path) -> None:
    """A comma missing inside the bulk, which the skeleton does not see: the line's ``type``
    is the proxy's reading of the whole payload."""
    broken = ANSWER.replace(b"1,1,1,", b"1,,1,", 1)
    tap = _session(broken)
    path = tmp_path / "comma.jsonl"
    path.write_bytes(write_recording(tap.events))
    _, answer = _read_by_both_readers(path)
    assert answer.payload == broken
    assert isinstance(answer.message, Malformed)
    assert answer.message.kind is MalformedKind.INVALID_JSON
    exchanges = [e for e in _read_by_both_readers(path)[0] if isinstance(e, ExchangeCompleted)]
    live = [e for e in tap.events if isinstance(e, ExchangeCompleted)]
    assert [e.outcome.kind for e in exchanges] == [e.outcome.kind for e in live]


def test_an_outcome_the_skeleton_does_not_show_is_the_one_recorded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A failure reported after the bulk, past the walks' budget: the exchange line's
    outcome (the proxy's, on the whole answer) stands, not the skeleton's ``ok``."""
    answer = (
        b'{"id": "a1", "success": true, "result": {"mask": ' + BULK
        + b', "success": false, "code": "MESH_TOO_BIG", "message": "too big"}}'
    )  # fmt: skip
    tap = _session(answer)
    (live,) = [e.outcome for e in tap.events if isinstance(e, ExchangeCompleted)][:1]
    assert live.text == "MESH_TOO_BIG (success: false)"
    path = tmp_path / "late_failure.jsonl"
    path.write_bytes(_without_skeletons(write_recording(tap.events)))
    monkeypatch.setattr(byte_skeleton, "MOST_TOKENS", 6)  # the walk stops inside `result`
    events, answered = _read_by_both_readers(path)
    rest = len(answer) - answer.index(b'{"mask') - 1
    assert answered.message.obj["result"] == f"<{rest} bytes not parsed>"
    outcomes = [e.outcome for e in events if isinstance(e, ExchangeCompleted)]
    assert [(o.kind, o.text) for o in outcomes] == [
        (live.kind, live.text),
        (OutcomeKind.OK, "ok"),
    ]


@given(
    st.lists(
        st.one_of(st.sampled_from([b"[", b"]", b"{", b"}", b",", b" ", b"1", b"\\", b'"', b":"]),
                  st.text(max_size=6).map(lambda t: json.dumps(t).encode())),
        max_size=40,
    )
)  # fmt: skip
def test_strings_taken_out_a_window_at_a_time_give_the_same_costs(pieces: list[bytes]) -> None:
    """Strings are taken out a window of the text at a time, in bounded memory: the costs
    and bracket checks are the ones the whole text in one window gives, however the windows
    fall (inside a string, an escape, a run of backslashes)."""
    text = b"".join(pieces)
    with mock.patch.object(json_cost, "WINDOW", 1 << 30):
        whole = (parse_cost(text, 0), not_one_value(text))
    for window in (1, 2, 3, 5):
        with mock.patch.object(json_cost, "WINDOW", window):
            assert (parse_cost(text, 0), not_one_value(text)) == whole
