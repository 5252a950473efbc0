"""Terminal-safe text and the one size/latency format."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from golem_proxy.terminal import format_latency, format_size, preview_json, safe_text


def test_escape_sequences_become_visible_text() -> None:
    assert safe_text("\x1b]0;PWNED\x1b\\\x1b[2J") == "\\x1b]0;PWNED\\x1b\\\\x1b[2J"
    assert safe_text("a\nb\tc\rd\x00\x7f\x9b") == "a\\nb\\tc\\rd\\x00\\x7f\\x9b"


def test_lone_surrogates_are_escaped() -> None:
    assert safe_text("\udfff") == "\\udfff"
    assert safe_text("x\ud800y").encode("utf-8") == b"x\\ud800y"


def test_bidirectional_controls_are_escaped() -> None:
    # U+202E reverses what follows it on a terminal line: a method would read as another.
    assert safe_text("scene.\u202ereyal_eteled") == "scene.\\u202ereyal_eteled"
    marks = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069"
    assert safe_text(marks) == "".join(f"\\u{ord(c):04x}" for c in marks)
    assert safe_text("שלום עולם") == "שלום עולם"  # right-to-left letters themselves are text


def test_ordinary_text_is_unchanged() -> None:
    assert safe_text("scene.create_layer [r] é ☃") == "scene.create_layer [r] é ☃"


def test_limit_cuts_with_an_ellipsis() -> None:
    assert safe_text("abcdef", limit=4) == "abc…"
    assert safe_text("abc", limit=4) == "abc"


@given(st.text())
def test_any_text_prints_as_one_utf8_line(text: str) -> None:
    safe = safe_text(text)
    safe.encode("utf-8")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in safe)
    assert "\n" not in safe


def test_sizes_and_latencies() -> None:
    assert format_size(None) == "-"
    assert format_size(512) == "512 B"
    assert format_size(1536) == "1.5 KiB"
    assert format_size(3 * 1024 * 1024) == "3.0 MiB"
    assert format_size(5 * 1024**3) == "5.0 GiB"
    assert format_latency(None) == "-"
    assert format_latency(0.00085) == "850 µs"
    assert format_latency(0.0123) == "12.3 ms"
    assert format_latency(1.24) == "1.24 s"


def test_preview_json_is_the_start_of_json_dumps_made_safe() -> None:
    value = {"method": "\x1b]0;x", "params": {"k": ["é", "\udfff", 1.5, None, True]}}
    assert preview_json(value, 500) == safe_text(json.dumps(value, ensure_ascii=False))
    assert preview_json(value, 12) == safe_text(json.dumps(value, ensure_ascii=False), 12)


def test_preview_json_stops_early_on_a_huge_value() -> None:
    class Counted(list):  # type: ignore[type-arg]
        """A list that counts how many of its elements the encoder visited."""

        visited = 0

        def __iter__(self):  # type: ignore[no-untyped-def]
            for item in super().__iter__():
                Counted.visited += 1
                yield item

    huge = Counted([[]] * 1_000_000)
    assert preview_json(huge, 20) == "[[], [], [], [], []…"
    assert Counted.visited < 100


def test_preview_json_of_something_else_shows_what_it_can() -> None:
    assert preview_json({"a": object()}, 50) == '{"a": …'


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON, st.integers(min_value=1, max_value=200))
def test_preview_json_agrees_with_json_dumps(value: object, limit: int) -> None:
    assert preview_json(value, limit) == safe_text(json.dumps(value, ensure_ascii=False), limit)


@given(st.text(), st.integers(min_value=0, max_value=50))
def test_limit_is_the_start_of_the_whole_escaped_text(text: str, limit: int) -> None:
    whole = safe_text(text)
    expected = whole if len(whole) <= limit else whole[: max(limit - 1, 0)] + "…"
    assert safe_text(text, limit) == expected
