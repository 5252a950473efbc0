"""The hints `golem-proxy mcp` gives at start about ``--redact`` rules never name a rule the
user gave already, or one a rule of theirs covers (live/redact_names.py)."""

from __future__ import annotations

from golem_proxy.live.redact_names import hidden_already, names_spared


def test_a_rule_given_already_or_one_above_it_is_not_suggested() -> None:
    wanted = "tools/call:params.arguments.name"
    for given in (wanted, "params.arguments", "tools/call:params.*", "params.*.name"):
        assert hidden_already(wanted, [given]), given
    for other in ("prompts/get:params.arguments", "params.arguments.text", "params.name", "x:"):
        assert not hidden_already(wanted, [other]), other
    # A rule for every method never reaches the tool's name: no cover for the scoped one.
    assert not hidden_already("tools/call:params.name", ["params.name", "params"])
    assert names_spared("params.name", ["params.name", "tools/call:params.name"]) == (
        "leaves the prompt a prompts/get names in clear on the MCP hop: a name of the "
        "protocol, not a value; add --redact prompts/get:params.name to hide it"
    )
    assert names_spared("params.name", ["tools/call:params", "prompts/get:params.*"]) is None
