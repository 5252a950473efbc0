"""What a JSON text would hold once parsed, judged from its bytes: the estimate is no less
than what a parse really holds for arrays, objects, strings and floats (where a frame's bytes
can cost twenty times their size), its quick bound no less than the estimate, and a text's
strings are taken out a window at a time exactly as from the whole text, in bounded memory."""

from __future__ import annotations

import json
import tracemalloc
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_proxy import json_cost
from golem_proxy.json_cost import JSON_STRING, outside_strings, parse_cost, parse_holds

N = 300_000

SHAPES = {
    "empty arrays": b"[" + b"[]," * (N // 3) + b"[]]",
    "empty objects": b"[" + b"{}," * (N // 3) + b"{}]",
    "one-number arrays in arrays": b"[" + b"[[1]]," * (N // 6) + b"[]]",
    "objects of one member": b"[" + b'{"a":1},' * (N // 8) + b"{}]",
    "points as objects": b"[" + b'{"x": 12.34, "y": 5.67, "z": 8.9}, ' * (N // 36) + b"{}]",
    "short strings": b"[" + b'"ab",' * (N // 5) + b'"ab"]',
    "floats": b"[" + b"1e1," * (N // 4) + b"1e1]",
    "floats, arrays and a character past U+FFFF": b'["\xf0\x9f\x98\x80",'
    + (b"1e1," * 3 + b"[[1]],") * (N // 18)
    + b"[]]",
    "objects of three strings": b"["
    + b'{"id":"8f1c2d3e-aaaa-bbbb-cccc-1234567890ab","name":"box 12","layer":"Default"},'
    * (N // 80)
    + b"{}]",
    "a string of brackets": b'["' + b"[" * N + b'"]',
    "JSON in a string (an MCP text content)": json.dumps(
        {"type": "text", "text": json.dumps([[1.5, -2.25, 3.0]] * (N // 20))}
    ).encode(),
}
"""Shapes whose parse the estimate is no less than. Integers past 256 and objects of
distinct keys are not among them: ~10 bytes a byte, up to twice the estimate."""


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_estimate_is_no_less_than_what_a_parse_holds(shape: str) -> None:
    text = SHAPES[shape]
    tracemalloc.start()
    try:
        parsed = json.loads(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del parsed
    held = peak + len(text)  # the text is held while it is parsed
    # Beside the decoder's own few KiB.
    assert held <= parse_holds(text, 0) + 4096 <= 3 * held


@pytest.mark.parametrize(
    "shape", ["a string of brackets", "JSON in a string (an MCP text content)"]
)
def test_brackets_inside_strings_cost_what_any_character_does(shape: str) -> None:
    text = SHAPES[shape]
    assert parse_holds(text) > 5 * len(text)  # counted over the whole text first
    assert parse_holds(text, 0) < 4 * len(text)  # then outside its strings


def test_a_string_that_never_closes_costs_one_pass() -> None:
    """A quote that never closes, then escaped quotes: the search through the strings does
    not try again from each of them (it did, and 40,000 took 12 s)."""
    text = b"[" * 400_000 + b'"' + b'\\"' * 200_000
    assert outside_strings(text, b"") == b"[" * 400_000  # the rest is the string


def test_past_a_million_quotes_brackets_in_strings_are_still_no_structure() -> None:
    text = b"[" + b'"[",' * 600_000 + b'"["]'
    assert parse_holds(text, 0) < parse_holds(text) / 2


def _reference(text: bytes) -> bytes:
    """What is outside ``text``'s strings, a byte at a time: a backslash escapes a backslash
    or a quote after it (the escapes that move a string's end)."""
    out = bytearray()
    inside = False
    at = 0
    while at < len(text):
        byte = text[at]
        if byte == 0x5C and text[at + 1 : at + 2] in (b"\\", b'"'):
            at += 2
            continue
        if byte == 0x22:
            inside = not inside
        elif not inside:
            out.append(byte)
        at += 1
    return bytes(out)


@given(st.binary(max_size=40).map(lambda b: bytes(b'\\"a[ '[x % 5] for x in b)))
def test_strings_are_taken_out_a_window_at_a_time_as_from_the_whole(text: bytes) -> None:
    for window in (1, 2, 3, 5, 1 << 30):
        with mock.patch.object(json_cost, "WINDOW", window):
            assert outside_strings(text, b"") == _reference(text)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)


@given(JSON_VALUES, st.integers(min_value=1, max_value=9))
def test_a_json_text_loses_its_strings_and_nothing_else(value: object, window: int) -> None:
    text = json.dumps(value).encode()
    with mock.patch.object(json_cost, "WINDOW", window):
        assert outside_strings(text, b"") == JSON_STRING.sub(b"", text)


@given(JSON_VALUES)
def test_the_quick_bound_is_no_less_than_the_estimate(value: object) -> None:
    """Given as the estimate when it is within the limit: the estimate must be within too."""
    text = json.dumps(value).encode()
    assert parse_holds(text, 1 << 40) >= parse_holds(text, 0)
    assert parse_cost(text, 0)[0] >= parse_holds(text, 0)  # the larger of the two


def test_a_run_of_backslashes_longer_than_a_window_is_taken_a_window_at_a_time() -> None:
    """4 MiB of escaped backslashes in one string: the window grows by one byte, not to the
    run's end (a pass over the run at once held ~45 bytes a byte of it)."""
    text = b'["' + b"\\\\" * (2 * json_cost.WINDOW) + b'", [[]]]'
    tracemalloc.start()
    try:
        outside = outside_strings(text, b"")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outside == b"[, [[]]]"
    assert peak < 8 * json_cost.WINDOW


@given(
    st.lists(st.sampled_from([b"[", b"a", b'"', b"\\", b"xyz"]), max_size=64),
    st.integers(min_value=0, max_value=40),
    st.sampled_from([b"[", b'"', b"\\"]),
)
def test_a_byte_is_counted_as_count_counts_it_sparse_or_dense(
    pieces: list[bytes], spread: int, byte: bytes
) -> None:
    """Past `_SCANNED_FROM`, occurrences are found one at a time up to `_SPARSE`, then the
    rest counted: the same number whichever way, the run long enough to take either."""
    filler = b"." * (json_cost._SCANNED_FROM // (len(pieces) + 1) + 1)
    text = filler + b"".join(piece + filler for piece in pieces) + byte * spread
    assert len(text) >= json_cost._SCANNED_FROM
    assert json_cost.count_byte(text, byte) == text.count(byte)
    assert json_cost.count_byte(text[:100], byte) == text[:100].count(byte)


def test_a_blob_s_structure_is_counted_with_its_few_strings() -> None:
    """A 16 MiB capture: its few brackets, commas and quotes found (`count_byte`), the
    escapes' counts made only where a backslash is, and counted as the whole counts say."""
    blob = b'{"id":1,"result":{"image":"' + b"QUJD" * (4 << 20) + b'"}}'
    assert json_cost.structure_holds(blob) == json_cost._structure_held((0, 2, 1), 4)
    escaped = blob[:-3] + b'\\"x"}}'  # an escaped quote: still four strings
    assert json_cost.structure_holds(escaped) == json_cost._structure_held((0, 2, 1), 4)
