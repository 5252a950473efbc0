"""The ``--fault`` grammar (docs/faults.md): ``KIND[:key=value,...]`` into a `FaultRule`.

A spec comes from the command line and is treated as hostile input: every number is finite
and bounded (an hour at most for a delay, 10⁹ for a count, ASCII digits only), an error code
is an integer or one the profile's registry knows, and every refusal is one line naming the
spec (`FaultSpecError`), never another exception.
"""

from __future__ import annotations

import dataclasses
import enum
import fnmatch
import math
from dataclasses import dataclass
from typing import Any, Optional, Union

from golem_core.profiles import GOLEM, Profile
from golem_core.registry import ErrorCode, Registry

from ..events import Direction

__all__ = ["MAX_COUNT", "MAX_MS", "FaultKind", "FaultRule", "FaultSpecError", "parse_fault"]


class FaultSpecError(ValueError):
    """A ``--fault`` spec that cannot be parsed; the message names the spec and the problem."""


class FaultKind(enum.Enum):
    DELAY = "delay"
    DROP = "drop"
    RESET = "reset"
    TRUNCATE = "truncate"
    CORRUPT = "corrupt"
    SLICE = "slice"
    ERROR = "error"


MAX_MS = 3_600_000
"""Longest delay, jitter or slice gap a spec may ask for: one hour, in milliseconds."""
MAX_COUNT = 1_000_000_000
"""Largest whole number (``times``, ``bytes``, ``size``) a spec may give."""
_CODE_RANGE = (-(2**31), 2**31 - 1)
"""Integer error codes: what a 32-bit JSON-RPC peer can hold."""
_NUMBER_CHARS = 40
"""Longest text read as a number: a plain float needs far less (``-1.7976931348623157e+308``),
and refusing by length first keeps a 5000-digit value from costing (or ``int`` refusing it
with its own message)."""

# Keys every kind accepts, then each kind's own keys with their defaults.
_COMMON = ("method", "route", "dir", "p", "times")
_OWN: dict[FaultKind, dict[str, Optional[str]]] = {
    FaultKind.DELAY: {"ms": None, "jitter": "0"},
    FaultKind.DROP: {},
    FaultKind.RESET: {"when": "before"},
    FaultKind.TRUNCATE: {"at": "0.5"},
    FaultKind.CORRUPT: {"bytes": "1"},
    FaultKind.SLICE: {"size": "1", "gap": "0"},
    FaultKind.ERROR: {"code": None, "message": "fault injected by golem-proxy"},
}
# Kinds whose direction follows from what they do; `dir=` is refused for them.
_FIXED_DIRECTION = (FaultKind.ERROR, FaultKind.RESET)
_BOTH = frozenset((Direction.C2S, Direction.S2C))


@dataclass(frozen=True)
class FaultRule:
    """One parsed ``--fault`` spec. ``directions`` says which way the fault acts on frames."""

    kind: FaultKind
    spec: str
    directions: frozenset[Direction]
    methods: tuple[str, ...] = ()
    route: Optional[str] = None
    p: float = 1.0
    times: Optional[int] = None
    ms: float = 0.0
    jitter: float = 0.0
    when: str = "before"
    at: float = 0.5
    nbytes: int = 1
    size: int = 1
    gap: float = 0.0
    code: Union[int, str, None] = None
    message: str = ""

    def matches(self, route: str, direction: Direction, method: Optional[str]) -> bool:
        """True when the rule targets this route, direction and method (before ``p``)."""
        if direction not in self.directions:
            return False
        if self.route is not None and self.route != route:
            return False
        if not self.methods:
            return True
        return method is not None and any(fnmatch.fnmatchcase(method, m) for m in self.methods)


def parse_fault(spec: str, profile: Profile = GOLEM) -> FaultRule:
    """Parse ``KIND[:key=value,...]``; ``error:code=`` names are looked up in ``profile``'s
    error-code registry. Raises FaultSpecError, whose message is one line naming the spec and
    what is wrong; every number of the rule it returns is finite and within its key's range."""
    named = f"--fault {_shown(spec, 120)}"
    kind_text, _, rest = spec.strip().partition(":")
    try:
        kind = FaultKind(kind_text.strip().lower())
    except ValueError:
        known = ", ".join(k.value for k in FaultKind)
        raise FaultSpecError(
            f"{named}: unknown fault {_shown(kind_text)} (known: {known})"
        ) from None
    values = _key_values(named, rest)
    own = _OWN[kind]
    for key in values:
        if key not in own and key not in _COMMON:
            allowed = ", ".join((*own, *_COMMON))
            raise FaultSpecError(f"{named}: {kind.value} has no key {_shown(key)} ({allowed})")
    for key, default in own.items():
        if default is None and key not in values:
            raise FaultSpecError(f"{named}: {kind.value} needs {key}=")
        values.setdefault(key, default or "")
    if kind in _FIXED_DIRECTION and "dir" in values:
        raise FaultSpecError(
            f"{named}: {kind.value} has no dir= "
            "(error acts on requests; reset on the request (when=before) or its response)"
        )
    reader = _Values(named, values)
    default_dir = "s2c" if kind is FaultKind.DROP else "both"
    rule = FaultRule(
        kind=kind,
        spec=spec,
        directions=_directions(named, values.get("dir", default_dir)),
        methods=tuple(m for m in values.get("method", "").split("|") if m),
        route=values.get("route") or None,
        p=reader.number("p", 1.0),
        times=reader.count("times") if "times" in values else None,
    )
    if kind is FaultKind.DELAY:
        rule = _replace(
            rule, ms=reader.number("ms", MAX_MS), jitter=reader.number("jitter", MAX_MS)
        )
    elif kind is FaultKind.RESET:
        when = values["when"]
        if when not in ("before", "after"):
            raise FaultSpecError(f"{named}: when must be before or after, got {_shown(when)}")
        direction = Direction.C2S if when == "before" else Direction.S2C
        rule = _replace(rule, when=when, directions=frozenset((direction,)))
    elif kind is FaultKind.TRUNCATE:
        rule = _replace(rule, at=reader.number("at", 1.0))
    elif kind is FaultKind.CORRUPT:
        rule = _replace(rule, nbytes=reader.count("bytes", minimum=1))
    elif kind is FaultKind.SLICE:
        rule = _replace(
            rule, size=reader.count("size", minimum=1), gap=reader.number("gap", MAX_MS)
        )
    elif kind is FaultKind.ERROR:
        rule = _replace(
            rule,
            code=_error_code(named, values["code"], profile.registry),
            message=values["message"],
            directions=frozenset((Direction.C2S,)),
        )
    return rule


def _replace(rule: FaultRule, **changes: Any) -> FaultRule:
    return dataclasses.replace(rule, **changes)


def _shown(text: str, limit: int = 40) -> str:
    """``text`` quoted on one line (``repr`` escapes controls and lone surrogates); a long one
    cut, saying how long it was."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text)} characters)"


def _key_values(named: str, text: str) -> dict[str, str]:
    """``a=1,message="x, y"`` → dict. Values may be double-quoted to hold commas. ``named``
    opens every error message (``--fault 'spec'``)."""
    values: dict[str, str] = {}
    if not text.strip():
        return values
    items: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if quoted:
        raise FaultSpecError(f"{named}: a double quote is not closed")
    items.append("".join(current))
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise FaultSpecError(f"{named}: expected key=value, got {_shown(item)}")
        if key in values:
            raise FaultSpecError(f"{named}: {_shown(key)} given twice")
        values[key] = value.strip()
    return values


@dataclass
class _Values:
    named: str
    values: dict[str, str]

    def number(self, key: str, high: float) -> float:
        """The key's value as a finite number in [0, ``high``] (absent: 0, or 1 for ``p``)."""
        text = self.values.get(key)
        if text is None:
            return 1.0 if key == "p" else 0.0
        value = _finite(text) if len(text) <= _NUMBER_CHARS and text.isascii() else None
        if value is None or not 0.0 <= value <= high:
            unit = " (1 h)" if high == MAX_MS else ""
            raise FaultSpecError(
                f"{self.named}: {key} must be a number between 0 and {high:.15g}{unit}, "
                f"got {_shown(text)}"
            )
        return value

    def count(self, key: str, minimum: int = 0) -> int:
        """The key's value as a whole number in [``minimum``, `MAX_COUNT`]."""
        text = self.values[key]
        value = _whole(text)
        if value is None or not minimum <= value <= MAX_COUNT:
            raise FaultSpecError(
                f"{self.named}: {key} must be a whole number from {minimum} to {MAX_COUNT}, "
                f"got {_shown(text)}"
            )
        return value


def _finite(text: str) -> Optional[float]:
    """``text`` as a finite float, or None (not a number, nan, inf, or 1e999)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _whole(text: str) -> Optional[int]:
    """``text`` as an integer when it is ASCII digits (a sign allowed) short enough to be
    within any bound here, else None: ``²`` passes ``isdigit`` but not ``int``."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or len(digits) > 18 or not (digits.isascii() and digits.isdigit()):
        return None
    return int(text)


def _error_code(named: str, text: str, registry: Registry) -> ErrorCode:
    """The code an ``error`` fault sends: an integer as a number, else a code or a code's name
    from the profile's registry (a name stands for its code: ``ERR_TAB_NOT_OPEN`` is -32001).
    Raises FaultSpecError listing the names, so that the fault never injects a code the
    contract check then flags as unknown."""
    number = _whole(text)
    if number is not None:
        low, high = _CODE_RANGE
        if not low <= number <= high:
            raise FaultSpecError(
                f"{named}: code must be an integer from {low} to {high}, got {_shown(text)}"
            )
        return number
    # "OK" is registered, but never valid in an error response.
    code = registry.code_for(text) if text != "OK" else None
    if code is None:
        known = ", ".join(name for name in registry.names() if name != "OK")
        raise FaultSpecError(
            f"{named}: unknown error code {_shown(text)} for {registry.name} "
            f"(an integer, or one of: {known})"
        )
    return code


def _directions(named: str, text: str) -> frozenset[Direction]:
    if text == "both":
        return _BOTH
    try:
        return frozenset((Direction(text),))
    except ValueError:
        raise FaultSpecError(f"{named}: dir must be c2s, s2c or both, got {_shown(text)}") from None
