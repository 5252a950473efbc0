"""The error-code registry: every code the supported protocols put on the wire, with its name.

One table per code family. The GOLEM spec uses two families on one link (JSON-RPC integers from
the server loop, domain strings from the dispatcher); the Scrybe 0.6 contract uses JSON-RPC
standard codes plus an application range. Uniqueness and ranges are enforced by tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional, Union

ErrorCode = Union[int, str]


@dataclass(frozen=True)
class CodeInfo:
    """One registered error code."""

    code: ErrorCode
    name: str
    meaning: str
    retryable: bool = False


def _table(*rows: CodeInfo) -> Mapping[ErrorCode, CodeInfo]:
    table: dict[ErrorCode, CodeInfo] = {}
    for row in rows:
        if row.code in table:
            raise ValueError(f"duplicate error code {row.code!r}")
        table[row.code] = row
    return MappingProxyType(table)


# JSON-RPC 2.0 standard codes (the full reserved set, as named by the Scrybe contract).
JSONRPC_STANDARD: Mapping[ErrorCode, CodeInfo] = _table(
    CodeInfo(-32700, "ERR_PARSE", "Request was not valid JSON."),
    CodeInfo(-32600, "ERR_INVALID_REQUEST", "Request violated the envelope."),
    CodeInfo(-32601, "ERR_METHOD_NOT_FOUND", "Unknown method."),
    CodeInfo(-32602, "ERR_INVALID_PARAMS", "Params failed to deserialize / canonicalize."),
    CodeInfo(-32603, "ERR_INTERNAL", "Server-side dispatch failure."),
)

# The integer codes the GOLEM plugin's server loop sends (GOLEM spec, "Error Codes").
GOLEM_JSONRPC: Mapping[ErrorCode, CodeInfo] = _table(
    CodeInfo(-32601, "METHOD_NOT_FOUND", "Method not found (not in any registry)."),
    CodeInfo(-32603, "INTERNAL_ERROR", "Internal server error (unhandled exception in dispatch)."),
    CodeInfo(-32000, "APPLICATION_ERROR", "Application error from external dispatcher."),
)

# GOLEM domain codes sent by the plugin's dispatcher. "OK" is registered but never valid in an
# error response (a contract rule checks that).
GOLEM_DOMAIN: Mapping[ErrorCode, CodeInfo] = _table(
    CodeInfo("OK", "OK", "Success (not used in error responses)."),
    CodeInfo("INVALID_PARAMS", "INVALID_PARAMS", "Missing, wrong-type, or out-of-range parameter."),
    CodeInfo("OBJECT_NOT_FOUND", "OBJECT_NOT_FOUND", "GUID not found in the Rhino document."),
    CodeInfo("OPERATION_FAILED", "OPERATION_FAILED", "Rhino returned null or false."),
    CodeInfo("TIMEOUT", "TIMEOUT", "UI thread did not run the handler within 30 s.", True),
    CodeInfo("INTERNAL_ERROR", "INTERNAL_ERROR", "Unhandled exception in the handler."),
    CodeInfo("NOT_FOUND", "NOT_FOUND", "Method name not in the dispatcher registry."),
    CodeInfo("NOT_IMPLEMENTED", "NOT_IMPLEMENTED", "Handler raises NotImplementedError."),
)

# Scrybe 0.6 application range and registry (contract: "Stable error codes").
SCRYBE_APP_RANGE: tuple[int, int] = (-32099, -32000)
SCRYBE_APP: Mapping[ErrorCode, CodeInfo] = _table(
    CodeInfo(-32001, "ERR_TAB_NOT_OPEN", "The path is not an open tab."),
    CodeInfo(-32002, "ERR_DIRTY_QUIT_REFUSED", "quit with force=false while unsaved tabs exist."),
    CodeInfo(-32003, "ERR_REPLY_TIMEOUT", "Frontend did not reply within 5 s.", True),
    CodeInfo(-32004, "ERR_SECTION_NOT_FOUND", "section heading matched nothing."),
    CodeInfo(-32005, "ERR_DIRTY_RELOAD_REFUSED", "reload with force=false on a dirty tab."),
)


@dataclass(frozen=True)
class Registry:
    """The codes one protocol profile knows, looked up by wire value."""

    name: str
    tables: tuple[Mapping[ErrorCode, CodeInfo], ...]

    def lookup(self, code: object) -> Optional[CodeInfo]:
        """Return the registered entry for a wire code, or None when the code is unknown."""
        if isinstance(code, bool) or not isinstance(code, (int, str)):
            return None
        for table in self.tables:
            info = table.get(code)
            if info is not None:
                return info
        return None

    def code_for(self, word: str) -> Optional[ErrorCode]:
        """The wire code ``word`` stands for: a string code as it is (``TIMEOUT``), else the
        code of the entry named ``word`` (``METHOD_NOT_FOUND`` is -32601); None for neither.
        A string code wins over a name it shares (GOLEM's ``INTERNAL_ERROR``)."""
        if self.lookup(word) is not None:
            return word
        for table in self.tables:
            for info in table.values():
                if info.name == word:
                    return info.code
        return None

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted({info.name for table in self.tables for info in table.values()})

    def name_of(self, code: object) -> str:
        """Return a display name: the registered name, or the code itself when unknown."""
        info = self.lookup(code)
        return info.name if info is not None else str(code)


GOLEM_REGISTRY = Registry("golem", (GOLEM_JSONRPC, GOLEM_DOMAIN))
SCRYBE_REGISTRY = Registry("jsonrpc-ndjson", (JSONRPC_STANDARD, SCRYBE_APP))
