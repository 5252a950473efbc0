"""The scripted GOLEM sessions: what the GOLEM MCP server (golem-3dmcp@9819b31) sends while an
assistant models a small scene, the calls that fail in real life, and a Grasshopper
definition. The one source of scripted traffic: ``golem-proxy demo`` runs all three in a row,
``scripts/make_sample_recordings.py`` records each into its own sample trace.

Every request goes through `McpTools`, so names and parameter shapes are the real server's,
drift included: against the real plugin (or the headless one in its default behaviour) some
calls come back "Method not found" or with an error dict, exactly as in real sessions.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Optional

from golem_core.profiles import GOLEM

from .client import GolemClient, McpTools, RhinoCommandError

__all__ = [
    "DEFINITION_PATH",
    "SESSIONS",
    "DemoOutcome",
    "Script",
    "errors",
    "grasshopper",
    "modelling",
    "run_demo_session",
]

MISSING_GUID = "00000000-0000-4000-8000-000000000000"
DEFINITION_PATH = os.path.join(tempfile.gettempdir(), "golem-demo-box.gh")
"""The Grasshopper definition the sessions open: the plugin needs the file to exist (any
content; the headless plugin then shows its fixed sample definition)."""

Address = tuple[str, int]


@dataclass
class DemoOutcome:
    """What a scripted session did, as the MCP server would see it."""

    calls: int = 0
    noun: str = "tool call"
    """What a call is, in the narration (a Scrybe session sends requests, not MCP tools)."""
    failures: list[str] = field(default_factory=list)
    narrate: Callable[[str], None] = lambda text: None
    open_connections: int = 0
    """Client connections the session holds open now (a narrator waits for the proxy to have
    seen the others closed before it speaks)."""

    @contextmanager
    def client(self, address: Address, **options: Any) -> Iterator[GolemClient]:
        """A client connection to ``address``, counted in `open_connections` while open."""
        with GolemClient(*address, **options) as client:
            self.open_connections += 1
            try:
                yield client
            finally:
                self.open_connections -= 1

    def call(self, tool: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one tool call; an error answer is noted and the session goes on. A failure
        reported inside a success envelope (a wrapped handler's error dict, ``"success":
        false``) is noted too, as the profile reads it."""
        self.calls += 1
        name = getattr(tool, "__name__", "call")
        try:
            result = tool(*args, **kwargs)
        except RhinoCommandError as exc:
            self.failures.append(f"{name}: {exc}")
            return None
        failed = GOLEM.result_outcome(result)
        if failed.failed:
            self.failures.append(f"{name}: [{failed.text}] {failed.message}")
            return None
        return result


Script = Callable[[Address, Address, DemoOutcome], None]


def _guids(*results: Any) -> list[str]:
    return [r["guid"] for r in results if isinstance(r, dict) and isinstance(r.get("guid"), str)]


def modelling(main: Address, gh: Address, outcome: DemoOutcome) -> None:
    """A small scene on the main channel: a layer, two walls and a dome, a union, a capture."""
    outcome.narrate("modelling a small scene on the main channel")
    with outcome.client(main) as client:
        tools, call = McpTools(client), outcome.call
        call(tools.get_document_info)
        call(tools.create_layer, "Walls", color_r=200, color_g=80, color_b=40)
        walls = [
            call(tools.create_box, x, 0.0, 0.0, 40.0, 10.0, 30.0, layer="Walls", name=f"wall-{i}")
            for i, x in enumerate((0.0, 30.0))
        ]
        call(tools.create_sphere, 20.0, 5.0, 45.0, radius=8.0)
        call(tools.list_objects, layer="Walls")
        guids = _guids(*walls)
        call(tools.move_objects, guids, translation_y=5.0)  # not registered by the plugin
        call(tools.boolean_union, guids)
        call(tools.capture_viewport, width=320, height=200)
        call(tools.list_objects)


def errors(main: Address, gh: Address, outcome: DemoOutcome) -> None:
    """The calls that go wrong in real sessions, and a client bug on the wire."""
    outcome.narrate("the calls that go wrong in real sessions")
    with outcome.client(main) as client:
        tools, call = McpTools(client), outcome.call
        call(tools.get_object_info, MISSING_GUID)
        call(tools.create_torus, major_radius=3.0, minor_radius=1.0)  # reads base_center
        first = call(tools.create_box, width=10.0, depth=10.0, height=10.0)
        second = call(tools.create_box, 5.0, 5.0, 5.0, 10.0, 10.0, 10.0)
        call(tools.boolean_difference, _guids(first), _guids(second))  # reads guid_a
        call(tools.select_objects, _guids(first, second))  # not registered
        call(tools.create_layer, "Dup")
        call(tools.create_layer, "Dup")
        call(tools.add_named_view, "Detail")
        call(tools.restore_named_view, "Detail")  # the handler reads `name`
    # A client bug: a frame that is not JSON. The real plugin drops the connection unanswered;
    # one read sees it.
    with socket.create_connection(main, timeout=10) as raw:
        raw.sendall(GOLEM.frame_payload(b'{"id": "broken", "method": '))
        raw.recv(65536)


def grasshopper(main: Address, gh: Address, outcome: DemoOutcome) -> None:
    """A Grasshopper definition driven as the MCP server drives it (on the main connection),
    then a look at the plugin's own Grasshopper channel."""
    with open(DEFINITION_PATH, "w", encoding="utf-8") as definition:
        definition.write("headless demo definition\n")
    outcome.narrate("a Grasshopper definition, as the MCP server sends it")
    with outcome.client(main) as client:
        tools, call = McpTools(client), outcome.call
        call(tools.open_grasshopper_definition, DEFINITION_PATH)
        call(tools.list_grasshopper_components)
        call(tools.set_grasshopper_input, "Height", 12.5)  # not registered
        call(tools.run_grasshopper_definition, inputs={"Height": 12.5})
        call(tools.bake_grasshopper_objects, layer="Default")  # not registered
        outcome.narrate("the same definition through the plugin's Grasshopper channel (9877)")
        with outcome.client(gh, ping_method="gh.ping") as channel:
            call(McpTools(channel).list_grasshopper_components)
        call(tools.close_grasshopper_definition)


SESSIONS: dict[str, Script] = {
    "modelling-session": modelling,
    "error-session": errors,
    "grasshopper-session": grasshopper,
}


def run_demo_session(
    main: Address,
    gh: Address,
    narrate: Optional[Callable[[str], None]] = None,
    outcome: Optional[DemoOutcome] = None,
) -> DemoOutcome:
    """Drive every scripted session through the proxy's ``main`` and ``gh`` addresses.
    Returns what was called and which calls failed (as the MCP server would see them): in
    ``outcome`` when given (its narrator can then read `DemoOutcome.open_connections`)."""
    outcome = outcome or DemoOutcome()
    if narrate is not None:
        outcome.narrate = narrate
    for script in SESSIONS.values():
        script(main, gh, outcome)
    return outcome
