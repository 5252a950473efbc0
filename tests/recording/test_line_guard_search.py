"""The searches that spare a small frame the walk of its value never miss what the walk finds."""

from __future__ import annotations

from typing import Optional

from hypothesis import given
from hypothesis import strategies as st

from golem_proxy.recording.line_guard import _LARGE_EXPONENT, has_brackets, strictly_unreadable


@given(
    data=st.text("{[]} a", max_size=40).map(str.encode),
    count=st.integers(min_value=1, max_value=45),
    start=st.integers(min_value=0, max_value=45),
    end=st.one_of(st.none(), st.integers(min_value=0, max_value=60)),
)
def test_as_counted(data: bytes, count: int, start: int, end: Optional[int]) -> None:
    window = data[start:end]
    expected = window.count(b"{") + window.count(b"[") >= count
    assert has_brackets(data, count, start, end) is expected


@given(
    mantissa=st.sampled_from(["1", "-2.5", "0", "9.99"]),
    exponent=st.sampled_from(["e400", "E+308", "e0999", "e309"]),
    after=st.sampled_from(["", ",", "}", "]", " ", "\n", "\t", "\r"]),
)
def test_a_large_exponent_is_always_suspected(mantissa: str, exponent: str, after: str) -> None:
    # Every number JSON ends with a large exponent makes the payload's value walked.
    number = f"{mantissa}{exponent}{after}".encode()
    assert _LARGE_EXPONENT.search(b'{"id":1,"result":[' + number + b"]}")
    assert _LARGE_EXPONENT.search(number)


def test_hex_in_a_string_is_not_a_number() -> None:
    payload = b'{"id":"550e8400-e29b-41d4-a716-000000000001","method":"m","params":{}}'
    assert strictly_unreadable(payload, {}) == ""
    assert not _LARGE_EXPONENT.search(payload)
    assert strictly_unreadable(b'{"id":1,"x":1e400}', {"id": 1, "x": float("inf")})
