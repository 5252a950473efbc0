"""End to end: the `mcp` package's stdio client drives the test FastMCP server through
``golem-proxy mcp --record`` to the headless plugin, and the same calls run directly against
an identical plugin. The model must get the same results, and the recording must say which
tool call caused each GOLEM flow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_proxy.analysis.tool_calls import LAYER_GOLEM, ToolCallIndex, mcp_routes, read_tool_calls
from golem_proxy.analysis.trace import open_flows
from golem_proxy.events import FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess

from .mcp_helpers import SERVER_COMMAND, call_tools, direct_env, environment, wrapped

CALLS = [
    ("list_layers", {}),
    ("create_layer", {"name": "A"}),
    ("layer_report", {"name": "B"}),
    ("broken_tool", {}),
    ("gh_ping", {}),
    ("big_text", {"size": 10}),
]
# The GOLEM methods each call causes, in order (the first call also opens the connection).
EXPECTED = {
    "list_layers": ["ping", "scene.list_layers"],
    "create_layer": ["scene.create_layer"],
    "layer_report": ["scene.create_layer", "scene.list_layers"],
    "broken_tool": ["scene.no_such_method"],
    # The Grasshopper socket has no ping: the connect-time ping fails and so does the tool.
    "gh_ping": ["ping"],
    "big_text": [],
}


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list, list, Path]]:
    """The calls made directly and through the wrapper (two plugins with the same seed),
    and the wrapper's recording."""
    record = tmp_path_factory.mktemp("mcp") / "session.jsonl"
    with PluginProcess(seed=7) as first, PluginProcess(seed=7) as second:
        direct = call_tools(SERVER_COMMAND, direct_env(first), CALLS)
        proxied = call_tools(wrapped(second, record), environment(), CALLS)
    yield direct, proxied, record


def test_every_tool_result_is_the_direct_runs(session: tuple[list, list, Path]) -> None:
    direct, proxied, _ = session
    assert proxied == direct
    assert [failed for failed, _ in proxied] == [False, False, False, True, True, False]


def test_every_golem_flow_names_the_tool_call_that_caused_it(
    session: tuple[list, list, Path],
) -> None:
    _, _, record = session
    calls = read_tool_calls(str(record))
    assert [call.tool for call in calls] == [name for name, _ in CALLS]
    for call in calls:
        assert [flow.method for flow in call.golem] == EXPECTED[call.tool], call.tool
    assert [call.is_error for call in calls] == [False, False, False, True, True, False]
    failing = next(call for call in calls if call.tool == "broken_tool")
    assert [flow.method for flow in failing.failed_golem] == ["scene.no_such_method"]


def test_no_golem_frame_is_left_without_a_decision(session: tuple[list, list, Path]) -> None:
    _, _, record = session
    recording = read_recording(str(record))
    golem = [e for e in recording.events if isinstance(e, FrameSeen) and e.route != "mcp"]
    assert golem
    assert all(frame.tool_calls is not None and len(frame.tool_calls) == 1 for frame in golem)
    with open_flows(str(record)) as reader:
        index = ToolCallIndex(mcp_routes(reader.route_profiles))
        flows = list(reader.flows())
    for flow in flows:
        index.note(flow)
        if index.layer(flow) == LAYER_GOLEM:
            assert index.attribution(flow).state == "call"
