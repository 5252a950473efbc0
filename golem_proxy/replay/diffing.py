"""Structured, GUID-aware, tolerant comparison of JSON values, shared by `verify`, `diff` and the
replay server's miss explanations.

A recorded GUID equals a live GUID when the `GuidMap` pairs them; a pair never seen before is
learned on the spot (the live side handed out a new object where the recording had one), so a
session that creates an object and then uses it compares equal end to end. A text naming a
recorded route's address equals one naming the address of the same route now, where
`RouteAddresses` pairs them (`mcp-verify`: the server names the port it dialled).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from ..json_levels import array_levels
from .matching import GUID_RE, GuidMap, IgnoreRules, Path, format_path, is_guid
from .route_addresses import RouteAddresses

__all__ = ["ABSENT", "Comparator", "Difference", "envelope_body", "short"]

MAX_DIFFERENCES = 50
"""Stop listing differences for one value past this many (a wholly different result would
otherwise print thousands of lines)."""


class _Absent:
    def __repr__(self) -> str:
        return "absent"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Difference:
    """One place where two values differ. ``recorded``/``live`` is ABSENT for a missing side."""

    path: str
    recorded: Any
    live: Any

    @property
    def kind(self) -> str:
        if self.recorded is ABSENT:
            return "added"
        if self.live is ABSENT:
            return "missing"
        return "changed"

    def describe(self) -> str:
        """``params.name ('a' vs 'b')``."""
        return f"{self.path} ({short(self.recorded)} vs {short(self.live)})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.recorded is not ABSENT:
            out["recorded"] = self.recorded
        if self.live is not ABSENT:
            out["live"] = self.live
        return out


def short(value: Any, limit: int = 60) -> str:
    """A one-line rendering of a JSON value for messages, cut at ``limit`` characters."""
    if value is ABSENT:
        return "absent"
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def envelope_body(obj: Any) -> Any:
    """A response envelope without its ``id`` (ids never compare: replay and verify send
    fresh ones)."""
    if isinstance(obj, dict):
        return {key: value for key, value in obj.items() if key != "id"}
    return obj


class Comparator:
    """Compares recorded values with live ones under ignore rules, a float tolerance, a GUID
    map and a map of route addresses. ``learn`` binds GUID pairs seen for the first time
    (verify, diff); without it an unknown pair is a difference. Route addresses are never
    learned: `mcp-verify` knows both sides of each before it compares."""

    def __init__(
        self,
        rules: Optional[IgnoreRules] = None,
        *,
        float_tolerance: float = 0.0,
        guids: Optional[GuidMap] = None,
        learn: bool = True,
        addresses: Optional[RouteAddresses] = None,
    ) -> None:
        self.rules = rules or IgnoreRules()
        self.float_tolerance = float_tolerance
        self.guids = guids if guids is not None else GuidMap()
        self.learn = learn
        self.addresses = addresses if addresses is not None else RouteAddresses()

    def compare(
        self, recorded: Any, live: Any, method: Optional[str] = None, root: Path = ()
    ) -> list[Difference]:
        """Differences between two envelopes (or parts of one, rooted at ``root``), in
        document order; empty when they are equal under the tolerances."""
        if self.rules and not root:
            recorded = self.rules.strip(recorded, method)
            live = self.rules.strip(live, method)
        found: list[Difference] = []
        self._walk(recorded, live, list(root), found)
        return found

    def _walk(self, recorded: Any, live: Any, path: list[Any], found: list[Difference]) -> None:
        if len(found) >= MAX_DIFFERENCES:
            return
        if isinstance(recorded, dict) and isinstance(live, dict):
            for key, value in recorded.items():
                path.append(key)
                if key in live:
                    self._walk(value, live[key], path, found)
                else:
                    found.append(Difference(format_path(path), value, ABSENT))
                path.pop()
            for key, value in live.items():
                if key not in recorded:
                    path.append(key)
                    found.append(Difference(format_path(path), ABSENT, value))
                    path.pop()
            return
        if isinstance(recorded, list) and isinstance(live, list):
            if _plainly_equal(recorded, live):
                return
            for index in range(max(len(recorded), len(live))):
                path.append(index)
                if index >= len(live):
                    found.append(Difference(format_path(path), recorded[index], ABSENT))
                elif index >= len(recorded):
                    found.append(Difference(format_path(path), ABSENT, live[index]))
                else:
                    self._walk(recorded[index], live[index], path, found)
                path.pop()
            return
        if not self.leaf_equal(recorded, live):
            found.append(Difference(format_path(path), recorded, live))

    def leaf_equal(self, recorded: Any, live: Any) -> bool:
        """Scalars (or mismatched containers): numbers within the tolerance, GUIDs through the
        map, strings with embedded GUIDs and route addresses mapped."""
        if _is_number(recorded) and _is_number(live):
            if recorded == live or (recorded != recorded and live != live):  # NaN is NaN here
                return True
            return bool(abs(recorded - live) <= self.float_tolerance)
        if isinstance(recorded, str) and isinstance(live, str):
            if recorded == live:
                return True
            if is_guid(recorded) and is_guid(live):
                return self.guids_equal(recorded, live)
            return self._text_equal(recorded, live)
        return type(recorded) is type(live) and bool(recorded == live)

    def _text_equal(self, recorded: str, live: str) -> bool:
        """An error message naming an object or the address a server dialled: equal with the
        known GUIDs and the route addresses now swapped in (a match the addresses made is
        told to `RouteAddresses.note`)."""
        if GUID_RE.search(recorded):
            recorded = GUID_RE.sub(lambda m: self.guids.to_live(m.group(0)), recorded)
            if recorded == live:
                return True
        if not self.addresses:
            return False
        swapped, routes = self.addresses.to_live(recorded)
        if routes and swapped == live:
            self.addresses.note(routes)
            return True
        return False

    def guids_equal(self, recorded: str, live: str) -> bool:
        known = self.guids.corresponds(recorded, live)
        if known is not None:
            return known
        return self.learn and self.guids.bind(recorded, live)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_PLAIN = frozenset({int, float, str, type(None), list})
"""What an array may hold, at any depth, for Python's own ``==`` to say what `leaf_equal`
says of equal values: a boolean equals 1 or 0 there and not here, and an object's keys need
`IgnoreRules`' and the GUIDs' care (a string equal to its counterpart is equal here too)."""
_NUMBERS = frozenset({int, float})


def _plainly_equal(recorded: list[Any], live: list[Any]) -> bool:
    """Whether two arrays are equal element for element, decided in C: a mesh's 100,000
    numbers walked one by one took 30 ms a comparison (``diff`` of two traces of 300 such
    answers: 9.7 s). False when they differ or hold what ``==`` does not compare as
    `leaf_equal` does; the walk then decides."""
    return recorded == live and _plain(recorded) and _plain(live)


def _plain(array: list[Any]) -> bool:
    """Whether ``array`` holds only `_PLAIN` values, at every depth."""
    for level, kinds in array_levels(array):
        if not kinds <= _PLAIN:
            return False
        if float in kinds:
            # A NaN is equal to itself for a list's ``==`` (which tries identity first), and
            # to nothing for `leaf_equal`: a NaN anywhere sums to one (so do infinities of
            # both signs), and such an array is walked. Floats beside other kinds, too.
            if not kinds <= _NUMBERS:
                return False
            try:
                total = sum(level)
            except OverflowError:  # an integer past a float's range
                return False
            return bool(total == total)
    return True
