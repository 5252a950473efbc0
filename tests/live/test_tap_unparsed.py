"""A frame the tap does not parse (live/tap_parse.py): a payload whose parse would cost more
than a reader's budget even with its blobs elided (30 MB of ``[[],…]``: ~900 MiB) is typed
from a skeleton of its bytes, as every reader types it, and its bulk is not checked. Before,
the tap parsed it whole, in the observing process."""

from __future__ import annotations

import io
import tracemalloc

from golem_core.messages import Malformed, MalformedKind, Response, Role
from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, ExchangeCompleted, FrameSeen, ViolationSeen
from golem_proxy.live.tap_parse import parse_for_view
from golem_proxy.recording.format import RecordingReader
from tests.support.trace_builder import TapSimulator, write_recording

NESTED = b"[" + b"[]," * 10_000_000 + b"[]]"
ANSWER = b'{"id": "a1", "success": true, "result": ' + NESTED + b"}"


def _answered(answer: bytes) -> TapSimulator:
    tap = TapSimulator(GOLEM, cap=64 * 1024 * 1024)
    tap.open(1)
    tap.request(1, {"id": "a1", "method": "mesh.get", "params": {}})
    tap.send(1, Direction.S2C, GOLEM.frame_payload(answer))
    return tap


def test_a_payload_over_the_budget_is_typed_from_its_bytes_in_bounded_memory() -> None:
    tracemalloc.start()
    try:
        tap = _answered(ANSWER)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200 << 20, f"{peak >> 20} MiB"  # a parse held ~900 MiB
    (answer,) = [e for e in tap.events if isinstance(e, FrameSeen) and e.direction is Direction.S2C]
    assert answer.payload == ANSWER
    assert isinstance(answer.message, Response)
    assert answer.message.obj == {"id": "a1", "success": True,
                                  "result": [f"<{len(NESTED)} bytes not parsed>"]}  # fmt: skip
    assert answer.elided == len(NESTED)
    (exchange,) = [e for e in tap.events if isinstance(e, ExchangeCompleted)]
    assert exchange.outcome.kind.value == "ok"
    # Its placeholders are not what the plugin sent: nothing is judged from them.
    assert not [e for e in tap.events if isinstance(e, ViolationSeen)]


def test_a_reader_types_it_from_the_same_skeleton() -> None:
    tap = _answered(ANSWER)
    live = [e for e in tap.events if isinstance(e, FrameSeen)]
    back = [e for e in RecordingReader(io.BytesIO(write_recording(tap.events)))
            if isinstance(e, FrameSeen)]  # fmt: skip
    assert [(f.payload, f.message) for f in back] == [(f.payload, f.message) for f in live]


def test_a_broken_payload_over_the_budget_is_malformed_without_a_parse() -> None:
    broken = ANSWER[:-2] + b"}"  # the array never closes
    tap = _answered(broken)
    (answer,) = [e for e in tap.events if isinstance(e, FrameSeen) and e.direction is Direction.S2C]
    assert isinstance(answer.message, Malformed)
    assert answer.message.kind is MalformedKind.INVALID_JSON
    assert "too large to parse" in answer.message.detail
    (violation,) = [e for e in tap.events if isinstance(e, ViolationSeen)]
    assert violation.violation.rule == "golem.message.malformed"
    (exchange,) = [e for e in tap.events if isinstance(e, ExchangeCompleted)]
    assert exchange.outcome.kind.value == "malformed"


def test_a_capture_s_blob_is_elided_and_the_rest_parsed_as_before() -> None:
    blob = b"QUJD" * (4 * 1024 * 1024)  # 16 MiB of base64
    capture = b'{"id": "a1", "success": true, "result": {"image": "' + blob + b'", "w": 4}}'
    message, elided, unparsed = parse_for_view(GOLEM, capture, Role.RESPONSE)
    assert not unparsed and elided == len(blob)
    assert isinstance(message, Response) and message.obj["result"]["w"] == 4
