"""Nested JSON arrays walked a level at a time, each level's types taken in C
(``set(map(type, level))``): a mesh's 100,000 numbers, flat or as points, in about a
millisecond, where a walk in Python visits each. What asks whether an array holds numbers only
(`golem_proxy.bulk`) or plain values only (`golem_proxy.replay.diffing`) reads the
levels and stops at the first that answers; what asks how deep a message nests (the recorder:
`golem_proxy.recording.line_guard.strictly_unreadable`, the fast reader's check of a payload)
reads `strict_json_misfit` or `nests_deeper`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any

__all__ = ["array_levels", "nests_deeper", "strict_json_misfit"]


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


def nests_deeper(value: Any, depth: int) -> bool:
    """Whether ``value`` (decoded JSON) nests arrays and objects more than ``depth`` deep."""
    number, kinds = _deepest(value, depth)
    return number == depth and bool(_CONTAINERS & kinds)


def strict_json_misfit(value: Any, depth: int) -> str:
    """What keeps ``value`` (as Python's ``json`` decodes JSON, which takes NaN, Infinity and
    1e999) from being strict JSON nested at most ``depth`` deep: "deeper", "not finite" (a
    float NaN or infinite), or "" when nothing does. Each level's numbers are summed in C (a
    sum is finite only when every term is): a mesh of 300,000 points in ~20 ms."""
    number, kinds = _deepest(value, depth, _finite)
    if number < 0:
        return "not finite"
    return "deeper" if number == depth and _CONTAINERS & kinds else ""


def _deepest(
    value: Any, depth: int, accept: Callable[[list[Any], set[type]], bool] = lambda *_: True
) -> tuple[int, set[type]]:
    """Walk ``value`` a level at a time, as `array_levels` walks arrays, objects' values
    included, to ``depth`` (its top is level 0) or the first level with no array nor object;
    returns that level's number and types, or -1 when ``accept`` refused a level."""
    level, number = [value], 0
    while True:
        kinds = set(map(type, level))
        if not accept(level, kinds):
            return -1, kinds
        if number == depth or not _CONTAINERS & kinds:
            return number, kinds
        lists = level if kinds == {list} else [item for item in level if type(item) is list]
        dicts = [] if dict not in kinds else [item for item in level if type(item) is dict]
        values = chain.from_iterable(map(dict.values, dicts))
        level, number = list(chain(chain.from_iterable(lists), values)), number + 1


_CONTAINERS = {list, dict}


def _finite(level: list[Any], kinds: set[type]) -> bool:
    """Whether every float of ``level`` is finite (true at once without one): a level of
    numbers only is summed in C (a sum is finite when every term is; one that is not, or
    overflows, is looked at closely); one that mixes numbers with other values (an object's
    members: few) is filtered."""
    if float not in kinds:
        return True
    if kinds <= _NUMBERS:
        try:
            if math.isfinite(sum(level)):
                return True
        except OverflowError:  # an integer past a float's range
            pass
    return all(math.isfinite(item) for item in level if type(item) is float)


_NUMBERS = {int, float}
