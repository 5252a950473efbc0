"""Property tests: round trips under arbitrary chunking, garbage never raises, raw bytes kept."""

from __future__ import annotations

import json
import struct
from typing import Any

from core_feeding import decode_all, raw_of
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.decoders import LengthPrefixedDecoder, LineDecoder
from golem_core.framing import Frame, FrameError
from golem_core.messages import Message, Role
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile

SETTINGS = settings(max_examples=200, deadline=None)

text = st.text(max_size=12)  # includes non-ASCII, emoji and control characters
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)
golem_messages = st.one_of(
    st.fixed_dictionaries(
        {
            "id": st.uuids().map(str) | st.integers(),
            "method": text,
            "params": st.dictionaries(text, json_values, max_size=4),
        }
    ),
    st.fixed_dictionaries(
        {
            "id": st.uuids().map(str),
            "result": st.dictionaries(text, json_values, max_size=4),
            "error": st.none(),
        }
    ),
    st.fixed_dictionaries(
        {
            "id": st.uuids().map(str) | st.none(),
            "result": st.none(),
            "error": st.fixed_dictionaries(
                {"code": st.sampled_from(["TIMEOUT", -32603]), "message": text}
            ),
        }
    ),
)
jsonrpc_messages = st.one_of(
    st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": st.integers(0, 2**32),
            "method": text,
            "params": st.dictionaries(text, json_values, max_size=4),
        }
    ),
    st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": st.integers(0, 2**32),
            "result": json_values.filter(lambda v: v is not None),
        }
    ),
    st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": st.integers(0, 2**32),
            "error": st.fixed_dictionaries({"code": st.integers(-32768, -32000), "message": text}),
        }
    ),
)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:])]


def round_trip(profile: Profile, objs: list[Any], cuts: list[int]) -> None:
    frames = [profile.encode(obj) for obj in objs]
    stream = b"".join(frames)
    events = decode_all(profile.new_decoder(), split(stream, cuts))
    assert raw_of(events) == stream
    decoded = [e for e in events if isinstance(e, Frame)]
    assert [f.raw for f in decoded] == frames
    messages: list[Message] = [profile.parse(f.payload, None) for f in decoded]
    assert [m.obj for m in messages] == objs  # type: ignore[union-attr]


@SETTINGS
@given(st.lists(golem_messages, max_size=6), st.lists(st.integers(0, 10_000), max_size=12))
def test_golem_round_trip_under_any_chunking(objs: list[Any], cuts: list[int]) -> None:
    round_trip(GOLEM, objs, cuts)


@SETTINGS
@given(st.lists(jsonrpc_messages, max_size=6), st.lists(st.integers(0, 10_000), max_size=12))
def test_jsonrpc_round_trip_under_any_chunking(objs: list[Any], cuts: list[int]) -> None:
    round_trip(JSONRPC_NDJSON, objs, cuts)


@SETTINGS
@given(golem_messages | json_values)
def test_golem_encode_is_the_spec_reference_snippet(obj: Any) -> None:
    p = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    assert GOLEM.encode(obj) == struct.pack("!I", len(p)) + p


def lp(payload: bytes) -> bytes:
    return struct.pack("!I", len(payload)) + payload


pieces = st.one_of(
    st.binary(max_size=40),
    st.binary(max_size=30).map(lp),
    st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"") + b"\n"),
    golem_messages.map(GOLEM.encode),
    jsonrpc_messages.map(JSONRPC_NDJSON.encode),
    st.integers(0, 2**32 - 1).map(lambda n: struct.pack("!I", n)),
)


@SETTINGS
@given(
    st.lists(pieces, max_size=10),
    st.lists(st.integers(0, 10_000), max_size=8),
    st.integers(0, 64),
    st.booleans(),
)
def test_garbage_never_raises_and_keeps_every_byte(
    parts: list[bytes], cuts: list[int], cap: int, skip: bool
) -> None:
    stream = b"".join(parts)
    for decoder, profile in (
        (LengthPrefixedDecoder(cap, skip_oversized=skip), GOLEM),
        (LineDecoder(max(cap, 1), skip_oversized=skip), JSONRPC_NDJSON),
    ):
        events = decode_all(decoder, split(stream, cuts))
        fatal = [e for e in events if isinstance(e, FrameError) and not e.recoverable]
        if skip or not fatal:
            assert raw_of(events) == stream
        else:
            # A fatal error ends decoding: everything before it and what it buffered is kept.
            assert stream.startswith(raw_of(events))
        assert len(fatal) <= 1 and (not fatal or events[-1] is fatal[0])
        for event in events:
            if isinstance(event, Frame):
                assert event.size <= decoder.max_payload + 4
                for role in (Role.REQUEST, Role.RESPONSE, None):
                    message = profile.parse(event.payload, role)
                    profile.check_message(message, event.payload)
                    profile.describe(message)
            elif isinstance(event, FrameError):
                assert profile.frame_violation(event).outcome


def parse_and_check_both_ways(profile: Profile, payload: bytes) -> tuple[Message, Message]:
    """``payload`` parsed as a request and as a response, each checked, then the two checked
    as an exchange (none of which may raise)."""
    request = profile.parse(payload, Role.REQUEST)
    response = profile.parse(payload, Role.RESPONSE)
    profile.check_message(request, payload)
    profile.check_message(response, payload)
    profile.check_exchange(request, response)
    return request, response


@SETTINGS
@given(st.binary(max_size=200))
def test_parse_never_raises(payload: bytes) -> None:
    for profile in (GOLEM, JSONRPC_NDJSON):
        request, response = parse_and_check_both_ways(profile, payload)
        profile.correlation_key(response)
    JSONRPC_NDJSON.client_outcome(request, response)


@SETTINGS
@given(json_values, json_values)
def test_parse_of_any_json_object_never_raises(a: Any, b: Any) -> None:
    for obj in (
        a,
        {"id": a, "method": b},
        {"id": a, "result": b, "error": a},
        {"jsonrpc": "2.0", "id": a, "error": b},
    ):
        payload = json.dumps(obj).encode()
        for profile in (GOLEM, JSONRPC_NDJSON):
            request, response = parse_and_check_both_ways(profile, payload)
        JSONRPC_NDJSON.client_outcome(request, response)
