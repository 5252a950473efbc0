from __future__ import annotations

from golem_proxy.tui.render import (
    count_nodes,
    fmt_latency,
    fmt_size,
    fmt_time,
    hexdump,
    shorten_strings,
)


def test_times_sizes_and_latencies_read_naturally() -> None:
    assert fmt_time(1.5) == "1.500"
    assert fmt_time(62.25) == "1:02.250"
    assert fmt_time(3723.5) == "1:02:03.500"
    assert fmt_latency(None) == ""
    assert fmt_latency(0.0005) == "500µs"
    assert fmt_latency(0.0123) == "12.3ms"
    assert fmt_latency(1.5) == "1.50s"
    assert fmt_size(None) == ""
    assert fmt_size(512) == "512B"
    assert fmt_size(1536) == "1.5K"
    assert fmt_size(3 * 1024 * 1024) == "3.0M"


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
