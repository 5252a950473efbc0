"""Nested JSON arrays walked a level at a time, each level's types taken in C
(``set(map(type, level))``): a mesh's 100,000 numbers, flat or as points, in about a
millisecond, where a walk in Python visits each. What asks whether an array holds numbers only
(`golem_proxy.tui.skeleton`) or plain values only (`golem_proxy.replay.diffing`) reads the
levels and stops at the first that answers; what asks how deep a message nests (the recorder:
`golem_proxy.recording.line_guard.strictly_unreadable`) reads `strict_json_misfit`."""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import chain
from typing import Any

__all__ = ["array_levels", "strict_json_misfit"]


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


def strict_json_misfit(value: Any, depth: int) -> str:
    """What keeps ``value`` (as Python's ``json`` decodes JSON, which takes NaN, Infinity and
    1e999) from being strict JSON nested at most ``depth`` deep: "deeper", "not finite" (a
    float NaN or infinite), or "" when nothing does. Walked a level at a time as
    `array_levels` walks arrays, objects' values included, each level's numbers summed in C (a
    sum is finite only when every term is): a mesh of 300,000 points in ~20 ms."""
    level = [value]
    for _ in range(depth + 1):
        kinds = set(map(type, level))
        if float in kinds and not _finite(level, kinds):
            return "not finite"
        if list not in kinds and dict not in kinds:
            return ""
        lists = level if kinds == {list} else [item for item in level if type(item) is list]
        dicts = [] if dict not in kinds else [item for item in level if type(item) is dict]
        values = chain.from_iterable(map(dict.values, dicts))
        level = list(chain(chain.from_iterable(lists), values))
    return "deeper"


def _finite(level: list[Any], kinds: set[type]) -> bool:
    """Whether every float of ``level`` is finite: a level of numbers only is summed in C (a
    sum is finite when every term is; one that is not, or overflows, is looked at closely);
    one that mixes numbers with other values (an object's members: few) is filtered."""
    if kinds <= _NUMBERS:
        try:
            if math.isfinite(sum(level)):
                return True
        except OverflowError:  # an integer past a float's range
            pass
    return all(math.isfinite(item) for item in level if type(item) is float)


_NUMBERS = {int, float}
