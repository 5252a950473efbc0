"""The parsed form of a filter expression: `Not`, `And` and `Or` over `Predicate` leaves, each
of which tests a flow and prints back as the canonical text `parse_filter` reads again."""

from __future__ import annotations

import abc
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

from golem_core.profiles import Profile

from ..bulk import may_lie_in_blob
from .flows import Flow

__all__ = [
    "BODY_FILTERS",
    "And",
    "Filter",
    "FilterError",
    "Not",
    "Or",
    "Predicate",
    "bodies_read",
    "may_match_blob",
    "quote",
    "reads_bodies",
    "undecided",
]


class FilterError(ValueError):
    """A filter expression that does not parse. ``position`` is a 0-based character offset."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at position {position}")
        self.reason = message
        self.position = position


class Filter(abc.ABC):
    """A parsed filter expression."""

    @abc.abstractmethod
    def matches(self, flow: Flow, profile: Profile) -> bool:
        """True when ``flow`` passes the filter (``profile`` names error codes)."""

    @abc.abstractmethod
    def __str__(self) -> str:
        """The canonical expression: `parse_filter` turns it back into an equal filter."""


@dataclass(frozen=True)
class Not(Filter):
    inner: Filter

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return not self.inner.matches(flow, profile)

    def __str__(self) -> str:
        return "!" + _group(self.inner, (And, Or))


@dataclass(frozen=True)
class And(Filter):
    parts: tuple[Filter, ...]

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return all(part.matches(flow, profile) for part in self.parts)

    def __str__(self) -> str:
        return " & ".join(_group(part, (Or,)) for part in self.parts)


@dataclass(frozen=True)
class Or(Filter):
    parts: tuple[Filter, ...]

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return any(part.matches(flow, profile) for part in self.parts)

    def __str__(self) -> str:
        return " | ".join(str(part) for part in self.parts)


def _group(node: Filter, kinds: tuple[type[Filter], ...]) -> str:
    return f"({node})" if isinstance(node, kinds) else str(node)


@dataclass(frozen=True)
class Predicate(Filter):
    """``~name [arg]``, or a bare word (``name`` is "")."""

    name: str
    arg: Optional[str] = None
    # Built once at parse time (compiled regex, parsed number); not part of equality.
    _test: Callable[[Flow, Profile], bool] = field(
        compare=False, repr=False, default=lambda flow, profile: False
    )

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return self._test(flow, profile)

    def __str__(self) -> str:
        if not self.name:
            return quote(self.arg or "")
        if self.arg is None:
            return f"~{self.name}"
        return f"~{self.name} {quote(self.arg)}"


BODY_FILTERS = {"": ("request", "response"), "q": ("request",), "s": ("response",)}
"""The predicates that read a frame's body when given an argument, and which: a bare word
both, ``~q REGEX`` the request's, ``~s REGEX`` the response's."""


def bodies_read(node: Filter) -> frozenset[str]:
    """The sides (``request``, ``response``) whose bodies ``node`` reads anywhere."""
    if isinstance(node, Predicate):
        read = BODY_FILTERS.get(node.name, ()) if node.arg is not None else ()
        return frozenset(read)
    if isinstance(node, Not):
        return bodies_read(node.inner)
    if isinstance(node, (And, Or)):
        return frozenset().union(*(bodies_read(part) for part in node.parts))
    return frozenset()


def reads_bodies(node: Filter) -> bool:
    """Whether ``node`` reads a body anywhere."""
    return bool(bodies_read(node))


def undecided(
    node: Filter,
    flow: Flow,
    profile: Profile,
    unread: frozenset[str],
    blobs: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``flow`` passing ``node`` could turn on what its bodies on the sides ``unread``
    hold beyond what was searched (numbers elided from a message whose payload is not in
    memory), or on the blobs elided from its bodies on the sides ``blobs``: a view says how
    many flows its search of bodies may have decided wrongly, not how many it merely read.
    ``node`` is decided in three values (Kleene's: an And with a false part is false, an Or
    with a true part true), a body predicate that reads an ``unread`` side being unknown
    whatever it finds in what was kept: a match there may be the placeholder's own text
    (``<16384 numbers elided>`` for a search of 16384); one that reads a side in ``blobs``
    is unknown when what it looks for may lie in a blob (`may_match_blob`)."""
    return _decided(node, flow, profile, unread, blobs) is None


def may_match_blob(node: Predicate) -> bool:
    """Whether the body predicate ``node`` may match in a blob elided from a body, or in its
    placeholder (`bulk.may_lie_in_blob`): a bare word, or a ``~q``/``~s`` regex that is a
    plain text, when that text may; any other regex (``.``, a class, a repetition) may."""
    arg = node.arg or ""
    if node.name and _REGEX_SYNTAX.search(arg):
        return True
    return may_lie_in_blob(arg)


_REGEX_SYNTAX = re.compile(r"[.^$*+?{}\[\]\\|()]")


def _decided(
    node: Filter, flow: Flow, profile: Profile, unread: frozenset[str], blobs: frozenset[str]
) -> Optional[bool]:
    """`undecided`'s three values: True, False, or None for unknown."""
    if isinstance(node, Not):
        inner = _decided(node.inner, flow, profile, unread, blobs)
        return None if inner is None else not inner
    if isinstance(node, (And, Or)):
        settles = isinstance(node, Or)  # the value of a part that decides the whole
        result: Optional[bool] = not settles
        for part in node.parts:
            value = _decided(part, flow, profile, unread, blobs)
            if value is settles:
                return settles
            if value is None:
                result = None
        return result
    if isinstance(node, Predicate):
        read = bodies_read(node)
        if unread & read or (blobs & read and may_match_blob(node)):
            return None
    return node.matches(flow, profile)


_BARE = re.compile(r"[^\s()|&!~\"'][^\s()|&\"']*")


def quote(value: str) -> str:
    """``value`` as a filter word: as is when it reads back as one bare word, else quoted."""
    if _BARE.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
