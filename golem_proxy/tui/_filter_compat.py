"""The filter expressions the TUI applies: `golem_proxy.filters` when it is installed, else a
small stand-in with the same API (``parse_filter(text)`` returning an object with
``matches(flow, profile)``, raising a ``ValueError`` subclass for bad input).

The stand-in understands a mitmproxy-like subset so the TUI is usable on its own: terms are
ANDed; ``!`` negates the next term; ``~m TEXT`` method contains, ``~route NAME``, ``~c CONN``,
``~b TEXT`` request or response body contains, ``~e`` errors, ``~v`` contract violations,
``~pending``, ``~marked``; a bare word is a method substring.
"""

from __future__ import annotations

import importlib
import shlex
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from golem_core.profiles import Profile

from ..flows import Flow

__all__ = ["FilterLike", "parse_filter"]


class FilterLike(Protocol):
    def matches(self, flow: Flow, profile: Profile) -> bool: ...


class StandInFilterError(ValueError):
    """A filter expression the stand-in cannot parse."""


Predicate = Callable[[Flow, Profile], bool]


def _body_contains(text: str) -> Predicate:
    needle = text.lower().encode("utf-8")

    def check(flow: Flow, profile: Profile) -> bool:
        return any(
            part is not None and needle in part.payload.lower()
            for part in (flow.request, flow.response)
        )

    return check


_FLAGS: dict[str, Predicate] = {
    "~e": lambda flow, profile: flow.is_error,
    "~v": lambda flow, profile: flow.has_violation,
    "~pending": lambda flow, profile: flow.pending,
    "~marked": lambda flow, profile: flow.marked,
}


def _with_argument(name: str, value: str) -> Predicate:
    if name == "~m":
        return lambda flow, profile: value.lower() in (flow.method or "").lower()
    if name == "~route":
        return lambda flow, profile: flow.route == value
    if name == "~c":
        if not value.isdigit():
            raise StandInFilterError(f"~c needs a connection number, not {value!r}")
        return lambda flow, profile: flow.conn == int(value)
    return _body_contains(value)


@dataclass(frozen=True)
class _StandInFilter:
    terms: tuple[tuple[bool, Predicate], ...]

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return all(predicate(flow, profile) != negated for negated, predicate in self.terms)


def _stand_in_parse(text: str) -> _StandInFilter:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise StandInFilterError(str(exc)) from None
    terms: list[tuple[bool, Predicate]] = []
    negate = False
    position = 0
    while position < len(words):
        word = words[position]
        position += 1
        if word == "!":
            negate = not negate
            continue
        if word in _FLAGS:
            terms.append((negate, _FLAGS[word]))
        elif word in ("~m", "~route", "~c", "~b"):
            if position >= len(words):
                raise StandInFilterError(f"{word} needs an argument")
            terms.append((negate, _with_argument(word, words[position])))
            position += 1
        elif word.startswith("~"):
            raise StandInFilterError(f"unknown filter {word!r}")
        else:
            terms.append((negate, _with_argument("~m", word)))
        negate = False
    if negate:
        raise StandInFilterError("'!' must be followed by a term")
    return _StandInFilter(tuple(terms))


def _load() -> Callable[[str], FilterLike]:
    try:
        module: Any = importlib.import_module("golem_proxy.filters")
    except ImportError:
        return _stand_in_parse
    parse: Callable[[str], FilterLike] = module.parse_filter
    return parse


parse_filter: Callable[[str], FilterLike] = _load()
"""Parse a filter expression. Raises ValueError (the filter module's FilterError) with a
message saying what is wrong."""
