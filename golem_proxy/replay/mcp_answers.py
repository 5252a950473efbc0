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
and read. Unless the two ``initialize`` requests asked for different versions
(`asked_otherwise`): a server answers the version its client asked for when it speaks it, so
a client whose SDK was upgraded since the recording (the ``golem_mcp_session`` fixture's is
the test's own) gets another answer from the same build. That difference is told, as the
server's version is; `mcp-verify` sends the recorded request, so there the two always agree.

An answer the recording kept only as its size and SHA-256 (a frame over
``--observe-frame-limit``) is compared by those (`digest_difference`): byte for byte, so a
build that answers 39 MB where 40 were recorded differs, at ``size/sha256``.
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional

from .diffing import Comparator, Difference, envelope_body

__all__ = ["LISTINGS", "NOTED", "asked_otherwise", "compare_answer", "digest_difference"]

LISTINGS: dict[str, tuple[str, str]] = {
    "tools/list": ("tools", "name"),
    "prompts/list": ("prompts", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
}
"""Each listing method, the member of its result that lists, and what names an item."""

NOTED: dict[str, frozenset[str]] = {"initialize": frozenset({"result.serverInfo.version"})}
"""The paths whose differences are told but do not fail the check, by method."""

ASKED: dict[str, tuple[str, str]] = {"initialize": ("protocolVersion", "result.protocolVersion")}
"""By method: a request's parameter, and the path of the answer that answers it."""


def asked_otherwise(method: str, recorded_params: Any, live_params: Any) -> frozenset[str]:
    """The paths of the answer to ``method`` told, not failed, because the two requests
    asked for different things there (`ASKED`): an ``initialize`` that asked another
    protocol version is answered with another one by the same build."""
    asked = ASKED.get(method)
    if asked is None:
        return frozenset()
    parameter, path = asked
    if _member(recorded_params, parameter) == _member(live_params, parameter):
        return frozenset()
    return frozenset({path})


def _member(params: Any, name: str) -> Any:
    return params.get(name) if isinstance(params, dict) else None


def compare_answer(
    recorded: dict[str, Any],
    live: dict[str, Any],
    comparator: Comparator,
    method: str,
    *,
    also_noted: frozenset[str] = frozenset(),
) -> tuple[list[Difference], list[Difference]]:
    """The differences between a recorded answer to ``method`` and the live one (ids
    aside): those that fail, and those only told (`NOTED`, and ``also_noted``:
    `asked_otherwise`)."""
    found = comparator.compare(
        _keyed(envelope_body(recorded), method), _keyed(envelope_body(live), method), method
    )
    noted = NOTED.get(method, frozenset()) | also_noted
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


def digest_difference(recorded: tuple[int, str], line: bytes) -> Optional[Difference]:
    """None when ``line`` (a live answer's line, its end stripped) is the frame the recording
    kept as its size and ``sha256:…`` digest (``recorded``), ended by ``\\n`` or ``\\r\\n``;
    else the difference, at ``size/sha256``."""
    size, digest = recorded
    for end in (b"\n", b"\r\n"):
        frame = line + end
        if len(frame) == size and f"sha256:{hashlib.sha256(frame).hexdigest()}" == digest:
            return None
    frame = line + b"\n"
    live = f"{len(frame)} B, sha256:{hashlib.sha256(frame).hexdigest()}"
    return Difference("size/sha256", f"{size} B, {digest}", live)
