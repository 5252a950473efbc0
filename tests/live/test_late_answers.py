"""Late GOLEM answers and the calls that read one, as the tracker decides them from frames
decoded in wire order (golem_proxy/live/late_answers.py): what counts as evidence, and what
is kept (bounded, forgotten when the connection closes)."""

from __future__ import annotations

import json
from typing import Any

from golem_core.profiles import GOLEM, MCP
from golem_proxy.events import ConnectionClosed, Direction, FrameSeen
from golem_proxy.live.attribution import ToolCallTracker
from golem_proxy.live.connection_attribution import ConnectionAttribution
from golem_proxy.live.late_answers import MAX_ANSWERS
from tests.support.frames import frame_seen


def tool_call(index: int, tool: str) -> FrameSeen:
    params = {"name": tool, "arguments": {}}
    obj = {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}
    return frame_seen(MCP, Direction.C2S, index, json.dumps(obj).encode(), route="mcp")


def tool_answer(index: int, result: Any) -> FrameSeen:
    content = [{"type": "text", "text": json.dumps(result, indent=2)}]
    obj = {"jsonrpc": "2.0", "id": index, "result": {"content": content}}
    return frame_seen(MCP, Direction.S2C, index, json.dumps(obj).encode(), route="mcp")


class Golem:
    """One GOLEM connection of the MCP server, its frames annotated by ``tracker``."""

    def __init__(self, tracker: ToolCallTracker, conn: int = 2) -> None:
        self.tracker, self.conn, self.sent = tracker, conn, 0

    def ask(self, method: str) -> FrameSeen:
        payload = json.dumps({"id": f"r{self.sent}", "method": method, "params": {}}).encode()
        frame = frame_seen(GOLEM, Direction.C2S, self.sent, payload, conn=self.conn)
        self.sent += 1
        return self.tracker.annotate(frame)

    def answer(self, request: FrameSeen, result: Any) -> FrameSeen:
        payload = json.dumps({"id": "x", "result": result, "error": None}).encode()
        frame = frame_seen(GOLEM, Direction.S2C, request.index, payload, conn=self.conn)
        return self.tracker.annotate(frame, request)


def test_a_late_answer_read_by_the_next_call_is_named_on_it() -> None:
    tracker = ToolCallTracker(MCP)
    golem = Golem(tracker)
    tracker.watch(tool_call(1, "execute_python"))
    slow = golem.ask("scripting.execute_python")
    tracker.watch(tool_answer(1, "gave up"))  # the server's timeout: an error text
    late = golem.answer(slow, {"stdout": "late"})
    assert late.late and late.tool_calls is not None and late.tool_calls[0].tool == "execute_python"

    tracker.watch(tool_call(2, "create_layer"))
    own = golem.ask("scene.create_layer")
    in_time = golem.answer(own, {"full_path": "next"})
    assert not in_time.late
    read = tracker.watch(tool_answer(2, {"stdout": "late"}))
    assert isinstance(read, FrameSeen) and read.answer_of is not None
    assert (read.answer_of.conn, read.answer_of.index) == (2, slow.index)
    assert (read.answer_of.method, read.answer_of.tool) == (
        "scripting.execute_python",
        "execute_python",
    )


def test_a_result_equal_to_its_own_answer_is_no_evidence() -> None:
    tracker = ToolCallTracker(MCP)
    golem = Golem(tracker)
    tracker.watch(tool_call(1, "list_layers"))
    first = golem.ask("scene.list_layers")
    tracker.watch(tool_answer(1, "gave up"))
    golem.answer(first, {"layers": ["Default"]})
    tracker.watch(tool_call(2, "list_layers"))
    again = golem.ask("scene.list_layers")
    golem.answer(again, {"layers": ["Default"]})
    read = tracker.watch(tool_answer(2, {"layers": ["Default"]}))
    assert isinstance(read, FrameSeen) and read.answer_of is None


def test_answers_in_time_are_never_compared_and_a_closed_connection_is_forgotten() -> None:
    tracker = ToolCallTracker(MCP)
    golem = Golem(tracker)
    tracker.watch(tool_call(1, "list_layers"))
    golem.answer(golem.ask("scene.list_layers"), {"layers": []})
    assert not tracker.late._answers  # nothing kept while no answer was late
    tracker.watch(tool_answer(1, {"layers": []}))

    tracker.watch(tool_call(2, "execute_python"))
    slow = golem.ask("scripting.execute_python")
    tracker.watch(tool_answer(2, "gave up"))
    golem.answer(slow, {"stdout": "late"})
    for n in range(MAX_ANSWERS + 10):
        tracker.watch(tool_call(3 + n, "list_layers"))
        golem.answer(golem.ask("scene.list_layers"), {"n": n})
        tracker.watch(tool_answer(3 + n, {"n": n}))
    assert len(tracker.late._answers) == MAX_ANSWERS  # bounded

    # The server dropped the connection: what it held cannot be read any more.
    ConnectionAttribution(tracker).closed(
        ConnectionClosed(conn=2, route="main", reason="closed", t=1.0, bytes_c2s=1)
    )
    assert not tracker.late._answers and not tracker.late._held
    tracker.watch(tool_call(100, "execute_python"))
    read = tracker.watch(tool_answer(100, {"stdout": "late"}))
    assert isinstance(read, FrameSeen) and read.answer_of is None


def test_calls_in_flight_together_read_their_own_answers_after_a_late_one() -> None:
    """A server that matches answers by id throws the late one away; two calls made at once
    afterwards each return their own answer, which names both calls: no evidence either way."""
    tracker = ToolCallTracker(MCP)
    golem = Golem(tracker)
    tracker.watch(tool_call(1, "execute_python"))
    slow = golem.ask("scripting.execute_python")
    tracker.watch(tool_answer(1, "gave up"))
    assert golem.answer(slow, {"stdout": "late"}).late

    tracker.watch(tool_call(2, "create_layer"))
    tracker.watch(tool_call(3, "list_layers"))
    created = golem.ask("scene.create_layer")
    listed = golem.ask("scene.list_layers")
    assert created.tool_calls is not None and len(created.tool_calls) == 2
    golem.answer(created, {"full_path": "A"})
    golem.answer(listed, {"layers": ["Default", "A"]})
    for index, result in ((2, {"full_path": "A"}), (3, {"layers": ["Default", "A"]})):
        read = tracker.watch(tool_answer(index, result))
        assert isinstance(read, FrameSeen) and read.answer_of is None


def test_a_call_that_asked_the_plugin_nothing_is_no_evidence() -> None:
    """A server's cached result, equal to an answer on a connection that held a late one,
    says nothing of that connection: the call made no GOLEM request."""
    tracker = ToolCallTracker(MCP)
    golem = Golem(tracker)
    tracker.watch(tool_call(1, "execute_python"))
    slow = golem.ask("scripting.execute_python")
    tracker.watch(tool_answer(1, "gave up"))
    golem.answer(slow, {"stdout": "late"})
    tracker.watch(tool_call(2, "list_layers"))
    listed = golem.ask("scene.list_layers")
    golem.answer(listed, {"layers": ["Default"]})
    tracker.watch(tool_answer(2, {"layers": ["Default"]}))
    tracker.watch(tool_call(3, "list_layers"))  # answered from the server's cache
    read = tracker.watch(tool_answer(3, {"layers": ["Default"]}))
    assert isinstance(read, FrameSeen) and read.answer_of is None
