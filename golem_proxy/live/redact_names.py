"""What ``--redact`` leaves alone: the names that say what a message is, not what it carries.

A message's ``method``, and on the MCP hop (a `Profile.tool_layer` route) the tool a
``tools/call`` names (its ``params.name``), the prompt a ``prompts/get`` names, the tools a
``tools/list`` lists (``result.tools.*.name``) and the prompts a ``prompts/list`` lists are the
protocol's structure. Hidden, the log, ``stats``' tool table and the ``~tool`` filter lose the
tool, and ``check`` took the placeholder for a tool's name. So:

- a rule for every method (no ``METHOD:`` prefix) leaves the MCP hop's names as they are:
  ``params.name`` is a GOLEM request's parameter, or a tool's argument, and the same path in
  a ``tools/call`` is the tool; a rule scoped to the method (``tools/call:params.name``)
  hides them;
- an answer whose request is unknown (unpaired) is of no method: every rule applies to it,
  and nothing in it is spared (`frame_redaction.of_any_method`): a listing that may be no
  listing is not trusted with the secrets a rule for every method reaches;
- a value hidden elsewhere is not hidden in them where it recurs (`Echoes.scrub`'s ``kept``):
  a layer named ``create_layer`` would make ``scene.create_layer`` ``scene.«redacted»``, and
  a tool's name hidden by a scoped rule would take the GOLEM methods it calls with it.

Also here: the hints ``golem-proxy mcp`` gives at start about rules that reach less, or
other, than their path suggests on one layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

from .redact import parse_rule
from .redact_paths import Place, places

__all__ = [
    "TOOL_CALL_ARGUMENTS",
    "hidden_already",
    "kept_from_echoes",
    "names_spared",
    "spared_by_rules",
    "tool_call_counterpart",
]

_ANY = "*"
"""In a naming place, any index of the list (a rule's wildcard)."""

_NAMING: dict[str, tuple[tuple[str, ...], str]] = {
    "tools/call": (("params", "name"), "the tool a tools/call names"),
    "prompts/get": (("params", "name"), "the prompt a prompts/get names"),
    "tools/list": (("result", "tools", _ANY, "name"), "the tools a tools/list lists"),
    "prompts/list": (("result", "prompts", _ANY, "name"), "the prompts a prompts/list lists"),
}
"""Per MCP method, where its request (or its answer) names a tool or prompt, and what that is."""

_LISTINGS = frozenset(("tools/list", "prompts/list"))
"""The methods whose answer names the tools or prompts (an answer's method is its request's)."""

_METHOD: Place = ("method",)


def spared_by_rules(obj: Any, method: Optional[str], tool_layer: bool) -> frozenset[Place]:
    """The places in ``obj`` (a message of ``method``, or an answer to it) that a rule for every
    method leaves alone: the names of tools and prompts, on the MCP hop (``tool_layer``)."""
    naming = _NAMING.get(method) if tool_layer and method is not None else None
    if naming is None:
        return frozenset()
    pattern = naming[0]
    # A rule's wildcard also takes an object's keys: a naming place's takes a list's indexes.
    return frozenset(
        place
        for place in places(obj, pattern)
        if all(isinstance(key, int) for key, want in zip(place, pattern) if want == _ANY)
    )


def kept_from_echoes(obj: Any, spared: frozenset[Place]) -> frozenset[Place]:
    """The places in ``obj`` that no value hidden elsewhere is hidden in: its ``method``,
    and the ``spared`` names (`spared_by_rules`)."""
    if isinstance(obj, dict) and isinstance(obj.get("method"), str):
        return spared | {_METHOD}
    return spared


def names_spared(text: str, given: Iterable[str] = ()) -> Optional[str]:
    """For a rule for every method whose path reaches a tool's or a prompt's name on the MCP
    hop (``params.name``, ``params.*``, ``result.tools.*.name``), what it leaves in clear
    there and the rules that would hide it, as a clause of one line; None for any other rule,
    or when the ``given`` rules hide all of it already (`hidden_already`: a user told to add
    a rule they gave would look for what they got wrong). Raises ValueError as
    `parse_rule`."""
    rule = parse_rule(text)
    if rule.method is not None:
        return None
    rules = list(given)
    spared = [
        (method, described, pattern)
        for method, (pattern, described) in _NAMING.items()
        if _reaches(rule.segments, pattern)
        and not hidden_already(method + ":" + ".".join(pattern), rules)
    ]
    if not spared:
        return None
    what = " and ".join(described for _, described, _ in spared)
    scoped = " ".join(
        "--redact " + method + ":" + ".".join(pattern) for method, _, pattern in spared
    )
    them = "it" if len(spared) == 1 else "them"
    unpaired = ""
    if any(method in _LISTINGS for method, _, _ in spared):
        # Said, as what the listing's row shows then is no name: an answer of no known
        # method spares nothing (`frame_redaction.of_any_method`).
        unpaired = (
            " (but in an answer whose request the proxy did not see, of no known method, "
            "where every rule hides what it reaches)"
        )
    return (
        f"leaves {what} in clear on the MCP hop{unpaired}: a name of the protocol, not a "
        f"value; add {scoped} to hide {them}"
    )


def _reaches(segments: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    if len(segments) != len(pattern):
        return False
    return all(
        segment == "*" or segment == want or (want == _ANY and segment.isdigit())
        for segment, want in zip(segments, pattern)
    )


TOOL_CALL_ARGUMENTS = ("tools/call", "params", "arguments")
"""Where an MCP tool call holds the arguments a server makes a plugin's request of."""


def tool_call_counterpart(text: str) -> Optional[str]:
    """For a rule of ``golem-proxy mcp`` that hides a request's ``params`` member on the GOLEM
    routes but reaches nothing on the MCP hop (``params.code``, or one scoped to a GOLEM
    method), the rule that hides the same name among a tool call's arguments
    (``tools/call:params.arguments.code``); None for any other rule. Only a suggestion: which
    argument becomes which parameter is the server's business, and is not guessed here.
    Raises ValueError as `parse_rule`."""
    rule = parse_rule(text)
    segments = rule.segments
    if segments[0] != "params":
        return None  # an answer's value is hidden on the MCP hop once the plugin's had it
    if rule.method is None:
        if len(segments) == 1 or segments[1] in ("arguments", "*"):
            return None  # all of params, or already the MCP hop's arguments
    elif "/" in rule.method or rule.method == "initialize":
        return None  # scoped to an MCP method
    method, params, arguments = TOOL_CALL_ARGUMENTS
    return ".".join((f"{method}:{params}", arguments, *segments[1:]))


def hidden_already(text: str, given: Iterable[str]) -> bool:
    """Whether one of the ``given`` rules hides on its method's messages all that the rule
    ``text`` (``METHOD:PATH``) would: one for that method or for every method, whose path is
    ``text``'s or one above it (a rule replaces the whole value at its path), ``*`` standing
    for any member. A rule for every method never reaches a naming place (`spared_by_rules`).
    Rules that do not parse hide nothing (the session refuses them, saying why)."""
    wanted = parse_rule(text)
    naming = _NAMING.get(wanted.method or "")
    for other in given:
        try:
            rule = parse_rule(other)
        except ValueError:
            continue
        if rule.method not in (None, wanted.method) or len(rule.segments) > len(wanted.segments):
            continue
        if rule.method is None and naming is not None and _reaches(wanted.segments, naming[0]):
            continue
        if all(mine in (_ANY, theirs) for mine, theirs in zip(rule.segments, wanted.segments)):
            return True
    return False
