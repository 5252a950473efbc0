"""The flows table's columns give way by priority; the method column is the last to shrink."""

from __future__ import annotations

from golem_proxy.tui.widgets.columns import COLUMNS, MAX_METHOD_WIDTH, fit_columns

NATURAL = {
    "mark": 2,
    "number": 3,
    "time": 6,
    "route": 5,
    "conn": 4,
    "method": 24,
    "status": 16,
    "latency": 7,
    "req": 5,
    "resp": 5,
}


def used(widths: dict[str, int]) -> int:
    shown = [w for w in widths.values() if w]
    return sum(shown) + len(shown) - 1


def test_a_wide_table_shows_every_column_and_gives_the_rest_to_the_method() -> None:
    widths = fit_columns(NATURAL, 160)
    assert all(widths[column.key] >= NATURAL[column.key] for column in COLUMNS)
    assert widths["method"] == MAX_METHOD_WIDTH
    assert used(widths) <= 160


def test_at_80_columns_the_connection_goes_and_the_status_is_shortened_first() -> None:
    short_session = {**NATURAL, "number": 2, "time": 5}
    widths = fit_columns(short_session, 78)  # 80 minus the scrollbar
    assert widths["conn"] == 0
    assert widths["method"] == 24  # the method is whole
    assert 14 <= widths["status"] < 16
    assert all(widths[key] == short_session[key] for key in ("route", "time", "req", "resp"))
    assert used(widths) <= 78
    # A longer session (wider numbers and times) also loses the route; the method stays whole
    # and takes what is left over once the status is whole again.
    widths = fit_columns(NATURAL, 78)
    assert widths["route"] == 0 and widths["status"] == 16 and widths["method"] >= 24


def test_columns_give_way_in_order_and_the_method_shrinks_last() -> None:
    previous = fit_columns(NATURAL, 200)
    for width in range(199, 20, -1):
        widths = fit_columns(NATURAL, width)
        assert used(widths) <= width
        if widths["method"] < 24:
            # Everything that may give way has.
            hidden = ("conn", "route", "time", "req", "resp", "number", "latency")
            assert all(widths[key] == 0 for key in hidden)
            assert widths["status"] == 10
        # Narrower never shows a column a wider table hid.
        assert all(widths[key] <= previous[key] or previous[key] for key in widths)
        previous = widths


def test_a_table_narrower_than_the_minimum_still_has_a_method_column() -> None:
    widths = fit_columns(NATURAL, 10)
    assert widths["method"] >= 4
