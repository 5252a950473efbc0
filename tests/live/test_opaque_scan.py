"""The C library's opaque check agrees with the stdlib's on any bytes and any range, and eliding
with it gives exactly what the pattern gives."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.messages import (
    OPAQUE_CHARACTERS,
    _elide_by_pattern,
    elide_long_strings,
    is_opaque_run,
)
from golem_proxy.live.opaque_scan import (
    _STRSPN,
    _span_by_pattern,
    opaque_run,
    opaque_scan,
    opaque_span,
    opaque_span_scan,
)
from golem_proxy.live.tap_parse import OPAQUE_SCAN, OPAQUE_SPAN

# Opaque characters and those that end a run: a quote, NUL (where strspn would stop), a
# backslash, a byte over 127, structure.
_PIECES = st.sampled_from(
    [b"A", b"z", b"9", b"+", b"/", b"=", b"_", b".", b"-", b'"', b"\0", b"\\", b"\xe9", b",", b" "]
)
_PAYLOADS = st.lists(
    st.builds(lambda piece, count: piece * count, _PIECES, st.integers(1, 40)), max_size=10
).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(_PAYLOADS, st.integers(-3, 420), st.integers(-3, 420))
def test_the_scan_agrees_with_the_stdlib_check(payload: bytes, start: int, end: int) -> None:
    assert opaque_run(payload, start, end) == is_opaque_run(payload, start, end)


@settings(max_examples=300, deadline=None)
@given(_PAYLOADS, st.integers(2, 60))
def test_eliding_with_the_scan_is_eliding_by_the_pattern(payload: bytes, min_length: int) -> None:
    assert elide_long_strings(payload, min_length, opaque_run) == _elide_by_pattern(
        payload, min_length
    )


@settings(max_examples=500, deadline=None)
@given(_PAYLOADS, st.integers(-3, 420))
def test_the_span_is_the_longest_opaque_run(payload: bytes, start: int) -> None:
    span = opaque_span(payload, start)
    assert span == _span_by_pattern(payload, start)
    if 0 <= start < len(payload):
        assert span == 0 or is_opaque_run(payload, start, start + span)
        stop = payload[start + span : start + span + 1]
        assert stop == b"" or stop not in OPAQUE_CHARACTERS


@settings(max_examples=500, deadline=None)
@given(_PAYLOADS, st.integers(2, 60))
def test_eliding_by_the_span_is_eliding_by_the_pattern(payload: bytes, min_length: int) -> None:
    """A run measured from its opening quote: the same strings elided as the pattern elides,
    wherever a quote, a NUL, a backslash or the payload's end stops it."""
    expected = _elide_by_pattern(payload, min_length)
    assert elide_long_strings(payload, min_length, opaque_run, opaque_span) == expected
    assert elide_long_strings(payload, min_length, None, _span_by_pattern) == expected


def test_a_run_is_opaque_when_every_byte_up_to_its_end_is() -> None:
    run = b"QUJD" * 100_000
    payload = b'{"a":"' + run + b'"}'
    start, end = 6, 6 + len(run)
    assert opaque_run(payload, start, end)
    assert opaque_run(payload, start, end - 1)  # the scan may go on past the end: no matter
    assert not opaque_run(payload, start, end + 1)  # the closing quote
    assert not opaque_run(payload, start, start)  # empty
    spoiled = payload[: end - 1] + b" " + payload[end:]
    assert not opaque_run(spoiled, start, end)
    # Not bytes: the stdlib's check, the same answer.
    assert opaque_run(bytearray(payload), start, end) is True  # type: ignore[arg-type]


@pytest.mark.skipif(_STRSPN is None, reason="no C library to load here")
def test_the_live_view_uses_the_c_library_where_it_loads() -> None:
    assert opaque_scan() is opaque_run and OPAQUE_SCAN is opaque_run
    assert opaque_span_scan() is opaque_span and OPAQUE_SPAN is opaque_span
    blob = base64.b64encode(bytes(range(256)) * 4096)
    payload = b'{"id": 1, "result": {"image": "' + blob + b'"}, "error": null}'
    assert elide_long_strings(payload, 65536, OPAQUE_SCAN)[1] == len(blob)
    assert elide_long_strings(payload, 65536, OPAQUE_SCAN, OPAQUE_SPAN)[1] == len(blob)
