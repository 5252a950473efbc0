"""The two layers are decoded in the order their bytes were forwarded: the MCP hop and the
GOLEM routes share one observer queue, so a GOLEM frame queued after a tools/call is decoded
after it, however the decoding is sliced."""

from __future__ import annotations

import functools
import json
import struct

from golem_core.profiles import GOLEM, MCP
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.live.attribution import ToolCallTracker
from golem_proxy.live.observer import Observer
from golem_proxy.live.tap import ConnectionTap


def golem_bytes(method: str) -> bytes:
    payload = json.dumps({"id": method, "method": method, "params": {}}).encode()
    return struct.pack("!I", len(payload)) + payload


def mcp_call(ident: int, tool: str) -> bytes:
    params = {"name": tool, "arguments": {}}
    obj = {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}
    return json.dumps(obj).encode() + b"\n"


def test_golem_frames_are_decoded_after_the_call_queued_before_them() -> None:
    tracker = ToolCallTracker(MCP)
    seen: list[Event] = []

    def mcp_publish(event: Event) -> None:
        tracker.watch(event)
        seen.append(event)

    mcp = ConnectionTap(1, "mcp", MCP, mcp_publish)
    golem = ConnectionTap(2, "main", GOLEM, seen.append, annotate=tracker)
    observer = Observer()
    # A GOLEM frame before any call, then a call split across chunks, then its GOLEM frames.
    observer.submit(golem, Direction.C2S, golem_bytes("startup.poll"), 0.0)
    call = mcp_call(1, "create_box")
    observer.submit(mcp, Direction.C2S, call[:10], 0.1)
    observer.submit(mcp, Direction.C2S, call[10:], 0.1)
    observer.submit(golem, Direction.C2S, golem_bytes("ping"), 0.2)
    observer.submit(golem, Direction.C2S, golem_bytes("geometry.create_box"), 0.3)
    observer.drain_now()
    decided = {
        e.method: [ref.tool for ref in e.tool_calls or ()]
        for e in seen
        if isinstance(e, FrameSeen) and e.route == "main"
    }
    assert decided == {
        "startup.poll": [],
        "ping": ["create_box"],
        "geometry.create_box": ["create_box"],
    }


def test_a_frame_marked_as_it_arrived_is_decided_then_though_decoded_later() -> None:
    """In one process the relay marks when it read a frame it may hold (`Connection.arrived`
    queues `ConnectionTap.arrived` behind what was observed before): the frame, queued when it
    goes on, after its call's answer and the next call, names the call in flight as it
    arrived; one read after the mark names the call of its own time."""
    tracker = ToolCallTracker(MCP)
    seen: list[Event] = []

    def mcp_publish(event: Event) -> None:
        tracker.watch(event)
        seen.append(event)

    mcp = ConnectionTap(1, "mcp", MCP, mcp_publish)
    golem = ConnectionTap(2, "main", GOLEM, seen.append, annotate=tracker)
    observer = Observer()
    observer.submit(mcp, Direction.C2S, mcp_call(1, "create_layer"), 0.1)
    observer.after_queued(functools.partial(golem.arrived, Direction.C2S, 0.2))
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": True}}
    observer.submit(mcp, Direction.S2C, json.dumps(answer).encode() + b"\n", 0.3)
    observer.submit(mcp, Direction.C2S, mcp_call(2, "list_layers"), 0.4)
    observer.submit(golem, Direction.C2S, golem_bytes("scene.create_layer"), 0.2)
    observer.submit(golem, Direction.C2S, golem_bytes("scene.list_layers"), 0.5)
    observer.drain_now()
    decided = {
        e.method: [ref.tool for ref in e.tool_calls or ()]
        for e in seen
        if isinstance(e, FrameSeen) and e.route == "main"
    }
    assert decided == {"scene.create_layer": ["create_layer"], "scene.list_layers": ["list_layers"]}
