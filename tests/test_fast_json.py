"""fast_json: orjson's answer is used only where it is exactly the standard library's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_proxy.fast_json import NOT_DECODED, decode_exactly

# Values in the shapes a frame carries: big and small integers, floats (no NaN: JSON has
# none), strings with any character, nested containers.
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (1 == 1.0 and 0.0 == -0.0 are not)."""
    return json.dumps(a) == json.dumps(b) and repr(a) == repr(b)


@given(_JSON_VALUES, st.booleans())
def test_decoded_values_are_the_standard_librarys(value: Any, ascii_only: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    decoded = decode_exactly(data)
    if decoded is not NOT_DECODED:
        assert _same(decoded, json.loads(data))


@pytest.mark.parametrize(
    "data",
    [
        b"NaN",
        b'{"x": Infinity}',
        b"1e400",  # json reads inf
        b"12345678901234567890",  # past 64 bits
        b"[1234567890123456789.5]",  # 19 digits: orjson may round differently
        b'[1, "x", 1000000000000000000]',  # 19 digits at the end, zeros but the first
        b'{"guid": "9999999999999999999"}',  # in a string too: the guard reads the text
        b'"\\ud800"',  # a lone surrogate: legal JSON, refused by orjson
        b"\xff",
    ],
)
def test_what_orjson_refuses_or_may_read_differently_is_left_to_the_caller(data: bytes) -> None:
    assert decode_exactly(data) is NOT_DECODED


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b'{"a": 1, "a": 2}', {"a": 2}),  # the last of a repeated name, as json
        (b" [0.1, -0.0, -0] ", [0.1, -0.0, 0]),
        (b"null", None),
        (b'"caf\\u00e9"', "café"),
        (b"[123456789012345678, 0.123456789012345678]", [123456789012345678, 0.123456789012345678]),
    ],
)
def test_ordinary_values_are_decoded(data: bytes, value: Any) -> None:
    decoded = decode_exactly(data)
    assert _same(decoded, value) and _same(decoded, json.loads(data))


def test_a_long_run_of_digits_is_found_across_the_windows_of_a_large_payload() -> None:
    # A payload over a megabyte is looked at a window at a time: a run of 19 digits across
    # two windows is found; one of 18 is not.
    for run, found in ((19, True), (18, False)):
        prefix = b'["' + b"a" * (1024 * 1024 - 10) + b'", '
        data = prefix + b"1" * run + b', "' + b"b" * (2 * 1024 * 1024) + b'"]'
        decoded = decode_exactly(data)
        assert (decoded is NOT_DECODED) is found
        if not found:
            assert decoded == json.loads(data)
