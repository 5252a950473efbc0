"""Redaction: replace values at given paths of a message before anything reaches disk.

A path is dotted from the message object: ``params.code``, ``result.image``,
``params.points.0``; a ``*`` segment matches any key or index; a ``METHOD:`` prefix limits the
rule to one method (``scripting.execute_python:params.code``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["REDACTED", "Redactor", "parse_rule"]

REDACTED = "«redacted»"


@dataclass(frozen=True)
class RedactRule:
    text: str
    method: Optional[str]
    segments: tuple[str, ...]


def parse_rule(text: str) -> RedactRule:
    """Parse one ``[METHOD:]a.b.c`` rule. Raises ValueError for an empty path."""
    method: Optional[str] = None
    path = text
    if ":" in text:
        method, _, path = text.partition(":")
    segments = tuple(part for part in path.split(".") if part)
    if not segments:
        raise ValueError(f"redaction rule {text!r} has no path")
    return RedactRule(text, method or None, segments)


class Redactor:
    """Applies redaction rules to message objects."""

    def __init__(self, rules: list[str]) -> None:
        self.rules = [parse_rule(rule) for rule in rules]

    def __bool__(self) -> bool:
        return bool(self.rules)

    def apply(self, obj: Any, method: Optional[str]) -> tuple[Any, tuple[str, ...]]:
        """Return ``(redacted copy, rules that matched)``; the input is never modified. When
        nothing matches, the same object and ``()`` come back."""
        matched: list[str] = []
        result = obj
        for rule in self.rules:
            if rule.method is not None and rule.method != method:
                continue
            if not _has_path(result, rule.segments):
                continue
            result = _redacted(result, rule.segments)
            matched.append(rule.text)
        return result, tuple(matched)


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


def _has_path(node: Any, segments: tuple[str, ...]) -> bool:
    pairs = _children(node, segments[0])
    if len(segments) == 1:
        return bool(pairs)
    return any(_has_path(container[key], segments[1:]) for container, key in pairs)


def _redacted(node: Any, segments: tuple[str, ...]) -> Any:
    """A copy of ``node`` with the values at ``segments`` replaced. Only the containers on the
    rule's path are copied: a deep copy of the whole message would recurse as deep as the
    message nests, and a client could crash the tap with a few hundred nested arrays."""
    pairs = _children(node, segments[0])
    if not pairs:
        return node
    out: Any = dict(node) if isinstance(node, dict) else list(node)
    for _, key in pairs:
        out[key] = REDACTED if len(segments) == 1 else _redacted(node[key], segments[1:])
    return out
