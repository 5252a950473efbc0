"""A ``tools/list`` answer whose request the tap did not see (an observing process that took
over after it, say): of no known method, it is redacted by every rule, the names of the tools
with it (live/frame_redaction.py `of_any_method`), where a paired listing keeps them under a
rule for every method. `check` then takes the listing for one whose names ``--redact`` hid:
a call of a tool it does not name in clear is not reported unknown, and the note says why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from golem_core.profiles import GOLEM, MCP
from golem_proxy.events import ConnectionOpened, Direction, FrameSeen
from golem_proxy.live.redact import REDACTED, Redactor
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.recording.format import Header, RecordingWriter, RouteInfo
from tests.support.cli_helpers import run_cli

RULE = "result.tools.*.name"
LISTING = {
    "tools": [
        {"name": "create_layer", "inputSchema": {"type": "object", "required": ["name"]}},
    ]
}


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **obj}).encode() + b"\n"


def test_check_reports_no_tool_missing_from_a_listing_hidden_because_unpaired(
    tmp_path: Path,
) -> None:
    before: list[object] = []
    after: list[object] = []
    # The process that saw the listing asked, and one that took over and saw its answer.
    asked = ConnectionTap(1, "mcp", MCP, before.append, redactor=Redactor([RULE]))
    asked.process(Direction.C2S, _line({"id": 2, "method": "tools/list"}), 0.1)
    took_over = ConnectionTap(1, "mcp", MCP, after.append, redactor=Redactor([RULE]))
    took_over.process(Direction.S2C, _line({"id": 2, "result": LISTING}), 0.2)
    call = {"name": "create_layer", "arguments": {}}  # its schema's "name" missing: unknown
    took_over.process(Direction.C2S, _line({"id": 3, "method": "tools/call", "params": call}), 0.3)
    took_over.process(Direction.S2C, _line({"id": 3, "result": {"content": []}}), 0.4)
    frames = [e for e in before + after if isinstance(e, FrameSeen)]
    listed = json.loads(frames[1].payload)["result"]["tools"]
    assert [tool["name"] for tool in listed] == [REDACTED]
    path = tmp_path / "unpaired.jsonl"
    routes = [
        RouteInfo("main", "127.0.0.1:1", "127.0.0.1:2"),
        RouteInfo("mcp", "stdio", "server", MCP.name),
    ]
    header = Header.new(GOLEM.name, routes, redact=[RULE])
    with RecordingWriter.create(str(path), header) as writer:
        writer.write(ConnectionOpened(conn=1, route="mcp", client="stdio", upstream="s", t=0.0))
        for event in before + after:
            writer.write(event)  # type: ignore[arg-type]
    checked = run_cli("check", str(path))
    assert "unknown-tool" not in checked.stdout, checked.stdout
    assert "arguments" not in checked.stdout, checked.stdout
    assert "note: 1 tools/call not checked against a tool's inputSchema" in checked.stderr
