"""Matching vocabulary shared by replay, verify and diff: JSON paths, ignore rules, GUID maps and
the canonical keys that make request lookup O(1).

A key is built from a request's method and its params with the ignored paths dropped, the live
GUIDs mapped back to the recorded ones, and numbers normalised (``1`` and ``1.0`` are the same
JSON number), then serialised with sorted keys, so two requests that mean the same thing hit the
same dict slot whatever order their members came in.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

__all__ = [
    "GUID_RE",
    "GuidMap",
    "IgnoreRule",
    "IgnoreRules",
    "Keyer",
    "MatchMode",
    "MissPolicy",
    "canonical_dumps",
    "canonical_params",
    "format_path",
    "is_guid",
    "parse_path",
]

PathPart = Union[str, int]
Path = tuple[PathPart, ...]

GUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_GUID_FULL = re.compile(rf"^{GUID_RE.pattern}$")
WILDCARD = "*"
_SIMPLE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PATH_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[(\d+|\*)\]")


class MatchMode(enum.Enum):
    """How a live request finds its recorded exchange."""

    SEQUENCE = "sequence"
    """The next unused exchange of the route, whatever it is (its method must agree)."""
    METHOD_PARAMS = "method-params"
    """Same method and the same canonical params."""
    METHOD = "method"
    """Same method; params are not looked at."""


class MissPolicy(enum.Enum):
    """What a replay does with a request the trace has no answer for."""

    ERROR = "error"
    """Answer the profile's miss error, naming the nearest recorded request."""
    FORWARD = "forward"
    """Send it to a live plugin and relay its answer."""
    CLOSE = "close"
    """Close the client's connection."""


def is_guid(value: Any) -> bool:
    """True for a string shaped like a UUID (any version, either case)."""
    return isinstance(value, str) and len(value) == 36 and _GUID_FULL.match(value) is not None


def parse_path(text: str) -> Path:
    """``params.guids[0]`` → ``("params", "guids", 0)``; ``*`` and ``[*]`` match anything.

    Raises ValueError for an empty or unparseable path."""
    parts: list[PathPart] = []
    pos = 0
    text = text.strip()
    if text.startswith("$"):
        text = text[1:].lstrip(".")
    while pos < len(text):
        match = _PATH_TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"{text!r}: cannot read the path at {text[pos:]!r}")
        name, index = match.groups()
        if index is not None:
            parts.append(WILDCARD if index == WILDCARD else int(index))
        else:
            parts.append(name)
        pos = match.end()
    if not parts:
        raise ValueError("an empty path")
    return tuple(parts)


def format_path(path: Sequence[PathPart]) -> str:
    """``("params", "guids", 0)`` → ``params.guids[0]`` (the form the options take)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _SIMPLE_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out or "$"


@dataclass(frozen=True)
class IgnoreRule:
    """Drop ``path`` (rooted at the envelope: ``params.…``, ``result.…``, ``error.…``), for one
    method or for all (``method`` None)."""

    path: Path
    method: Optional[str] = None

    @classmethod
    def parse(cls, text: str) -> IgnoreRule:
        """``params.name`` or ``scene.create_layer:params.name``. Raises ValueError."""
        method, sep, path = text.rpartition(":")
        return cls(parse_path(path), method if sep and method else None)

    def __str__(self) -> str:
        prefix = f"{self.method}:" if self.method else ""
        return prefix + format_path(self.path)


class IgnoreRules:
    """A set of ignore rules, looked up per method."""

    def __init__(self, rules: Iterable[IgnoreRule] = ()) -> None:
        self.rules = tuple(rules)
        self._global = tuple(r.path for r in self.rules if r.method is None)
        self._by_method: dict[str, tuple[Path, ...]] = {}
        for rule in self.rules:
            if rule.method is not None:
                self._by_method[rule.method] = (*self._by_method.get(rule.method, ()), rule.path)

    @classmethod
    def parse(cls, texts: Iterable[str]) -> IgnoreRules:
        return cls(IgnoreRule.parse(text) for text in texts)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def paths_for(self, method: Optional[str]) -> tuple[Path, ...]:
        """Every path to drop for ``method`` (the global ones included)."""
        if method is None:
            return self._global
        return self._global + self._by_method.get(method, ())

    def strip(self, envelope: Any, method: Optional[str]) -> Any:
        """A copy of ``envelope`` without the ignored paths (the input is never mutated)."""
        for path in self.paths_for(method):
            envelope = _drop(envelope, path)
        return envelope


def _drop(value: Any, path: Path) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        keys = list(value) if head == WILDCARD else [head] if head in value else []
        if not keys:
            return value
        out = dict(value)
        for key in keys:
            if rest:
                out[key] = _drop(out[key], rest)
            else:
                del out[key]
        return out
    if isinstance(value, list):
        if head == WILDCARD:
            indexes = list(range(len(value)))
        elif isinstance(head, int) and 0 <= head < len(value):
            indexes = [head]
        else:
            return value
        if not rest:
            return [item for i, item in enumerate(value) if i not in indexes]
        copy = list(value)
        for i in indexes:
            copy[i] = _drop(copy[i], rest)
        return copy
    return value


class GuidMap:
    """A one-to-one map between recorded GUIDs and the live GUIDs that stand for them."""

    def __init__(self) -> None:
        self.to_live_map: dict[str, str] = {}
        self.to_recorded_map: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self.to_live_map)

    def bind(self, recorded: str, live: str) -> bool:
        """Learn that ``live`` stands for ``recorded``. Returns False (and learns nothing) when
        either side is already bound to something else."""
        known_live = self.to_live_map.get(recorded)
        known_recorded = self.to_recorded_map.get(live)
        if known_live is None and known_recorded is None:
            self.to_live_map[recorded] = live
            self.to_recorded_map[live] = recorded
            return True
        return known_live == live and known_recorded == recorded

    def corresponds(self, recorded: str, live: str) -> Optional[bool]:
        """True/False when the map knows either GUID, None when both are new to it."""
        known_live = self.to_live_map.get(recorded)
        if known_live is not None:
            return known_live == live
        if live in self.to_recorded_map:
            return False
        return None

    def to_recorded(self, value: Any) -> Any:
        """``value`` with every live GUID the map knows replaced by its recorded GUID."""
        return _map_strings(value, self.to_recorded_map) if self.to_recorded_map else value

    def to_live(self, value: Any) -> Any:
        """``value`` with every recorded GUID the map knows replaced by its live GUID."""
        return _map_strings(value, self.to_live_map) if self.to_live_map else value

    def learn(self, recorded: Any, live: Any) -> int:
        """Walk two JSON values side by side and bind GUID strings found at the same path.
        Returns how many new pairs were learned."""
        learned = 0
        if isinstance(recorded, str) and isinstance(live, str):
            if recorded != live and is_guid(recorded) and is_guid(live):
                before = len(self)
                self.bind(recorded, live)
                learned += len(self) - before
        elif isinstance(recorded, dict) and isinstance(live, dict):
            for key, value in recorded.items():
                if key in live:
                    learned += self.learn(value, live[key])
        elif isinstance(recorded, list) and isinstance(live, list):
            for a, b in zip(recorded, live):
                learned += self.learn(a, b)
        return learned


def _map_strings(value: Any, table: dict[str, str]) -> Any:
    if isinstance(value, str):
        return table.get(value, value)
    if isinstance(value, dict):
        return {key: _map_strings(item, table) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_strings(item, table) for item in value]
    return value


# The ``.0`` of an integral float in compact JSON text (a digit before, ``,``, ``]`` or ``}``
# after; repr never writes other trailing zeros): ``40.0`` reads as ``40``. JSON does not tell
# the two apart and the reference client sends floats wherever Python had them. Doing this on
# the text costs one C call instead of a walk over the value; a string value that happens to
# contain such a pattern is changed in the key too, which can only merge keys that differ
# inside such a string.
_INTEGRAL_FLOAT = re.compile(r"(?<=\d)\.0(?=[,\]}])")


# Built once: json.dumps and json.loads with options build a new encoder/decoder every call.
_canonical_encode = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False
).encode
_decode = json.JSONDecoder().decode


def canonical_dumps(value: Any) -> str:
    """The canonical text of a JSON value: sorted keys, compact, non-ASCII kept, integral
    floats written as integers."""
    text = _canonical_encode(value)
    return _INTEGRAL_FLOAT.sub("", text) if ".0" in text else text


def canonical_params(payload: bytes) -> tuple[Optional[str], Any]:
    """``(method, params)`` of a request payload; ``(None, None)`` when it is not a request
    object. Params missing or not an object count as ``{}``, as the plugin treats them."""
    try:
        obj = _decode(payload.decode("utf-8"))  # as the plugin reads it
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None, None
    if not isinstance(obj, dict) or not isinstance(obj.get("method"), str):
        return None, None
    params = obj.get("params")
    return obj["method"], params if isinstance(params, dict) else {}


class Keyer:
    """Turns a request into its lookup key under one match mode and set of ignore rules."""

    def __init__(self, mode: MatchMode, rules: Optional[IgnoreRules] = None) -> None:
        self.mode = mode
        self.rules = rules or IgnoreRules()

    def key(
        self, route: str, method: str, params: Any, guids: Optional[GuidMap] = None
    ) -> tuple[str, ...]:
        """The lookup key. Live GUIDs in ``params`` are mapped back through ``guids``."""
        if self.mode is MatchMode.SEQUENCE:
            return (route,)
        if self.mode is MatchMode.METHOD:
            return (route, method)
        return (route, method, canonical_dumps(self.comparable_params(method, params, guids)))

    def comparable_params(self, method: str, params: Any, guids: Optional[GuidMap] = None) -> Any:
        """``params`` as the key sees them: ignored paths dropped, live GUIDs mapped back."""
        if self.rules:
            params = self.rules.strip({"params": params}, method).get("params", {})
        if guids is not None:
            params = guids.to_recorded(params)
        return params
