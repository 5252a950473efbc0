"""Every name the real plugin at 9819b31 registers, its built-ins on both channels and each
kind of failure, against the default behaviour: the envelope class, result keys and JSON
types (or the whole result), or the error code and message, from the conformance table."""

from __future__ import annotations

from typing import Any

import pytest
from conformance_support import check, load

from rhino_plugin.document import Document
from rhino_plugin.golem_9819b31 import handler_table

TABLE = load("golem-3dmcp-9819b31-methods.json")


def test_the_plugin_registers_exactly_the_real_names() -> None:
    assert sorted(handler_table(Document())) == TABLE["registered"]
    assert len(TABLE["registered"]) == 135


def test_every_registered_name_and_builtin_has_a_row() -> None:
    rows = {(row.get("channel", "main"), row["method"]) for row in TABLE["rows"]}
    for name in TABLE["registered"] + TABLE["builtins"]["main"]:
        assert ("main", name) in rows, name
    for name in TABLE["builtins"]["gh"]:
        assert ("gh", name) in rows, name


def _row_id(row: dict[str, Any]) -> str:
    return f"{row.get('channel', 'main')}:{row['method'] or '(empty)'}:{row['outcome']}"


@pytest.mark.parametrize("row", TABLE["rows"], ids=[_row_id(row) for row in TABLE["rows"]])
def test_method(row: dict[str, Any]) -> None:
    check(row)
