"""The flows table's columns give way by priority: a status is whole while anything else can
give way (the method column first); the status is the last to be cut."""

from __future__ import annotations

from golem_proxy.tui.widgets.columns import COLUMNS, MAX_METHOD_WIDTH, STATUS_ASKS, fit_columns

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


def test_at_80_columns_the_connection_and_the_route_go_and_the_status_is_whole() -> None:
    short_session = {**NATURAL, "number": 2, "time": 5}
    widths = fit_columns(short_session, 78)  # 80 minus the scrollbar
    assert widths["conn"] == 0 and widths["route"] == 0
    assert widths["status"] == 16 and widths["method"] >= 24  # both whole
    assert all(widths[key] == short_session[key] for key in ("time", "req", "resp"))
    assert used(widths) <= 78
    widths = fit_columns(NATURAL, 78)
    assert widths["route"] == 0 and widths["status"] == 16 and widths["method"] >= 24


def test_a_long_method_gives_way_to_a_whole_status() -> None:
    # A method longer than its column and the longest status of a failing call: the method
    # is cut, the status whole (the table beside an open detail pane at 160 columns).
    natural = {**NATURAL, "method": MAX_METHOD_WIDTH, "status": 26}
    widths = fit_columns(natural, 95)
    assert widths["status"] == 26 and 24 <= widths["method"] < MAX_METHOD_WIDTH
    assert used(widths) <= 95


def test_columns_give_way_in_order_and_the_status_is_cut_last() -> None:
    natural = {**NATURAL, "status": 26}
    previous = fit_columns(natural, 200)
    for width in range(199, 20, -1):
        widths = fit_columns(natural, width)
        assert used(widths) <= width
        if widths["status"] < 26:
            # Everything that may give way has.
            hidden = ("conn", "route", "time", "req", "resp", "number", "latency")
            assert all(widths[key] == 0 for key in hidden)
            assert widths["method"] <= 16 and widths["status"] >= 10
        if widths["method"] < 16:
            assert widths["status"] == 10
        # Narrower never shows a column a wider table hid.
        assert all(widths[key] <= previous[key] or previous[key] for key in widths)
        previous = widths


def test_a_status_longer_than_it_may_ask_for_is_whole_only_with_room_to_spare() -> None:
    natural = {**NATURAL, "status": 300}  # an error code is whatever the peer sent
    widths = fit_columns(natural, 120)
    assert widths["status"] >= STATUS_ASKS
    assert all(widths[key] for key in ("route", "time", "req", "resp", "latency"))
    assert fit_columns(natural, 400)["status"] == 300


def test_a_table_narrower_than_the_minimum_still_has_a_method_column() -> None:
    widths = fit_columns(NATURAL, 10)
    assert widths["method"] >= 4
