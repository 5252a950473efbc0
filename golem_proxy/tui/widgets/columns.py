"""Which columns of the flows table are shown, and how wide: a pure function of the width
available and the widths the content asks for, so the rule reads (and is tested) on its own.

Every column asks for its natural width (its title or its widest value; a status for at most
`STATUS_ASKS` cells). When they do not all fit, columns give way one step at a time in the
order of `GIVE_WAY`: the connection number goes first, then the method column gives way
(a long method is cut before any status), then route, time, sizes, flow number and latency
go, the method narrowing between them. A status is whole whenever that makes room for it:
only then is it shortened, cut in its middle (`Column.keeps_end`), since statuses alike
differ in their ends (``malformed:invalid-utf8`` and ``-json``, ``X`` and ``X (in result)``).
When there is room to spare, the status gets its whole width back first (a longer one than
`STATUS_ASKS` too) and the method column then grows up to `MAX_METHOD_WIDTH`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["COLUMNS", "GIVE_WAY", "MAX_METHOD_WIDTH", "STATUS_ASKS", "Column", "fit_columns"]


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    right: bool = False
    """Right-aligned (numbers)."""
    keeps_end: bool = False
    """Cut in the middle, keeping its end as well as its start."""


COLUMNS: tuple[Column, ...] = (
    Column("mark", ""),
    Column("number", "#", right=True),
    Column("time", "time", right=True),
    Column("route", "route"),
    Column("conn", "conn", right=True),
    Column("method", "method"),
    Column("status", "status", keeps_end=True),
    Column("latency", "latency", right=True),
    Column("req", "req", right=True),
    Column("resp", "resp", right=True),
)

GIVE_WAY: tuple[tuple[str, int], ...] = (
    # (column, the width it gives way to; 0 hides it), applied in order until the row fits
    ("conn", 0),
    ("method", 32),
    ("route", 0),
    ("method", 24),
    ("time", 0),
    ("req", 0),
    ("resp", 0),
    ("number", 0),
    ("method", 16),
    ("latency", 0),
    ("status", 10),  # nothing else is left to give way: the status is cut
)
MAX_METHOD_WIDTH = 48
MIN_METHOD_WIDTH = 4
STATUS_ASKS = 48
"""The most a status asks for before spare room is shared out: a longer one (an error code is
whatever string the peer sent) is whole only where the row has room to spare, and does not
make every other column give way."""


def _total(widths: Mapping[str, int]) -> int:
    shown = [width for width in widths.values() if width > 0]
    return sum(shown) + max(len(shown) - 1, 0)  # one space between columns


def fit_columns(natural: Mapping[str, int], width: int) -> dict[str, int]:
    """The width of each column (0: hidden) for a table ``width`` cells wide, given the
    ``natural`` width each column asks for (every key of `COLUMNS`)."""
    widths = {column.key: natural[column.key] for column in COLUMNS}
    widths["status"] = min(widths["status"], STATUS_ASKS)
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
