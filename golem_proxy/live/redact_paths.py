"""The paths of ``--redact`` rules in a message (``params.points.*``): where they find values,
and a copy of the message with those values replaced by `REDACTED`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Union

from ..placeholder import REDACTED

__all__ = [
    "REDACTED",
    "Place",
    "at",
    "has_path",
    "places",
    "redacted",
    "replaced_at",
    "strings_in",
    "values",
]

Place = tuple[Union[str, int], ...]
"""Where a value is in a message: its keys and indexes from the top (``("params", "name")``)."""


def places(node: Any, segments: tuple[str, ...], above: Place = ()) -> Iterator[Place]:
    """Where in ``node`` (at ``above``) ``segments`` find a value."""
    for container, key in _children(node, segments[0]):
        if len(segments) == 1:
            yield (*above, key)
        else:
            yield from places(container[key], segments[1:], (*above, key))


def at(node: Any, place: Place) -> Any:
    """The value at ``place`` in ``node`` (one `places` found)."""
    for key in place:
        node = node[key]
    return node


def replaced_at(node: Any, found: list[Place]) -> Any:
    """A copy of ``node`` with the values at the places ``found`` in it replaced, copying
    only the containers on the way to them, as `redacted` does."""
    below: dict[Any, list[Place]] = {}
    for place in found:
        below.setdefault(place[0], []).append(place[1:])
    out: Any = dict(node) if isinstance(node, dict) else list(node)
    for key, rests in below.items():
        out[key] = REDACTED if () in rests else replaced_at(node[key], rests)
    return out


def values(node: Any, segments: tuple[str, ...]) -> list[Any]:
    """The values at ``segments`` in ``node``."""
    pairs = _children(node, segments[0])
    if len(segments) == 1:
        return [container[key] for container, key in pairs]
    found: list[Any] = []
    for container, key in pairs:
        found.extend(values(container[key], segments[1:]))
    return found


def strings_in(values: list[Any]) -> list[str]:
    """Every string in ``values`` (inside containers too)."""
    out: list[str] = []
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return out


def _children(node: Any, segment: str) -> list[tuple[Any, Any]]:
    """(container, key) pairs that ``segment`` selects in ``node``."""
    if isinstance(node, dict):
        if segment == "*":
            return [(node, key) for key in node]
        return [(node, segment)] if segment in node else []
    if isinstance(node, list):
        if segment == "*":
            return [(node, index) for index in range(len(node))]
        if segment.isdigit() and int(segment) < len(node):
            return [(node, int(segment))]
    return []


def has_path(node: Any, segments: tuple[str, ...]) -> bool:
    """Whether ``segments`` find a value in ``node``."""
    pairs = _children(node, segments[0])
    if len(segments) == 1:
        return bool(pairs)
    return any(has_path(container[key], segments[1:]) for container, key in pairs)


def redacted(node: Any, segments: tuple[str, ...]) -> Any:
    """A copy of ``node`` with the values at ``segments`` replaced. Only the containers on the
    rule's path are copied: a deep copy of the whole message would recurse as deep as the
    message nests, and a client could crash the tap with a few hundred nested arrays."""
    pairs = _children(node, segments[0])
    if not pairs:
        return node
    out: Any = dict(node) if isinstance(node, dict) else list(node)
    for _, key in pairs:
        out[key] = REDACTED if len(segments) == 1 else redacted(node[key], segments[1:])
    return out
