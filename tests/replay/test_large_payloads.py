"""Recorded payloads too large for a reader to parse (replay/large_payloads.py): replay serves
them as bytes with the live id spliced in, `diff` and `verify` compare them as bytes. The real
CLI as subprocesses, on a trace written through the real tap, and a live upstream on loopback
for `verify`."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction
from golem_proxy.json_walk import member_span
from golem_proxy.replay.large_payloads import compare_as_bytes, with_id
from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import TapSimulator, write_recording

from .test_cli import replaying

ONES = 15_000_000


def _answer(ident: str, last: bytes = b"1") -> bytes:
    """30 MB of small numbers: over a reader's parse budget."""
    return (
        b'{"id": "%s", "success": true, "result": [' % ident.encode()
        + b"1," * (ONES - 1)
        + last
        + b"]}"
    )


def _trace(path: Path, last: bytes = b"1") -> Path:
    tap = TapSimulator(GOLEM, cap=64 * 1024 * 1024)
    tap.open(1)
    tap.request(1, {"id": "a1", "method": "mesh.get_mask", "params": {"layer": 2}})
    tap.tick(0.2)
    tap.send(1, Direction.S2C, GOLEM.frame_payload(_answer("a1", last)))
    tap.close(1)
    path.write_bytes(write_recording(tap.events))
    return path


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _trace(tmp_path_factory.mktemp("large") / "large.jsonl")


def _call(host: str, port: int, request: dict[str, Any]) -> bytes:
    """One GOLEM request on a fresh connection; the answer's payload bytes."""
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(GOLEM.encode(request))
        reader = sock.makefile("rb")
        (size,) = struct.unpack(">I", reader.read(4))
        return reader.read(size)


def test_replay_serves_the_recorded_bytes_with_the_live_id(trace: Path) -> None:
    with replaying(str(trace)) as (_, ready):
        got = _call(
            ready[1], int(ready[2]), {"id": 7, "method": "mesh.get_mask", "params": {"layer": 2}}
        )
    assert got == _answer("a1").replace(b'"id": "a1"', b'"id": 7', 1)


def test_diff_compares_them_as_bytes(trace: Path, tmp_path: Path) -> None:
    same = run_cli("diff", str(trace), str(trace))
    assert same.returncode == 0, same.stderr + same.stdout
    other = _trace(tmp_path / "other.jsonl", last=b"2")
    different = run_cli("diff", str(trace), str(other), "--json")
    assert different.returncode == 1, different.stderr
    report = json.loads(different.stdout)
    (exchange,) = report["exchanges"]
    size = len(_answer("a1"))
    assert exchange["differences"] == [
        {
            "path": "response",
            "kind": "changed",
            "recorded": f"<{size} bytes, compared as bytes: a payload too large to parse>",
            "live": f"<{size} bytes, compared as bytes: a payload too large to parse>",
        }
    ]


@contextmanager
def answering(last: bytes) -> Iterator[tuple[str, int]]:
    """A plugin that answers every request with `_answer` ending in ``last``, carrying the
    request's id, for the block."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(30)

    def serve() -> None:
        with server:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    reader = conn.makefile("rb")
                    while header := reader.read(4):
                        request = json.loads(reader.read(struct.unpack(">I", header)[0]))
                        ident = json.dumps(request["id"])
                        answer = _answer("x", last).replace(b'"x"', ident.encode(), 1)
                        conn.sendall(GOLEM.frame_payload(answer))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[:2]
    finally:
        server.close()
        thread.join(timeout=10)


@pytest.mark.parametrize("last", [b"1", b"2"], ids=["same answer", "another answer"])
def test_verify_resends_the_request_and_compares_the_answer_as_bytes(
    trace: Path, last: bytes
) -> None:
    """The live answer carries the id verify sent, not the recorded one: only its result
    counts, as bytes."""
    with answering(last) as (host, port):
        done = run_cli("verify", str(trace), "--target", f"{host}:{port}", "--json", timeout=120)
    report = json.loads(done.stdout)
    assert report["exchanges"] == 1
    if last == b"1":
        assert done.returncode == 0 and report["failed"] == [], done.stderr
    else:
        assert done.returncode == 1, done.stderr
        (failed,) = report["failed"]
        assert [d["path"] for d in failed["differences"]] == ["response"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    members=st.dictionaries(st.text(max_size=6), JSON, max_size=5),
    ident=st.integers() | st.text(max_size=6),
    spaced=st.booleans(),
    live=st.integers() | st.text(max_size=6),
)
def test_the_id_spliced_is_the_id_a_reader_sees(
    members: dict[str, Any], ident: Any, spaced: bool, live: Any
) -> None:
    """Whatever the members around it and the spacing, splicing the top-level id gives the
    object ``profile.with_id`` would: the same members, the live id."""
    obj = {**members, "id": ident}
    separators = (", ", ": ") if spaced else (",", ":")
    payload = json.dumps(obj, separators=separators, ensure_ascii=False).encode()
    start, end = member_span(payload, "id") or (0, 0)
    assert json.loads(payload[start:end]) == ident
    assert json.loads(with_id(payload, live, {})) == {**obj, "id": live}


def test_only_top_level_members_are_found() -> None:
    payload = b'{"result": {"id": 1, "x": ["id"]}, "s": "\\"id\\": 2", "id" : "r"}'
    assert with_id(payload, "L", {}) == payload.replace(b'"r"', b'"L"')
    assert member_span(b'[{"id": 1}]', "id") is None
    assert member_span(b'{"a": {"id": 1}}', "id") is None


def test_recorded_guids_become_the_live_ones() -> None:
    recorded = "6f1c2a10-0000-4000-8000-000000000001"
    payload = b'{"id": "a1", "result": {"guid": "%s"}}' % recorded.encode()
    live = with_id(payload, "b9", {recorded: "live-guid"})
    assert json.loads(live) == {"id": "b9", "result": {"guid": "live-guid"}}


def test_payloads_compared_as_bytes_but_for_their_id() -> None:
    """Whole, but for their ids: an envelope's ``success`` flipped or a member added is a
    difference, as it is when the payloads are compared parsed."""
    a = b'{"id": 1, "success": true, "result": [1, 2]}'
    assert compare_as_bytes(a, b'{"id": 2, "success": true, "result": [1, 2]}') == []
    for live in (b'{"id": 2, "success": false, "result": [1, 2]}', a[:-1] + b', "w": 1}'):
        (found,) = compare_as_bytes(a, live)
        assert (found.path, found.recorded, found.live) == ("response", a.decode(), live.decode())


def test_each_recorded_guid_is_mapped_once() -> None:
    """A map may send a recorded GUID to one that is itself recorded (``GuidMap.bind``
    allows it): each string is looked up once, as `GuidMap.to_live` does, never twice."""
    one, two, five = (
        f"{n}" * 8 + f"-{n}{n}{n}{n}-4{n}{n}{n}-8{n}{n}{n}-" + f"{n}" * 12 for n in (1, 2, 5)
    )
    said = f'say "{one}'  # a string that ends with a GUID after an escaped quote: no GUID
    recorded = {"id": "a1", "result": {"objects": [one, two], two: 1, "text": said}}
    live = json.loads(with_id(json.dumps(recorded).encode(), "b", {one: two, two: five}))
    assert live == {"id": "b", "result": {"objects": [two, five], two: 1, "text": said}}


@pytest.mark.parametrize("last", [b"1", b"2"], ids=["same answer", "another answer"])
def test_resend_compares_a_large_answer_as_bytes(trace: Path, last: bytes) -> None:
    with answering(last) as (host, port):
        done = run_cli("resend", "--target", f"{host}:{port}", str(trace), "1", timeout=120)
    if last == b"1":
        assert done.returncode == 0 and "same answer as recorded" in done.stdout, done.stderr
    else:
        assert done.returncode == 1, done.stderr
        assert "1 differences" in done.stdout and "compared as bytes" in done.stdout


def test_a_request_too_large_to_parse_is_named_when_it_is_not_matched(tmp_path: Path) -> None:
    """Its params are never parsed, so matching by params never finds it: the miss says so,
    and where it is served (``--match method``)."""
    params = b'{"id": "a1", "method": "mesh.set_mask", "params": {"mask": [' + b"1," * ONES
    tap = TapSimulator(GOLEM, cap=64 * 1024 * 1024)
    tap.open(1)
    tap.send(1, Direction.C2S, GOLEM.frame_payload(params + b"1]}}"))
    tap.respond(1, {"id": "a1", "result": {"ok": True}, "error": None})
    tap.close(1)
    path = tmp_path / "request.jsonl"
    path.write_bytes(write_recording(tap.events))
    request = {"id": 7, "method": "mesh.set_mask", "params": {"mask": [1]}}
    with replaying(str(path)) as (_, ready):
        missed = json.loads(_call(ready[1], int(ready[2]), request))
    assert "too large to parse" in json.dumps(missed) and "--match method" in json.dumps(missed)
    with replaying(str(path), "--match", "method") as (_, ready):
        served = json.loads(_call(ready[1], int(ready[2]), request))
    assert served == {"id": 7, "result": {"ok": True}, "error": None}
