"""A live log line's clock and styled pieces read exactly as the slower ways wrote them."""

from __future__ import annotations

import datetime

from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text

from golem_proxy.live.log_text import WallClock, styled


def reference_clock(stamp: float) -> str:
    return datetime.datetime.fromtimestamp(stamp).strftime("%H:%M:%S.%f")[:-3]


def test_clock_at_the_edges_of_a_second() -> None:
    clock = WallClock()
    base = 1_700_000_000.0
    # Fractions that round up into the next second, ties at the microsecond, and times
    # going back as well as forward (one clock serves every line).
    for stamp in [
        base + 0.9999996,
        base + 0.9999994,
        base + 0.0000005,
        base + 0.0000015,
        base + 0.0015,
        base + 0.9995,
        base - 0.5,
        base + 59.9999999,
        base + 3600.123456,
        base + 0.9999996,
        base,
    ]:
        assert clock(stamp) == reference_clock(stamp), stamp


@given(st.lists(st.floats(min_value=0, max_value=4e9, allow_nan=False), max_size=30))
def test_clock_any_times(stamps: list[float]) -> None:
    clock = WallClock()
    for stamp in stamps:
        assert clock(stamp) == reference_clock(stamp)


_PIECE = st.tuples(
    st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=8),
    st.sampled_from(["", "dim", "bold", "cyan", "bold yellow"]),
)


@given(st.lists(_PIECE, max_size=12))
def test_styled_is_what_assemble_makes(pieces: list[tuple[str, str]]) -> None:
    made = styled(pieces)
    reference = Text.assemble(*pieces)
    assert made.plain == reference.plain
    assert made.spans == reference.spans
    assert (made.style, made.end, made.tab_size) == (
        reference.style,
        reference.end,
        reference.tab_size,
    )
