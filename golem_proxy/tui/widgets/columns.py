"""Which columns of the flows table are shown, and how wide: a pure function of the width
available and the widths the content asks for, so the rule reads (and is tested) on its own.

Every column asks for its natural width (its title or its widest value). When they do not all
fit, columns give way one step at a time in the order of `GIVE_WAY`: the connection number
goes first, the status is shortened, then route, time, sizes, flow number and latency go.
The method column is the last to shrink; when there is room to spare, a shortened status gets
its width back first and the method column then grows up to `MAX_METHOD_WIDTH`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["COLUMNS", "GIVE_WAY", "MAX_METHOD_WIDTH", "Column", "fit_columns"]


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    right: bool = False
    """Right-aligned (numbers)."""


COLUMNS: tuple[Column, ...] = (
    Column("mark", ""),
    Column("number", "#", right=True),
    Column("time", "time", right=True),
    Column("route", "route"),
    Column("conn", "conn", right=True),
    Column("method", "method"),
    Column("status", "status"),
    Column("latency", "latency", right=True),
    Column("req", "req", right=True),
    Column("resp", "resp", right=True),
)

GIVE_WAY: tuple[tuple[str, int], ...] = (
    # (column, the width it gives way to; 0 hides it), applied in order until the row fits
    ("conn", 0),
    ("status", 14),
    ("route", 0),
    ("time", 0),
    ("status", 10),
    ("req", 0),
    ("resp", 0),
    ("number", 0),
    ("latency", 0),
)
MAX_METHOD_WIDTH = 48
MIN_METHOD_WIDTH = 4


def _total(widths: Mapping[str, int]) -> int:
    shown = [width for width in widths.values() if width > 0]
    return sum(shown) + max(len(shown) - 1, 0)  # one space between columns


def fit_columns(natural: Mapping[str, int], width: int) -> dict[str, int]:
    """The width of each column (0: hidden) for a table ``width`` cells wide, given the
    ``natural`` width each column asks for (every key of `COLUMNS`)."""
    widths = {column.key: natural[column.key] for column in COLUMNS}
    for key, narrower in GIVE_WAY:
        if _total(widths) <= width:
            break
        widths[key] = min(widths[key], narrower)
    spare = width - _total(widths)
    if spare < 0:
        widths["method"] = max(widths["method"] + spare, MIN_METHOD_WIDTH)
        return widths
    if widths["status"]:
        back = min(spare, natural["status"] - widths["status"])
        widths["status"] += back
        spare -= back
    widths["method"] += max(min(spare, MAX_METHOD_WIDTH - widths["method"]), 0)
    return widths
