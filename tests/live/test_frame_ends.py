"""The id of a frame too large to observe, read from its two ends only (`FrameEnds`): at the
top level of the JSON object, never in a nested object or inside a string, whatever a hostile
writer puts around it, and within a bounded number of bytes."""

from __future__ import annotations

import json
import time

from golem_proxy.live.frame_ends import (
    END_BYTES,
    NO_ID,
    FrameEnds,
    head_members,
    tail_members,
)


def ends_of(payload: bytes, first: int = 1000, piece: int = 4096) -> FrameEnds:
    """The ends kept of ``payload`` handed over as a digest is: its ``first`` bytes, then the
    rest in ``piece``-byte chunks."""
    ends = FrameEnds(payload[:first])
    for at in range(first, len(payload), piece):
        ends.add(payload[at : at + piece])
    return ends


BULK = "x" * (3 * END_BYTES)


def test_an_id_before_the_bulk_is_read_from_the_head() -> None:
    payload = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"text": BULK}}).encode()
    assert ends_of(payload + b"\n").reply_id() == 7


def test_an_id_after_the_bulk_is_read_from_the_tail() -> None:
    # The MCP TypeScript SDK's order.
    payload = json.dumps({"result": {"text": BULK}, "jsonrpc": "2.0", "id": "a-1"}).encode()
    assert ends_of(payload + b"\r\n").reply_id() == "a-1"


def test_ids_in_nested_objects_are_not_the_frames() -> None:
    bulk = BULK.encode()
    head = b'{"result": {"id": 1, "items": [{"id": 2}, "' + bulk + b'"]}, "jsonrpc": "2.0"}'
    assert ends_of(head).reply_id() is NO_ID
    tail = b'{"jsonrpc": "2.0", "result": [{"a": "' + BULK.encode() + b'"}, {"id": 3}]}'
    assert ends_of(tail).reply_id() is NO_ID


def test_strings_that_hold_an_id_are_not_members() -> None:
    trap = '\\"id\\": 9, \\"x\\": {\\"id\\": 8}'
    payload = ('{"result": "' + trap + BULK + trap + '", "jsonrpc": "2.0", "id": 4}').encode()
    assert ends_of(payload).reply_id() == 4
    scalars, names = head_members(payload[:200])
    assert "id" not in scalars and names == {"result"}
    # A tail whose last string ends in an escaped quote and a fake member.
    payload = ('{"id": 5, "result": "' + BULK + '\\\\", "note": "\\"id\\": 6"}').encode()
    assert ends_of(payload).reply_id() == 5
    assert tail_members(payload[-100:])[0] == {"note": b'"\\"id\\": 6"'}


def test_a_name_written_with_escapes_is_read_as_json_reads_it() -> None:
    payload = ('{"\\u0069d": 11, "result": "' + BULK + '"}').encode()
    assert ends_of(payload).reply_id() == 11


def test_a_request_or_a_frame_that_is_no_reply_has_no_reply_id() -> None:
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m", "params": [BULK]}).encode()
    assert ends_of(request).reply_id() is NO_ID
    no_result = json.dumps({"id": 1, "data": BULK}).encode()
    assert ends_of(no_result).reply_id() is NO_ID
    assert ends_of(b"not json at all " + BULK.encode()).reply_id() is NO_ID
    assert ends_of(b"[" + json.dumps({"id": 1, "result": BULK}).encode() + b"]").reply_id() is NO_ID


def test_an_id_cut_by_the_first_bytes_is_read_once_the_head_grows() -> None:
    # The first bytes end inside the id: "12" of "123" is no id until more come.
    payload = b'{"jsonrpc": "2.0", "id": 123' + b" " * (2 * END_BYTES) + b', "result": 1}'
    assert head_members(payload[:26])[0] == {"jsonrpc": b'"2.0"'}
    assert ends_of(payload, first=26).reply_id() == 123  # the head grows past it


def test_null_and_duplicate_ids_are_read_as_a_parser_reads_them() -> None:
    assert ends_of(json.dumps({"id": None, "result": BULK}).encode()).reply_id() is None
    twice = ('{"id": 1, "result": "' + BULK + '", "id": 2}').encode()
    assert ends_of(twice).reply_id() == 2


def test_huge_heads_are_scanned_within_the_bound() -> None:
    # A head of nothing but nesting, then a tail of nothing but backslashes: each end is
    # scanned within END_BYTES, fast, whatever the frame's size.
    deep = b'{"result": ' + b"[" * (8 * END_BYTES) + b"]" * (8 * END_BYTES) + b"}"
    slashes = b'{"result": "' + b"\\" * (8 * END_BYTES) + b'"}'
    started = time.monotonic()
    for payload in (deep, slashes):
        ends = ends_of(payload, first=4 * END_BYTES)
        assert len(ends.head) == END_BYTES and len(ends.tail) == END_BYTES
        assert ends.reply_id() is NO_ID
    assert time.monotonic() - started < 5
