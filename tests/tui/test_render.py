from __future__ import annotations

import json

import pytest

from golem_proxy.terminal import format_latency, format_size
from golem_proxy.tui.render import (
    count_nodes,
    escape_surrogates,
    fmt_time,
    hexdump,
    safe_json,
    shorten_strings,
)


def test_times_read_naturally_and_a_hostile_time_does_not_raise() -> None:
    assert fmt_time(1.5) == "1.500"
    assert fmt_time(62.25) == "1:02.250"
    assert fmt_time(3723.5) == "1:02:03.500"
    assert fmt_time(float("nan")) == "?"
    assert fmt_time(float("inf")) == "?"
    assert fmt_time("soon") == "?"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("size", "compact", "full"),
    [
        (512, "512B", "512 B"),
        (1023, "1023B", "1023 B"),
        (1536, "1.5K", "1.5 KiB"),
        (15_565, "15.2K", "15.2 KiB"),
        (155_648, "152K", "152.0 KiB"),
        (3 * 1024 * 1024, "3.0M", "3.0 MiB"),
    ],
)
def test_compact_sizes_fit_five_cells_and_read_like_the_full_ones(
    size: int, compact: str, full: str
) -> None:
    assert format_size(size, compact=True) == compact
    assert format_size(size) == full
    assert len(compact) <= 5


@pytest.mark.parametrize(
    ("seconds", "compact"),
    [
        (0.0005, "500µs"),
        (0.0123, "12.3ms"),
        (0.474, "474ms"),
        (1.5, "1.50s"),
        (12.34, "12.3s"),
        (123.4, "123s"),
    ],
)
def test_compact_latencies_fit_six_cells(seconds: float, compact: str) -> None:
    assert format_latency(seconds, compact=True) == compact
    assert len(compact) <= 6


def test_json_is_shown_with_controls_and_surrogates_escaped_and_its_layout_kept() -> None:
    shown = safe_json({"key\x9b": "a\ud800b\u2028c", "n": [1]})
    assert "\x9b" not in shown and "\ud800" not in shown and "\u2028" not in shown
    assert '"key\\x9b": "a\\ud800b\\u2028c"' in shown
    assert shown.splitlines()[0] == "{"
    shown.encode("utf-8")  # printable


def test_escaping_surrogates_keeps_the_json_value() -> None:
    text = json.dumps({"a": "x\udfffy"}, ensure_ascii=False)
    escaped = escape_surrogates(text)
    escaped.encode("utf-8")
    assert json.loads(escaped) == {"a": "x\udfffy"}


def test_hexdump_shows_offsets_hex_and_ascii_and_says_what_it_left_out() -> None:
    dump = hexdump(b"\x00\x00\x00\x05hello\xff" + bytes(range(20)), limit=16)
    first, last = dump.splitlines()
    assert first.startswith("00000000  00 00 00 05 68 65 6c 6c  6f ff 00 01")
    assert first.endswith("|....hello.......|")
    assert last == "… 14 more bytes"
    assert hexdump(b"") == "(no bytes)"


def test_long_strings_are_shortened_with_their_size_and_nothing_else_changes() -> None:
    image = "iVBORw0KGgo" + "A" * 5000
    obj = {"result": {"image": image, "width": 800, "tags": ["x" * 300, "short"]}}
    short, count = shorten_strings(obj)
    assert count == 2
    assert short["result"]["image"] == image[:60] + "… (5,011 chars)"
    assert short["result"]["width"] == 800
    assert short["result"]["tags"][1] == "short"
    assert obj["result"]["image"] == image  # the original is untouched


def test_count_nodes_stops_early() -> None:
    assert count_nodes({"a": [1, 2, {"b": 3}]}, 100) == 6
    assert count_nodes(list(range(10_000)), 50) == 50
