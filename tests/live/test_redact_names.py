"""``--redact`` and the names that say what a message is: a rule for every method leaves the
tool an MCP call names alone, and no value hidden elsewhere is hidden in a message's method or
in the MCP hop's tool names (live/redact_names.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from golem_core.messages import Role
from golem_core.profiles import GOLEM, MCP, Profile
from golem_proxy.live.frame_redaction import FrameRedaction, values_replaced
from golem_proxy.live.redact import REDACTED, Redactor
from golem_proxy.live.redact_names import names_spared


def _frame(redaction: FrameRedaction, obj: Any, role: Role, method: str) -> dict[str, Any]:
    payload = json.dumps(obj).encode()
    message = redaction.profile.parse(payload, role)
    done = redaction.frame(payload, message, role, method)
    return json.loads(done.payload)  # type: ignore[no-any-return]


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


LISTING = {
    "jsonrpc": "2.0",
    "id": 2,
    "result": {"tools": [{"name": "create_layer", "description": "makes a create_layer"}]},
}


def test_a_rule_for_every_method_leaves_the_tool_a_call_names_alone() -> None:
    redactor = Redactor(["params.name", "result.tools.*.name", "params.*"])
    mcp = FrameRedaction(MCP, redactor)
    call = _frame(mcp, _call("create_layer", name="Walls"), Role.REQUEST, "tools/call")
    assert call["params"] == {"name": "create_layer", "arguments": REDACTED}
    listed = _frame(mcp, LISTING, Role.RESPONSE, "tools/list")
    assert listed["result"]["tools"][0]["name"] == "create_layer"
    # The same path on a GOLEM route is a parameter like any other.
    golem = FrameRedaction(GOLEM, redactor)
    request = {"id": "a", "method": "scene.create_layer", "params": {"name": "Walls"}}
    assert _frame(golem, request, Role.REQUEST, "scene.create_layer")["params"] == {
        "name": REDACTED
    }


def test_a_rule_scoped_to_the_method_hides_the_tool_name() -> None:
    redactor = Redactor(["tools/call:params.name", "tools/list:result.tools.*.name"])
    mcp = FrameRedaction(MCP, redactor)
    call = _frame(mcp, _call("create_layer", name="Walls"), Role.REQUEST, "tools/call")
    assert call["params"]["name"] == REDACTED
    listed = _frame(mcp, LISTING, Role.RESPONSE, "tools/list")
    assert listed["result"]["tools"][0]["name"] == REDACTED


@pytest.mark.parametrize("profile", [MCP, GOLEM])
def test_what_a_rule_spares_is_not_learned_as_a_secret(profile: Profile) -> None:
    """The observing process hands on what the rules replaced (`values_replaced`) to the one
    that replaces it: a name spared is none of it."""
    redactor = Redactor(["params.name"])
    payload = json.dumps(_call("create_layer")).encode()
    message = profile.parse(payload, Role.REQUEST)
    learned = values_replaced(profile, redactor, payload, message, Role.REQUEST, "tools/call")
    assert learned == (() if profile.tool_layer else ("create_layer",))


def test_a_value_hidden_elsewhere_is_not_hidden_in_a_method_or_a_tool_name() -> None:
    """A layer named like a tool: hidden in GOLEM's ``params.name``, it is still a word of
    the GOLEM methods and the tool the MCP hop calls, and those stay; it is hidden in the
    call's arguments and the listing's text."""
    redactor = Redactor(["params.name"])
    golem = FrameRedaction(GOLEM, redactor)
    mcp = FrameRedaction(MCP, redactor)
    made = {"id": "a", "method": "scene.create_layer", "params": {"name": "create_layer"}}
    assert _frame(golem, made, Role.REQUEST, "scene.create_layer") == {
        "id": "a",
        "method": "scene.create_layer",
        "params": {"name": REDACTED},
    }
    again = {"id": "b", "method": "scene.create_layer", "params": {"other": "create_layer"}}
    assert _frame(golem, again, Role.REQUEST, "scene.create_layer") == {
        "id": "b",
        "method": "scene.create_layer",
        "params": {"other": REDACTED},
    }
    call = _frame(mcp, _call("create_layer", label="create_layer"), Role.REQUEST, "tools/call")
    assert call["method"] == "tools/call"
    assert call["params"] == {"name": "create_layer", "arguments": {"label": REDACTED}}
    listed = _frame(mcp, LISTING, Role.RESPONSE, "tools/list")
    assert listed["result"]["tools"] == [
        {"name": "create_layer", "description": f"makes a {REDACTED}"}
    ]


def test_the_keys_on_the_way_to_a_kept_name_stay_too() -> None:
    """A secret that is a key's word (``params``) is hidden in keys elsewhere, but not on the
    way to a name kept: the name would no longer be where the protocol has it."""
    redactor = Redactor(["params.name"])
    golem = FrameRedaction(GOLEM, redactor)
    mcp = FrameRedaction(MCP, redactor)
    _frame(golem, {"id": "a", "method": "m.x", "params": {"name": "params"}}, Role.REQUEST, "m.x")
    call = _frame(mcp, _call("create_layer", params=1), Role.REQUEST, "tools/call")
    assert call["params"] == {"name": "create_layer", "arguments": {REDACTED: 1}}


def test_the_start_hint_names_the_scoped_rules() -> None:
    assert names_spared("params.name") == (
        "leaves the tool a tools/call names and the prompt a prompts/get names in clear on the "
        "MCP hop: a name of the protocol, not a value; add --redact tools/call:params.name "
        "--redact prompts/get:params.name to hide them"
    )
    assert names_spared("result.tools.0.name") == (
        "leaves the tools a tools/list lists in clear on the MCP hop: a name of the protocol, "
        "not a value; add --redact tools/list:result.tools.*.name to hide it"
    )
    for other in ("tools/call:params.name", "params.code", "params.arguments.name", "params"):
        assert names_spared(other) is None
