"""What a frame's parse would hold is judged before it is made (`golem_proxy.json_cost`): a
blob costs what its elided text does, a frame a parse refuses at once is typed malformed, and
the tap keeps a frame over the limit as one too large to hold is kept (its header, size and
digest), its answer no orphan and the connection decoded on."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from golem_core.messages import Malformed, MalformedKind, Role, decode_json
from golem_core.profiles import GOLEM, JSONRPC_NDJSON
from golem_proxy.events import (
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
    GapReason,
    ObservationLost,
    ViolationSeen,
)
from golem_proxy.json_cost import parse_holds
from golem_proxy.live.tap import ConnectionTap, ObserveLimits
from golem_proxy.live.tap_parse import DECODER_DEPTH, TooCostly, parse_elided, parse_for_view

MIB = 1024 * 1024
N = 300_000

EMPTY_ARRAYS = b"[" + b"[]," * 100_000 + b"[]]"
EMPTY_OBJECTS = b"[" + b"{}," * 100_000 + b"{}]"


def test_a_frame_over_the_limit_is_refused_before_it_is_parsed() -> None:
    payload = b'{"id":"1","success":true,"result":' + EMPTY_ARRAYS + b"}"
    cost = parse_holds(payload, 0)
    with pytest.raises(TooCostly) as refused:
        parse_for_view(GOLEM, payload, Role.RESPONSE, cost - 1)
    assert refused.value.cost == cost
    message, elided = parse_for_view(GOLEM, payload, Role.RESPONSE, cost)
    assert message.obj == json.loads(payload) and elided == 0
    assert parse_for_view(GOLEM, payload, Role.RESPONSE)[0].obj == message.obj


def test_a_blob_costs_what_its_elided_text_does() -> None:
    """A 3 MiB capture elided for the view costs its placeholder, not 3 bytes a byte."""
    blob = base64.b64encode(bytes(range(256)) * (9 * 1024)).decode()
    payload = json.dumps({"id": "1", "success": True, "result": {"image": blob}}).encode()
    assert parse_holds(payload, 0) > MIB
    message, elided = parse_for_view(GOLEM, payload, Role.RESPONSE, MIB)
    assert elided == len(blob) and message.role is Role.RESPONSE


BLOB = base64.b64encode(bytes(range(256)) * 4096)  # 1.3 MiB, every base64 character


@pytest.mark.parametrize(
    "payload",
    [
        b'{"id":"1","result":{"t":"caf\\u00e9","image":"' + BLOB + b'"},"error":null}',
        b'{"id":"1","result":{"image":"' + BLOB + b'","t":"\\u00e9"},"error":null}',
        b'{"id":"1","result":{"t":"\\u0041","image":"' + BLOB + b'"},"error":null}',
        b'{"id":"1","result":{"a":"x\\"' + BLOB + b'","b":"' + BLOB + b'\\u00e9"},"error":null}',
        b'{"id":"1","result":["\\u00e9' + BLOB + b'","' + BLOB + b'","\\u12"],"error":null}',
        b'{"id":"1","result":{"image":"' + BLOB + b'"},"error":null}',
    ],
    ids=["before", "after", "ascii", "escaped-quote", "not-opaque", "none"],
)
def test_the_checks_find_in_the_elided_text_what_they_find_in_the_payload(
    payload: bytes,
) -> None:
    """The tap checks a large frame's elided text, not its payload (the blob searched once,
    by the elision): every escape next to, before or after a blob is found as in the payload."""
    message, text, elided = parse_elided(GOLEM, payload, Role.RESPONSE, 64 * MIB)
    assert elided and len(text) < len(payload) - elided + 100
    assert GOLEM.check_message(message, text) == GOLEM.check_message(message, payload)
    assert parse_for_view(GOLEM, payload, Role.RESPONSE, 64 * MIB) == (message, elided)


def test_a_frame_with_nothing_elided_is_its_own_text() -> None:
    payload = b'{"id":"1","result":{"t":"caf\\u00e9"},"error":null}'
    parsed = parse_elided(GOLEM, payload, Role.RESPONSE)
    assert parsed.text is payload and parsed.elided == 0
    assert [v.rule for v in GOLEM.check_message(parsed.message, parsed.text)] == [
        "golem.encoding.ascii-escaped"
    ]


def test_the_tap_keeps_a_request_too_costly_to_parse_as_its_digest() -> None:
    """As a frame too large to hold: a gap with its header, size and SHA-256; its answer is
    no orphan; the frames after it are decoded, numbered as if it were not there."""
    events: list[Event] = []
    limits = ObserveLimits(parse=MIB)
    tap = ConnectionTap(1, "main", GOLEM, events.append, limits=limits)
    costly = {"id": "a", "method": "geometry.create_mesh", "params": {"faces": [[]] * 50_000}}
    big = GOLEM.encode(costly)
    assert parse_holds(big[4:], 0) > MIB and len(big) * 3 < MIB  # bytes alone are no reason
    tap.process(Direction.C2S, big, 0.1)
    tap.process(Direction.S2C, GOLEM.encode({"id": "a", "result": {}, "error": None}), 0.2)
    tap.process(Direction.C2S, GOLEM.encode({"id": "b", "method": "ping", "params": {}}), 0.3)
    tap.process(
        Direction.S2C, GOLEM.encode({"id": "b", "result": {"alive": True}, "error": None}), 0.4
    )
    lost = [e for e in events if isinstance(e, ObservationLost)]
    assert [(gap.reason, gap.size, gap.direction) for gap in lost] == [
        (GapReason.FRAME_TOO_LARGE, len(big), Direction.C2S)
    ]
    assert lost[0].digest == "sha256:" + hashlib.sha256(big[4:]).hexdigest()
    assert lost[0].header == big[:4]
    cost = parse_holds(big[4:], MIB) >> 20
    assert f"a {len(big)}-byte frame whose parse would hold about {cost} MiB" in lost[0].detail
    assert "over the 1 MiB observation limit" in lost[0].detail
    seen = [(e.direction, e.index, e.orphan) for e in events if isinstance(e, FrameSeen)]
    assert seen == [(Direction.S2C, 0, False), (Direction.C2S, 0, False), (Direction.S2C, 1, False)]
    assert not any(isinstance(e, ViolationSeen) for e in events)
    assert [e.request.message.method for e in events if isinstance(e, ExchangeCompleted)] == [
        "ping"
    ]


def test_an_answer_too_costly_to_parse_is_kept_as_its_digest() -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, events.append, limits=ObserveLimits(parse=MIB))
    answer = b'{"jsonrpc":"2.0","id":1,"result":' + EMPTY_OBJECTS + b"}\n"
    tap.process(Direction.C2S, b'{"jsonrpc":"2.0","id":1,"method":"mask"}\n', 0.1)
    tap.process(Direction.S2C, answer, 0.2)
    lost = [e for e in events if isinstance(e, ObservationLost)]
    assert [(gap.reason, gap.size) for gap in lost] == [(GapReason.FRAME_TOO_LARGE, len(answer))]
    # As a line over the frame limit is digested: its bytes after its header, newline too.
    assert lost[0].digest == "sha256:" + hashlib.sha256(answer).hexdigest()
    assert [e.direction for e in events if isinstance(e, FrameSeen)] == [Direction.C2S]


def test_a_mesh_under_the_default_limit_is_parsed() -> None:
    """The default limit leaves a 32 MiB mesh (3-number arrays) or mask (numbers) parsed."""
    limit = ObserveLimits().parse
    vertex = b"[12.345678,-3.210001,0.5],"
    mesh = b"[" + vertex * (32 * MIB // len(vertex)) + b"[0,0,0]]"
    mask = b"[" + b"1," * (16 * MIB) + b"1]"
    assert parse_holds(mesh, limit) < limit
    assert parse_holds(mask, limit) < limit
    assert parse_holds(b"[" + b"[]," * (10 * MIB) + b"[]]", limit) > limit


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (b"[" * 2_000_000, MalformedKind.INVALID_JSON),  # deeper than the decoder goes
        (b"[" + b"[]," * 700_000 + b'"\xff"]', MalformedKind.INVALID_UTF8),
    ],
    ids=["opens past the decoder's depth", "not UTF-8"],
)
def test_a_costly_frame_a_parse_refuses_at_once_is_malformed(
    payload: bytes, kind: MalformedKind
) -> None:
    """Typed as a parse types it, so that ``--enforce-limits`` still closes the connection."""
    assert parse_holds(payload, 0) > MIB
    message, _ = parse_for_view(JSONRPC_NDJSON, payload, Role.REQUEST, MIB)
    assert isinstance(message, Malformed) and message.kind is kind
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, [].append, limits=ObserveLimits(parse=MIB))
    verdict = tap.process(Direction.C2S, payload + b"\n", 0.1)
    assert verdict is not None and "malformed" in verdict.reason


def test_after_an_answer_not_observed_a_request_with_its_id_takes_the_next_answer() -> None:
    """A client that uses an id again once answered: the answer not observed was the first
    request's, so the next answer is the second request's, not the first's."""
    events: list[Event] = []
    tap = ConnectionTap(1, "scrybe", JSONRPC_NDJSON, events.append, limits=ObserveLimits(parse=MIB))
    costly = b'{"jsonrpc":"2.0","id":1,"result":' + EMPTY_OBJECTS + b"}\n"
    tap.process(Direction.C2S, b'{"jsonrpc":"2.0","id":1,"method":"mask"}\n', 0.1)
    tap.process(Direction.S2C, costly, 0.2)
    tap.process(Direction.C2S, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', 0.3)
    tap.process(Direction.S2C, b'{"jsonrpc":"2.0","id":1,"result":{}}\n', 0.4)
    exchanges = [e for e in events if isinstance(e, ExchangeCompleted)]
    assert [(e.request.index, e.request.message.method) for e in exchanges] == [(1, "ping")]


def test_a_costly_frame_never_delivered_says_so() -> None:
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, limits=ObserveLimits(parse=MIB))
    tap.mark_undelivered(Direction.C2S, "upstream gone")
    costly = GOLEM.encode({"id": "a", "method": "m", "params": {"faces": [[]] * 50_000}})
    tap.process(Direction.C2S, costly, 0.1)
    (gap,) = [e for e in events if isinstance(e, ObservationLost)]
    assert "was read whole, never delivered (upstream gone)" in gap.detail


def test_the_depth_a_parse_refuses_is_measured_where_it_runs() -> None:
    """1,000 on Python 3.11, 10,000 on 3.13: a frame that opens that many at its start is
    refused at once there, whatever the version."""
    assert DECODER_DEPTH is not None
    assert decode_json(b"[" * DECODER_DEPTH + b"]" * DECODER_DEPTH)[1] is not None
    shallower = DECODER_DEPTH // 10
    assert decode_json(b"[" * shallower + b"]" * shallower)[1] is None
