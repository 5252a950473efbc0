"""Holding a ``tools/call``'s arguments to its tool's ``inputSchema``: the violations of the
schema (`argument_problems`, the `jsonschema` library) and the properties it does not declare
(`undeclared`). Shared by `mcp_audit`, which applies a schema with no regular expression in
its own process, and `schema_worker`, which applies one with in a process that can be
stopped (`bounded_schema`)."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from typing import Any, Callable, Optional

import jsonschema

from golem_core.contract import Violation, violation
from golem_core.mcp_rules import R_ARGUMENTS, R_UNDECLARED_ARGUMENT

__all__ = [
    "MAX_SCHEMA_ERRORS",
    "SCHEMA_NODES",
    "argument_problems",
    "found_in",
    "json_path",
    "new_validator",
    "schema_patterns",
    "undeclared",
    "uses_regex",
]

MAX_SCHEMA_ERRORS = 10
_ARGUMENTS = "$.params.arguments"

Matcher = Callable[[str, str], bool]
"""Whether a pattern (the first argument) is found in a property's name (the second)."""


def new_validator(schema: dict[str, Any], keywords: Optional[dict[str, Any]] = None) -> Any:
    """A validator of ``schema``'s draft, with ``keywords`` (name → function, as
    `jsonschema.validators.extend` takes them) in place of the draft's own.

    Raises jsonschema.exceptions.SchemaError when ``schema`` is not a valid JSON Schema."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    if keywords:
        cls = jsonschema.validators.extend(cls, keywords)
    return cls(schema)


def argument_problems(validator_of: Callable[[], Any], arguments: Any) -> list[Violation]:
    """The first `MAX_SCHEMA_ERRORS` ways ``arguments`` fail the validator ``validator_of``
    makes (or has made), or one violation saying why the schema cannot be applied."""
    try:
        errors = list(_first(validator_of().iter_errors(arguments), MAX_SCHEMA_ERRORS))
    except jsonschema.exceptions.SchemaError as exc:
        text = f"the tool's inputSchema is not a valid JSON Schema ({exc.message[:120]})"
        return [violation(R_ARGUMENTS, text, _ARGUMENTS)]
    except Exception as exc:
        # A recorded schema must never stop check: an unresolvable $ref, a pattern the
        # regex engine refuses, a schema nested too deep cannot be applied, and that is
        # itself worth saying.
        text = f"the tool's inputSchema cannot be applied ({type(exc).__name__})"
        return [violation(R_ARGUMENTS, text, _ARGUMENTS)]
    return [
        violation(R_ARGUMENTS, error.message[:200], json_path(error.absolute_path))
        for error in errors
    ]


def undeclared(
    tool: str, schema: Any, arguments: Any, matches: Optional[Matcher] = None
) -> list[Violation]:
    """The arguments' own properties that ``schema`` does not declare: valid JSON Schema,
    and what a server whose schema says nothing of others (FastMCP's) drops unread
    (GOLEM-3DMCP's ``create_box(length=2)`` made a box of the default depth). Nothing where
    the schema says what becomes of others (``additionalProperties: false`` fails
    `R_ARGUMENTS` already; true, or a schema, accepts them) or cannot be read here.
    ``matches`` decides a ``patternProperties`` pattern (`found_in` unless given)."""
    if not isinstance(arguments, dict) or not arguments:
        return []
    declared = _declared(schema)
    if declared is None:
        return []
    names, patterns = declared
    match = matches or found_in
    found: list[Violation] = []
    for name in arguments:
        if name in names or any(match(pattern, name) for pattern in patterns):
            continue
        listed = ", ".join(sorted(names)) or "none"
        text = (
            f"{name[:60]!r} is not among the properties {tool[:60]}'s inputSchema declares "
            f"({listed[:160]}): the server drops it unread, and the call runs without it"
        )
        found.append(violation(R_UNDECLARED_ARGUMENT, text, json_path([name])))
        if len(found) >= MAX_SCHEMA_ERRORS:
            break
    return found


_COMPOSED = ("allOf", "anyOf", "oneOf")
_UNREADABLE = (
    "$ref",
    "$dynamicRef",
    "additionalProperties",
    "unevaluatedProperties",
    "if",
    "then",
    "else",
    "not",
    "dependentSchemas",
    "dependencies",
)
"""Keywords of a schema that say what becomes of properties it does not list, or put its
properties where this does not look (a reference, a conditional branch, a schema that
applies when another property is there): no warning from such a schema."""


def _declared(schema: Any) -> Optional[tuple[set[str], list[str]]]:
    """The property names ``schema`` declares (at its top and in its ``allOf``, ``anyOf``,
    ``oneOf``) and its ``patternProperties`` patterns; None when it declares none or its
    `_UNREADABLE` keywords leave others to it."""
    parts = [schema]
    if isinstance(schema, dict):
        for keyword in _COMPOSED:
            branches = schema.get(keyword)
            parts += branches if isinstance(branches, list) else []
    names: set[str] = set()
    patterns: list[str] = []
    listed = False
    for part in parts:
        if not isinstance(part, dict) or any(keyword in part for keyword in _UNREADABLE):
            return None
        properties = part.get("properties")
        if isinstance(properties, dict):
            listed = True
            names.update(key for key in properties if isinstance(key, str))
        pattern_properties = part.get("patternProperties")
        if isinstance(pattern_properties, dict):
            listed = True
            patterns += [key for key in pattern_properties if isinstance(key, str)]
    return (names, patterns) if listed else None


def found_in(pattern: str, name: str) -> bool:
    """Whether ``pattern`` is found in ``name`` (`re.search`), or cannot be read."""
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return True  # a pattern Python cannot read may well match: no warning on a guess


def _first(errors: Iterator[Any], limit: int) -> Iterator[Any]:
    for count, error in enumerate(errors):
        if count >= limit:
            return
        yield error


def json_path(parts: Any) -> str:
    """``$.params.arguments`` and ``parts`` (names and indexes) below it."""
    path = _ARGUMENTS
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


_REGEX_KEYWORDS = frozenset(("pattern", "patternProperties"))
SCHEMA_NODES = 10_000
"""Values of a schema `uses_regex` looks through while a session runs (`McpAuditor.live`),
where a listing's walk must stay short; past it, one is assumed. `check` walks it whole."""


def uses_regex(schema: Any, nodes: Optional[int] = None) -> bool:
    """Whether ``schema`` holds a regular expression to match (``pattern``,
    ``patternProperties``) anywhere, or is too large to tell (more than ``nodes`` values,
    when given). Python's regular expressions cannot be stopped once running, and one that
    backtracks (``^(a+)+$`` against 30 ``a`` and a ``!``) runs for minutes: such a schema is
    applied where it can be stopped (`bounded_schema`), never in the process that reads the
    session. Any dict with such a key counts, not only one where the keywords put schemas:
    a ``$ref`` may point anywhere in the schema."""
    todo, seen = [schema], 0
    while todo:
        node = todo.pop()
        seen += 1
        if nodes is not None and seen > nodes:
            return True
        if isinstance(node, dict):
            if _REGEX_KEYWORDS.intersection(node):
                return True
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return False


_SUBSCHEMA = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SUBSCHEMA_MAPS = (
    "$defs",
    "definitions",
    "dependencies",
    "dependentSchemas",
    "patternProperties",
    "properties",
)


def schema_patterns(schema: Any) -> list[str]:
    """The regular expressions of ``schema`` (``pattern`` values, ``patternProperties``
    names), each once, in a fixed order: where the keywords of JSON Schema put schemas, not
    in a value that only looks like one (an ``enum``, a ``default``). The whole schema is
    looked through, once per tool on each side (`bounded_schema`, `schema_worker`)."""
    found: dict[str, None] = {}
    todo = deque([schema])
    while todo:
        node = todo.popleft()
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("pattern"), str):
            found.setdefault(node["pattern"])
        named = node.get("patternProperties")
        if isinstance(named, dict):
            for name in named:
                found.setdefault(name)
        todo.extend(node[key] for key in _SUBSCHEMA if isinstance(node.get(key), dict))
        for key in _SUBSCHEMA_LISTS:
            value = node.get(key)
            todo.extend(value if isinstance(value, list) else ())
        for key in _SUBSCHEMA_MAPS:
            value = node.get(key)
            todo.extend(value.values() if isinstance(value, dict) else ())
    return list(found)
