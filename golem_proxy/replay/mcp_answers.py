"""How `mcp-verify` compares an answer other than a tool result: what a server says of itself
(``initialize``: its name, capabilities, instructions, the protocol version it chose) and
what the model is told (``tools/list``: each tool's name, description, input and output
schema; the prompts and resources listed), as a tool result is compared (GUID-aware, under
``--ignore METHOD:PATH`` and ``--float-tolerance``).

A listing is compared by name, not by position: a build that registers its tools in another
order offers the model the same tools, and a difference reads
``result.tools.create_layer.description``, not an index. A tool added or gone is a difference
of its own (``result.tools.NAME``, absent on one side).

The server's own version (``result.serverInfo.version`` of ``initialize``) changes with every
release and says nothing the model reads: a change of it is told (a note on the row), never a
failure, so a recording outlives the release it was made with. Everything else fails: the
protocol version the server chose for the same ``initialize`` decides what a client may send
and read.
"""

from __future__ import annotations

from typing import Any, Optional

from .diffing import Comparator, Difference, envelope_body

__all__ = ["LISTINGS", "NOTED", "compare_answer"]

LISTINGS: dict[str, tuple[str, str]] = {
    "tools/list": ("tools", "name"),
    "prompts/list": ("prompts", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
}
"""Each listing method, the member of its result that lists, and what names an item."""

NOTED: dict[str, frozenset[str]] = {"initialize": frozenset({"result.serverInfo.version"})}
"""The paths whose differences are told but do not fail the check, by method."""


def compare_answer(
    recorded: dict[str, Any], live: dict[str, Any], comparator: Comparator, method: str
) -> tuple[list[Difference], list[Difference]]:
    """The differences between a recorded answer to ``method`` and the live one (ids
    aside): those that fail, and those only told (`NOTED`)."""
    found = comparator.compare(
        _keyed(envelope_body(recorded), method), _keyed(envelope_body(live), method), method
    )
    noted = NOTED.get(method, frozenset())
    failing = [difference for difference in found if difference.path not in noted]
    told = [difference for difference in found if difference.path in noted]
    return failing, told


def _keyed(body: Any, method: str) -> Any:
    """``body`` with its listing (`LISTINGS`) as an object by each item's name, when every
    item has a name of its own; else as it is (compared by position)."""
    listing = LISTINGS.get(method)
    result = body.get("result") if isinstance(body, dict) else None
    if listing is None or not isinstance(result, dict):
        return body
    member, key = listing
    items = result.get(member)
    by_name = _by_name(items, key) if isinstance(items, list) else None
    if by_name is None:
        return body
    return {**body, "result": {**result, member: by_name}}


def _by_name(items: list[Any], key: str) -> Optional[dict[str, Any]]:
    named: dict[str, Any] = {}
    for item in items:
        name = item.get(key) if isinstance(item, dict) else None
        if not isinstance(name, str) or name in named:
            return None
        named[name] = item
    return named
