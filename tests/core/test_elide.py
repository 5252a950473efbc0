"""Eliding long opaque strings keeps the structure and touches nothing but those strings."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.messages import Response, Role, _elide_by_pattern, elide_long_strings
from golem_core.profiles import GOLEM

MIN = 64


def shape(value: Any) -> Any:
    """The value with every long base64-like string replaced by a marker."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    if isinstance(value, str):
        if re.fullmatch(r"<\d+ bytes elided>", value):
            return "<elided>"
        if len(value) >= MIN and re.fullmatch(r"[A-Za-z0-9+/=_.\-]+", value):
            return "<elided>"
    return value


def test_a_base64_image_is_elided_and_the_envelope_kept() -> None:
    blob = base64.b64encode(bytes(range(256)) * 64).decode()
    payload = GOLEM.encode_payload(
        {"id": "a", "result": {"image": blob, "width": 4, "note": "short"}, "error": None}
    )
    message, elided = GOLEM.parse_elided(payload, Role.RESPONSE, MIN)
    assert isinstance(message, Response) and message.id == "a"
    assert elided == len(blob)
    assert message.result["width"] == 4 and message.result["note"] == "short"
    assert message.result["image"] == f"<{len(blob)} bytes elided>"


def test_long_runs_outside_strings_are_never_touched() -> None:
    numbers = list(range(2000))  # a long run of digits and commas between two strings
    payload = json.dumps({"a": "x", "n": numbers, "b": "y"}, separators=(",", ":")).encode()
    skeleton, elided = elide_long_strings(payload, MIN)
    assert (skeleton, elided) == (payload, 0)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=20)
    | st.text(alphabet="ABCxyz019+/=", min_size=MIN, max_size=3 * MIN),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_elided_json_has_the_same_shape(value: Any) -> None:
    payload = json.dumps(value, ensure_ascii=False).encode()
    skeleton, elided = elide_long_strings(payload, MIN)
    assert shape(json.loads(skeleton)) == shape(value)
    if elided == 0:
        assert skeleton == payload


# Bytes that exercise the block probe: quotes, backslashes, opaque and structural characters.
_PIECES = st.sampled_from([b'"', b"\\", b"A", b"z", b"9", b"+", b"/", b"=", b"-", b",", b":", b" "])
_RUNS = st.builds(lambda piece, count: piece * count, _PIECES, st.integers(1, 3 * MIN))


@settings(max_examples=500, deadline=None)
@given(st.lists(_RUNS, max_size=12).map(b"".join), st.integers(2, 3 * MIN))
def test_the_block_probe_elides_exactly_what_the_pattern_does(
    payload: bytes, min_length: int
) -> None:
    assert elide_long_strings(payload, min_length) == _elide_by_pattern(payload, min_length)


def test_a_16_mib_blob_is_found_by_the_probe() -> None:
    blob = base64.b64encode(bytes(range(256)) * 49152)  # 16 MiB of base64
    payload = b'{"id": 1, "result": {"data": "' + blob + b'", "n": 1}, "error": null}'
    skeleton, elided = elide_long_strings(payload, 64 * 1024)
    assert elided == len(blob)
    assert json.loads(skeleton)["result"] == {"data": f"<{len(blob)} bytes elided>", "n": 1}


def test_a_run_longer_than_the_checked_window_is_looked_at_whole() -> None:
    """The opaque check goes over a long run piece by piece: a character that cannot be in an
    opaque string, anywhere in it, keeps the run, and the pieces' edges lose nothing."""
    run = b"QUJD" * (400 * 1024)  # 1.6 MiB, several pieces
    for at in (0, 512 * 1024 - 1, 512 * 1024, len(run) - 1):
        spoiled = run[:at] + b"," + run[at + 1 :]
        payload = b'{"a":"' + spoiled + b'"}'
        assert elide_long_strings(payload, MIN) == _elide_by_pattern(payload, MIN)
        assert elide_long_strings(payload, MIN)[1] == 0
    payload = b'{"a":"' + run + b'"}'
    assert elide_long_strings(payload, MIN) == (b'{"a":"<%d bytes elided>"}' % len(run), len(run))
