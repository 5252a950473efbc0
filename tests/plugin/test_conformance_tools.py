"""The real GOLEM MCP server's 89 tools, as they send, against the default behaviour: each
gets the envelope class (success, error dict inside a success envelope, error envelope), the
result keys and JSON types, or the error code and message the real plugin at 9819b31 gives."""

from __future__ import annotations

from typing import Any

import pytest
from conformance_support import check, load

TABLE = load("golem-3dmcp-9819b31-tools.json")


def test_the_table_covers_every_tool_once() -> None:
    tools = [row["tool"] for row in TABLE["rows"]]
    assert len(tools) == 89 and len(set(tools)) == 89


@pytest.mark.parametrize("row", TABLE["rows"], ids=[row["tool"] for row in TABLE["rows"]])
def test_tool(row: dict[str, Any]) -> None:
    check(row)
