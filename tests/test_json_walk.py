"""An object's top-level members found by walking its text (golem_proxy/json_walk.py): the
members a parse finds, in order, with their values' spans, for any spacing, escapes and empty
containers, and nothing for text that is no object."""

from __future__ import annotations

import json
from typing import Any, Optional

from hypothesis import given
from hypothesis import strategies as st

from golem_proxy.json_walk import Member, NotAnObject, iter_members, member_span


def object_members(
    payload: bytes, start: int = 0, end: Optional[int] = None
) -> Optional[list[Member]]:
    """The members `iter_members` finds, all of them; None when the walk says no object."""
    try:
        return list(iter_members(payload, start, end))
    except NotAnObject:
        return None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    obj=st.dictionaries(st.text(max_size=8), JSON, max_size=6),
    spaced=st.booleans(),
    ascii_only=st.booleans(),
)
def test_the_members_are_the_ones_a_parse_finds(
    obj: dict[str, Any], spaced: bool, ascii_only: bool
) -> None:
    separators = (", ", ": ") if spaced else (",", ":")
    text = json.dumps(obj, separators=separators, ensure_ascii=ascii_only).encode()
    payload = b" \n" + text + b" "
    members = object_members(payload)
    assert members is not None
    assert [key for key, _, _ in members] == list(obj)
    assert [json.loads(payload[start:end]) for _, start, end in members] == list(obj.values())


@given(obj=st.dictionaries(st.text(max_size=4), JSON, max_size=4), before=st.binary(max_size=6))
def test_a_member_of_an_object_inside_is_found_in_its_span(
    obj: dict[str, Any], before: bytes
) -> None:
    inner = json.dumps(obj).encode()
    payload = before + b'{"x": [1, ' + inner + b"]}"
    start = len(before) + len(b'{"x": [1, ')
    members = object_members(payload, start, start + len(inner))
    assert members is not None
    assert [(key, json.loads(payload[a:b])) for key, a, b in members] == list(obj.items())


def test_empty_containers_are_values_of_their_own() -> None:
    payload = b'{"a": [], "b": {}, "c": [[], {}, [[]]], "d": {"e": {}}, "f": "[]{}"}'
    members = object_members(payload)
    assert members is not None
    assert {key: json.loads(payload[a:b]) for key, a, b in members} == json.loads(payload)
    assert object_members(b" {} ") == []
    assert object_members(b"{ }") == []


def test_a_long_run_of_empty_arrays_is_skipped_in_one_search() -> None:
    bulk = b"[" + b"[]," * 1_000_000 + b"[]]"
    payload = b'{"id": "a1", "result": ' + bulk + b', "success": true}'
    members = object_members(payload)
    assert members is not None
    assert [key for key, _, _ in members] == ["id", "result", "success"]
    _, start, end = members[1]
    assert payload[start:end] == bulk


def test_escaped_and_repeated_keys_read_as_a_parse_reads_them() -> None:
    payload = b'{"\\u0069d": 1, "x": "\\"id\\": 2", "id": 3}'
    assert member_span(payload, "id") == (payload.rindex(b"3"), payload.rindex(b"3") + 1)
    members = object_members(payload)
    assert members is not None and [key for key, _, _ in members] == ["id", "x", "id"]


def test_text_that_is_no_object_has_no_members() -> None:
    for text in (b"[1, 2]", b'"{}"', b"", b"{", b'{"a": 1', b'{"a": "never closed}',
                 b'{"a": 1} {"b": 2}', b'{"a": [1}', b'{"a": 1]'):  # fmt: skip
        assert object_members(text) is None, text
