"""The values a frame not recorded as it came teaches the tap, on the handoff pipe: any values
come back as they went whatever the record size, a value longer than a record over several,
and data that is not such a record is a HandoffError, never another error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_proxy.live.handoff import HandoffError
from golem_proxy.live.redact import MAX_ECHOES
from golem_proxy.live.unrecorded_values import (
    GOES_ON,
    UnrecordedValues,
    WaitingValues,
    unrecorded_records,
)

ANY_TEXT = st.text(st.characters(exclude_categories=()))
"""Any string a JSON text can hold, lone surrogates too."""


@given(st.lists(ANY_TEXT, max_size=12), st.integers(min_value=5, max_value=64))
def test_values_come_back_as_they_went_at_any_record_size(values: list[str], limit: int) -> None:
    records = unrecorded_records(values, limit)
    assert all(len(data) <= limit for data in records)
    reader = UnrecordedValues()
    assert [value for data in records for value in reader.read(data)] == values


def test_a_value_longer_than_a_record_goes_over_several_and_others_stay_whole() -> None:
    long = "S" * 25
    records = unrecorded_records(["short", long, "tail"], 16)
    assert len(records) == 4  # "short"; 12 + 12 + 1 of the long one and "tail" after it
    reader = UnrecordedValues()
    assert [reader.read(data) for data in records] == [["short"], [], [], [long, "tail"]]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x00\x00\x00\x01\xff{}", "no UTF-8"),  # and what follows it is no piece either
        (b"\x00\x00\x00\x01\xff", "no UTF-8"),
        (b"\x00\x00\x00\x09abc", "shorter than its piece"),
        (b"\x00\x00", "inside a piece's length"),
        ((GOES_ON | 1).to_bytes(4, "big") + b"\xc3" + b"\x00\x00\x00\x05ab", "shorter"),
    ],
)
def test_data_that_is_no_record_is_a_handoff_error(data: bytes, why: str) -> None:
    reader = UnrecordedValues()
    with pytest.raises(HandoffError, match=why):
        reader.read(data)
    # What it began of a value is dropped: the next record reads on its own.
    assert reader.read(unrecorded_records(["next-value"], 64)[0]) == ["next-value"]


def test_a_value_cut_where_its_utf8_is_cut_is_joined_before_it_is_decoded() -> None:
    value = "é" * 20
    records = unrecorded_records([value], 7)
    assert len(records) > 1
    reader = UnrecordedValues()
    assert [v for data in records for v in reader.read(data)] == [value]


def test_values_waiting_for_a_connection_are_the_last_its_tap_would_keep() -> None:
    waiting = WaitingValues()
    waiting.add(1, [f"value-{n}" for n in range(MAX_ECHOES + 5)])
    waiting.add(1, ["value-10"])  # seen again: the newest
    waiting.add(2, ["other"])
    taken = waiting.take(1)
    assert len(taken) == MAX_ECHOES and taken[-1] == "value-10"
    assert taken[0] == "value-5" and "value-4" not in taken
    assert waiting.take(1) == () and waiting.take(2) == ("other",)
