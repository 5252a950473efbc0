"""golem_core.registry: the error-code tables and lookups."""

from __future__ import annotations

import pytest

from golem_core.registry import (
    GOLEM_DOMAIN,
    GOLEM_JSONRPC,
    GOLEM_REGISTRY,
    JSONRPC_STANDARD,
    SCRYBE_APP,
    SCRYBE_APP_RANGE,
    SCRYBE_REGISTRY,
    CodeInfo,
    _table,
)

TABLES = {
    "JSONRPC_STANDARD": JSONRPC_STANDARD,
    "GOLEM_JSONRPC": GOLEM_JSONRPC,
    "GOLEM_DOMAIN": GOLEM_DOMAIN,
    "SCRYBE_APP": SCRYBE_APP,
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_codes_and_names_unique_per_table(name: str) -> None:
    table = TABLES[name]
    assert all(code == info.code for code, info in table.items())
    names = [info.name for info in table.values()]
    assert len(set(names)) == len(names)


def test_duplicate_code_is_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate error code -1"):
        _table(CodeInfo(-1, "A", ""), CodeInfo(-1, "B", ""))


def test_codes_and_names_unique_within_each_registry() -> None:
    for registry in (GOLEM_REGISTRY, SCRYBE_REGISTRY):
        codes = [code for table in registry.tables for code in table]
        assert len(set(codes)) == len(codes), registry.name
    names = [info.name for table in SCRYBE_REGISTRY.tables for info in table.values()]
    assert len(set(names)) == len(names)
    # GOLEM's two families share exactly one name, as the spec does: the server loop's -32603
    # and the dispatcher's "INTERNAL_ERROR" string. The wire code tells them apart.
    golem_numeric = {info.name for info in GOLEM_JSONRPC.values()}
    assert golem_numeric & set(GOLEM_DOMAIN) == {"INTERNAL_ERROR"}


def test_scrybe_app_codes_inside_the_reserved_range() -> None:
    low, high = SCRYBE_APP_RANGE
    assert (low, high) == (-32099, -32000)
    for code in SCRYBE_APP:
        assert isinstance(code, int) and low <= code <= high
    assert sorted(SCRYBE_APP) == [-32005, -32004, -32003, -32002, -32001]


def test_jsonrpc_standard_codes_outside_the_app_range() -> None:
    low, high = SCRYBE_APP_RANGE
    for code in JSONRPC_STANDARD:
        assert isinstance(code, int) and not low <= code <= high
    assert {c: i.name for c, i in JSONRPC_STANDARD.items()} == {
        -32700: "ERR_PARSE",
        -32600: "ERR_INVALID_REQUEST",
        -32601: "ERR_METHOD_NOT_FOUND",
        -32602: "ERR_INVALID_PARAMS",
        -32603: "ERR_INTERNAL",
    }


def test_golem_tables_match_the_spec() -> None:
    assert sorted(GOLEM_JSONRPC) == [-32603, -32601, -32000]
    assert set(GOLEM_DOMAIN) == {
        "OK",
        "INVALID_PARAMS",
        "OBJECT_NOT_FOUND",
        "OPERATION_FAILED",
        "TIMEOUT",
        "INTERNAL_ERROR",
        "NOT_FOUND",
        "NOT_IMPLEMENTED",
    }
    assert GOLEM_DOMAIN["TIMEOUT"].retryable and SCRYBE_APP[-32003].retryable
    assert not GOLEM_DOMAIN["INTERNAL_ERROR"].retryable


def test_lookup() -> None:
    assert GOLEM_REGISTRY.lookup(-32601) is GOLEM_JSONRPC[-32601]
    assert GOLEM_REGISTRY.lookup("TIMEOUT") is GOLEM_DOMAIN["TIMEOUT"]
    assert GOLEM_REGISTRY.lookup(-32700) is None  # not a GOLEM code
    assert SCRYBE_REGISTRY.lookup(-32001) is SCRYBE_APP[-32001]
    assert SCRYBE_REGISTRY.lookup("TIMEOUT") is None


@pytest.mark.parametrize("code", [True, False, None, 1.0, -32601.0, [-32601], {"c": 1}])
def test_lookup_rejects_non_codes_and_bools(code: object) -> None:
    assert GOLEM_REGISTRY.lookup(code) is None
    assert SCRYBE_REGISTRY.lookup(code) is None


def test_lookup_rejects_bools_even_where_1_or_0_would_match() -> None:
    registry = type(GOLEM_REGISTRY)("t", (_table(CodeInfo(1, "ONE", ""), CodeInfo(0, "ZERO", "")),))
    assert registry.lookup(1) is not None and registry.lookup(0) is not None
    assert registry.lookup(True) is None and registry.lookup(False) is None


def test_name_of() -> None:
    assert SCRYBE_REGISTRY.name_of(-32002) == "ERR_DIRTY_QUIT_REFUSED"
    assert SCRYBE_REGISTRY.name_of(-1) == "-1"
    assert GOLEM_REGISTRY.name_of("NOPE") == "NOPE"


def test_code_for_a_string_code_or_a_name() -> None:
    assert GOLEM_REGISTRY.code_for("TIMEOUT") == "TIMEOUT"
    assert GOLEM_REGISTRY.code_for("INTERNAL_ERROR") == "INTERNAL_ERROR"  # the string code wins
    assert GOLEM_REGISTRY.code_for("METHOD_NOT_FOUND") == -32601
    assert SCRYBE_REGISTRY.code_for("ERR_TAB_NOT_OPEN") == -32001
    assert SCRYBE_REGISTRY.code_for("TIMEOUT") is None
    assert GOLEM_REGISTRY.code_for("NOPE") is None
    assert "OBJECT_NOT_FOUND" in GOLEM_REGISTRY.names()
    assert GOLEM_REGISTRY.names() == sorted(GOLEM_REGISTRY.names())
