"""What `check` and the MCP layer's comparisons make of a frame read from its skeleton (a
payload too large to parse: recording/frame_skeleton.py). Its placeholders are no part of
what the peer sent: nothing is found wanting in them, and the answers are compared as bytes."""

from __future__ import annotations

from pathlib import Path

from golem_core.profiles import get_profile
from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.events import Direction
from golem_proxy.live.tap_limits import ObserveLimits
from golem_proxy.recording.format import RouteInfo
from golem_proxy.replay.diffing import Comparator
from golem_proxy.replay.tool_call_diff import compare_sessions
from tests.support.cli_helpers import run_cli
from tests.support.trace_builder import TapSimulator, write_recording

MCP = get_profile("mcp")
POINTS = 15_000_000
SCHEMA = {
    "type": "object",
    "properties": {"points": {"type": "array", "items": {"type": "number"}}},
    "required": ["points"],
}


def _session(path: Path, last: bytes = b"1", *, large_call: bool = True) -> Path:
    """A `golem-proxy mcp` recording through the real tap: the tools listed, then a call
    with 15 million numbers (over a reader's parse budget, as its arguments or its answer)."""
    tap = TapSimulator(MCP, cap=64 * 1024 * 1024)
    tap.open(1, route="mcp")

    def send(direction: Direction, obj: object) -> None:
        tap.send(1, direction, MCP.encode(obj))

    hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
    send(Direction.C2S, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
    send(Direction.S2C, {"jsonrpc": "2.0", "id": 1, "result": hello})
    send(Direction.C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(Direction.C2S, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tool = {"name": "add_points", "inputSchema": SCHEMA}
    send(Direction.S2C, {"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool]}})
    numbers = b"[" + b"1," * (POINTS - 1) + last + b"]"
    if large_call:
        call = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add_points",'
        tap.send(1, Direction.C2S, call + b'"arguments":{"points":' + numbers + b"}}}\n")
        answer = {"content": [{"type": "text", "text": "added"}]}
        send(Direction.S2C, {"jsonrpc": "2.0", "id": 3, "result": answer})
    else:
        arguments = {"name": "add_points", "arguments": {"points": [1]}}
        send(
            Direction.C2S, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": arguments}
        )
        result = b'{"content":[{"type":"text","text":"ok"}],"structuredContent":{"points":'
        tap.send(
            1, Direction.S2C, b'{"jsonrpc":"2.0","id":3,"result":' + result + numbers + b"}}}\n"
        )
    tap.close(1)
    routes = [RouteInfo("mcp", "stdio", "stdio", profile="mcp")]
    path.write_bytes(write_recording(tap.events, routes=routes))
    return path


def test_check_finds_nothing_wanting_in_a_skeleton_and_says_it_did_not_look(
    tmp_path: Path,
) -> None:
    """The call's arguments hold the numbers its tool's schema asks for; read from the
    skeleton they are ``["<15000000 numbers elided>"]``, which the schema would refuse."""
    path = _session(tmp_path / "call.jsonl")
    done = run_cli("check", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no contract violations" in done.stdout
    assert "note: 1 flow with a payload too large to parse" in done.stderr


def test_two_sessions_compare_a_large_answer_as_bytes(tmp_path: Path) -> None:
    same = _session(tmp_path / "a.jsonl", large_call=False)
    other = _session(tmp_path / "b.jsonl", b"2", large_call=False)
    (equal,) = compare_sessions(
        read_tool_calls(str(same)), read_tool_calls(str(same)), Comparator()
    )
    assert equal.differences == [] and equal.problem is None
    (check,) = compare_sessions(
        read_tool_calls(str(same)), read_tool_calls(str(other)), Comparator()
    )
    assert [d.path for d in check.differences] == ["response"]
    assert "compared as bytes" in str(check.differences[0].recorded)


def test_a_large_call_keeps_its_tool_in_its_skeleton(tmp_path: Path) -> None:
    """A call whose arguments hold a 9 MB text beside 18 MB of empty arrays: its skeleton
    keeps the params' plain members (the tool's name) for the views to name it. Made through
    a tap without the parse limit (`ObserveLimits.parse`), as one with a higher one records
    it (the limit would keep it as its digest)."""
    tap = TapSimulator(MCP, cap=64 * 1024 * 1024, limits=ObserveLimits(parse=1 << 40))
    tap.open(1, route="mcp")
    grid = b"[" + b"[]," * 6_000_000 + b"[]]"
    arguments = b'{"note": "%s", "grid": %s}' % (b"word " * 1_800_000, grid)
    call = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add_points",'
    tap.send(1, Direction.C2S, call + b'"arguments":' + arguments + b"}}\n")
    answer = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "ok"}]}}
    tap.send(1, Direction.S2C, MCP.encode(answer))
    tap.close(1)
    path = tmp_path / "call.jsonl"
    path.write_bytes(
        write_recording(tap.events, routes=[RouteInfo("mcp", "stdio", "stdio", profile="mcp")])
    )
    (call_flow,) = read_tool_calls(str(path))
    assert call_flow.tool == "add_points"
    assert call_flow.flow.request is not None and call_flow.flow.request.elided
