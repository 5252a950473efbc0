"""Nested JSON arrays walked a level at a time, each level's types taken in C
(``set(map(type, level))``): a mesh's 100,000 numbers, flat or as points, in about a
millisecond, where a walk in Python visits each. What asks whether an array holds numbers only
(`golem_proxy.tui.skeleton`) or plain values only (`golem_proxy.replay.diffing`) reads the
levels and stops at the first that answers."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any

__all__ = ["array_levels"]


def array_levels(array: list[Any]) -> Iterator[tuple[list[Any], set[type]]]:
    """The values of ``array`` depth by depth, with their types: first its items, then the
    items of the arrays among them (all those arrays' together), and so on, until a level
    holds no array. A level of arrays only is joined in C; one that mixes arrays with other
    values is sorted in Python (rare in a mesh)."""
    level = array
    while level:
        kinds = set(map(type, level))
        yield level, kinds
        if list not in kinds:
            return
        arrays = level if kinds == {list} else [item for item in level if type(item) is list]
        level = list(chain.from_iterable(arrays))
