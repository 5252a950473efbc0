"""Property-based fuzzing of everything that reads untrusted bytes: the framing decoders and
message parsing of both profiles, pairing, the tap (decode + checks + redaction), the
recording reader and the fault grammar. Bounded so the module runs in about 20 s; a crash
found here gets a named regression test in test_limits.py."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golem_core.framing import EndOfStream, FrameError
from golem_core.messages import Role
from golem_core.pairing import Correlator
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile
from golem_proxy.events import Direction, Event
from golem_proxy.live.faults import FaultPlan, FaultSpecError, parse_fault
from golem_proxy.live.redact import Redactor
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.recording.format import Header, RecordingError, RecordingReader, encode_header

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILES = st.sampled_from([GOLEM, JSONRPC_NDJSON])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
ids = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["1", "a", ""]) | st.floats()
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": ids,
        "method": st.sampled_from(["ping", "scene.list_objects", ""]) | json_values,
        "params": json_values,
        "result": json_values,
        "error": json_values
        | st.fixed_dictionaries(
            {"code": st.integers() | st.text(max_size=8), "message": json_values},
            optional={"details": json_values, "data": json_values},
        ),
    },
)


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _payloads() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=200),
        envelopes.map(lambda obj: json.dumps(obj).encode()),
        st.integers(1, 3000).map(
            lambda d: b'{"id":"1","method":"m","params":{"a":' + _nested(d) + b"}}"
        ),
    )


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for point in [*points, len(data)]:
        out.append(data[last:point])
        last = point
    return [chunk for chunk in out if chunk]


@FUZZ
@given(
    PROFILES,
    st.binary(max_size=600),
    st.lists(st.integers(0, 10_000), max_size=12),
    st.integers(0, 300),
)
def test_decoders_never_raise_and_keep_every_byte(
    profile: Profile, data: bytes, cuts: list[int], cap: int
) -> None:
    decoder = profile.new_decoder(cap)
    raw = bytearray()
    for chunk in _chunks(data, cuts):
        decoder.receive_data(chunk)
        raw += b"".join(getattr(e, "raw", b"") for e in decoder.events())
    decoder.receive_eof()
    events = list(decoder.events())
    raw += b"".join(getattr(e, "raw", b"") for e in events)
    assert bytes(raw) == data
    assert decoder.closed
    assert events and isinstance(events[-1], (EndOfStream, FrameError))


@FUZZ
@given(PROFILES, _payloads(), st.sampled_from([Role.REQUEST, Role.RESPONSE, None]))
def test_parsing_and_checks_never_raise(profile: Profile, payload: bytes, role: Any) -> None:
    message = profile.parse(payload, role)
    profile.check_message(message, payload)
    profile.describe(message)
    hash(profile.correlation_key(message))
    profile.method_of(message)


@FUZZ
@given(PROFILES, st.lists(st.tuples(st.booleans(), _payloads()), max_size=30))
def test_pairing_never_raises_and_counts_hold(
    profile: Profile, steps: list[tuple[bool, bytes]]
) -> None:
    correlator: Correlator[int] = Correlator(profile)
    outstanding = 0
    for is_request, payload in steps:
        if is_request:
            request = profile.parse(payload, Role.REQUEST)
            correlator.add_request(request, 0)
            # A JSON-RPC notification is never answered, so it is not held.
            outstanding += profile.expects_response(request)
        else:
            reply = profile.parse(payload, Role.RESPONSE)
            if correlator.match_response(reply) is not None:
                outstanding -= 1
                profile.check_exchange(reply, reply)
        assert len(correlator) == outstanding


@FUZZ
@given(
    PROFILES,
    st.lists(st.tuples(st.booleans(), _payloads()), max_size=12),
    st.lists(st.integers(0, 5000), max_size=8),
    st.booleans(),
)
def test_tap_never_raises_on_any_traffic(
    profile: Profile, frames: list[tuple[bool, bytes]], cuts: list[int], redact: bool
) -> None:
    events: list[Event] = []
    redactor = Redactor(["params.a", "*:result.*", "params.*.0"]) if redact else None
    tap = ConnectionTap(1, "main", profile, events.append, redactor=redactor)
    streams: dict[Direction, bytearray] = {Direction.C2S: bytearray(), Direction.S2C: bytearray()}
    for is_request, payload in frames:
        direction = Direction.C2S if is_request else Direction.S2C
        body = payload.replace(b"\n", b" ") if profile is JSONRPC_NDJSON else payload
        streams[direction] += profile.frame_payload(body)
    for direction, data in streams.items():
        for chunk in _chunks(bytes(data), cuts):
            tap.process(direction, chunk, 0.0)
        tap.process(direction, b"", 0.0)


event_lines = st.one_of(
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b"")),
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(
                [
                    "frame",
                    "open",
                    "close",
                    "exchange",
                    "violation",
                    "frame-error",
                    "discarded",
                    "fault",
                    "gap",
                    "other",
                ]
            )
        },
        optional={
            key: json_values | ids
            for key in (
                "conn",
                "route",
                "dir",
                "n",
                "t",
                "raw",
                "msg",
                "req",
                "resp",
                "bytes",
                "rule",
                "severity",
                "message",
                "error",
                "final",
                "fault",
                "client",
                "upstream",
                "size",
            )
        },
    ).map(lambda obj: json.dumps(obj).encode()),
    st.integers(1, 5000).map(_nested),
)


@FUZZ
@given(st.lists(event_lines, max_size=12), st.booleans())
def test_recording_reader_fails_only_with_recording_error(lines: list[bytes], tail: bool) -> None:
    data = encode_header(Header.new("golem", [])) + b"\n".join(lines) + (b"" if tail else b"\n")
    with contextlib.suppress(RecordingError):
        list(RecordingReader(io.BytesIO(data)))


@FUZZ
@given(st.text(max_size=80), st.binary(max_size=200))
def test_fault_specs_parse_or_say_why(spec: str, payload: bytes) -> None:
    try:
        rule = parse_fault(spec)
    except FaultSpecError:
        return
    faults = FaultPlan([rule], 1).connection(1, "main", GOLEM)
    framed = GOLEM.frame_payload(payload)
    for direction in Direction:
        action = faults.decide(direction, framed, 4, payload)
        assert action.truncate_at is None or 0 < action.truncate_at < len(framed)
        assert len(action.data) == len(framed)
