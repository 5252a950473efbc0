"""golem_proxy.testing.demo_session and McpTools: the scripted sessions send what the GOLEM MCP
server's tools send (checked against the transcription in tests/plugin/conformance), and the
headless plugin answers them as the real plugin does."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem_proxy.testing.client import McpTools
from golem_proxy.testing.demo_session import SESSIONS, DemoOutcome, run_demo_session
from rhino_plugin import HeadlessPlugin, PluginOptions

TOOLS = json.loads(
    (
        Path(__file__).resolve().parents[1]
        / "plugin"
        / "conformance"
        / "golem-3dmcp-9819b31-tools.json"
    ).read_text(encoding="utf-8")
)["rows"]
BY_TOOL = {row["tool"].split(".", 1)[1]: row for row in TOOLS}


class Capture:
    """Stands in for a GolemClient: records what would be sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def send_command(self, method: str, params: dict[str, Any]) -> Any:
        self.sent.append((method, params))
        return {}


SAMPLES: dict[str, Any] = {
    "name": "Walls",
    "guid": "g",
    "guids": ["g"],
    "target_guids": ["g"],
    "cutter_guids": ["h"],
    "component_name": "Height",
    "value": 1.0,
    "file_path": "/tmp/x.gh",
    "view_name_to_save_as": "Detail",
    "named_view": "Detail",
}


def tool_methods() -> list[str]:
    return [
        name
        for name, _ in inspect.getmembers(McpTools, inspect.isfunction)
        if not name.startswith("_")
    ]


@pytest.mark.parametrize("tool", tool_methods())
def test_each_tool_sends_the_real_method_and_parameter_names(tool: str) -> None:
    capture = Capture()
    method = getattr(McpTools(capture), tool)  # type: ignore[arg-type]
    required = [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.default is inspect.Parameter.empty
    ]
    method(*(SAMPLES[name] for name in required))
    ((sent_method, params),) = capture.sent
    row = BY_TOOL[tool]
    assert sent_method == row["method"]
    assert sorted(params) == sorted(row["params"])
    if not required:  # called with the tool's defaults: the whole request matches
        assert params == row["params"]


@pytest.fixture
def plugin() -> Iterator[HeadlessPlugin]:
    running = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=4))
    running.start()
    yield running
    running.stop()


def test_the_sessions_meet_the_real_plugins_answers(plugin: HeadlessPlugin) -> None:
    narrated: list[str] = []
    outcome = run_demo_session(plugin.main_address, plugin.gh_address, narrated.append)
    assert len(narrated) == 4 and outcome.calls > 25
    failures = "\n".join(outcome.failures)
    for expected in (
        "Method not found: manipulation.move_objects",
        "Method not found: scene.select_objects",
        "Method not found: grasshopper.set_input",
        "create_torus requires 'base_center' or 'base_plane'.",
        "[INVALID_PARAMS (in result)] Required parameter 'guid_a' is missing.",
        "Object not found in Rhino document",
        "'name' parameter is required and must not be empty.",
    ):
        assert expected in failures, failures


def test_each_session_runs_on_its_own(plugin: HeadlessPlugin) -> None:
    for script in SESSIONS.values():
        outcome = DemoOutcome()
        script(plugin.main_address, plugin.gh_address, outcome)
        assert outcome.calls > 0
