"""Pins docs/wire-contract.md: the malformed-input table is parsed out of the document and every
row is fed whole, byte by byte, split at every offset and followed by a valid frame; the rules
and registry tables must match the code row for row."""

from __future__ import annotations

import ast
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest
from core_feeding import chunked, chunkings, decode_all, raw_of

from golem_core.framing import Frame, FrameError, FrameErrorKind
from golem_core.messages import (
    ErrorResponse,
    Malformed,
    MalformedKind,
    Message,
    Request,
    Response,
    Role,
)
from golem_core.profiles import JSONRPC_NDJSON, Profile, get_profile
from golem_core.registry import GOLEM_DOMAIN, GOLEM_JSONRPC, JSONRPC_STANDARD, SCRYBE_APP
from golem_core.rulebook import RULES

DOC = Path(__file__).resolve().parents[2] / "docs" / "wire-contract.md"
TEXT = DOC.read_text(encoding="utf-8")
REFERENCE_REQUEST = JSONRPC_NDJSON.parse(
    b'{"jsonrpc":"2.0","id":1,"method":"state","params":{}}', Role.REQUEST
)
VALID_FRAME = {
    "golem": struct.pack("!I", 41) + b'{"id":"next","method":"ping","params":{}}',
    "jsonrpc-ndjson": b'{"jsonrpc":"2.0","id":7,"method":"state","params":{}}\n',
}
MESSAGE_TYPES = {"Request": Request, "Response": Response, "ErrorResponse": ErrorResponse}


def section(name: str) -> list[list[str]]:
    """The table rows between ``<!-- name:begin -->`` and ``<!-- name:end -->``, as cells."""
    match = re.search(
        rf"<!-- {re.escape(name)}:begin -->\n(.*?)<!-- {re.escape(name)}:end -->", TEXT, re.S
    )
    assert match, f"section {name} missing from {DOC}"
    rows = []
    for line in match.group(1).splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows[1:]  # drop the header row


def unquote(cell: str) -> str:
    assert cell.startswith("`") and cell.endswith("`"), cell
    return cell[1:-1]


def eval_bytes(expr: str) -> bytes:
    """Evaluate a bytes expression made only of bytes/int literals, ``+`` and ``*``."""

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (bytes, int)):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = ev(node.left), ev(node.right)
            return left + right if isinstance(node.op, ast.Add) else left * right
        raise ValueError(f"unsupported bytes expression: {expr}")

    value = ev(ast.parse(expr, mode="eval").body)
    assert isinstance(value, bytes)
    return value


@dataclass(frozen=True)
class Row:
    ident: str
    profile: Profile
    role: Optional[Role]
    data: bytes
    outcome: str
    name: str


def parse_rows() -> list[Row]:
    rows = []
    for cells in section("wire-contract-table"):
        ident, profile, role, data, outcome, name = cells
        rows.append(
            Row(
                ident,
                get_profile(profile),
                None if role == "any" else Role(role),
                eval_bytes(unquote(data)),
                unquote(outcome),
                unquote(name),
            )
        )
    return rows


ROWS = parse_rows()


def test_the_table_covers_both_profiles_and_every_kind() -> None:
    assert len(ROWS) >= 20
    assert len({row.ident for row in ROWS}) == len(ROWS)
    for profile in ("golem", "jsonrpc-ndjson"):
        outcomes = {row.outcome for row in ROWS if row.profile.name == profile}
        assert "FrameErrorKind.OVERSIZED" in outcomes and "FrameErrorKind.TRUNCATED" in outcomes
    kinds = {row.outcome for row in ROWS}
    assert {f"MalformedKind.{kind.name}" for kind in MalformedKind} <= kinds


def expected_name(row: Row, message: Message) -> str:
    if row.profile is JSONRPC_NDJSON and row.role is Role.RESPONSE:
        return JSONRPC_NDJSON.client_outcome(REFERENCE_REQUEST, message)
    assert isinstance(message, Malformed)
    return row.profile.malformed_outcome(message.kind)


def check_events(row: Row, events: list[Any], fed: bytes) -> None:
    assert raw_of(events) == fed
    if row.outcome.startswith("FrameErrorKind."):
        kind = FrameErrorKind[row.outcome.split(".", 1)[1]]
        errors = [e for e in events if isinstance(e, FrameError)]
        assert errors and errors[0].kind is kind
        assert errors[0].recoverable is (kind is FrameErrorKind.OVERSIZED)
        assert row.profile.frame_error_outcome(kind) == row.name
        assert row.profile.frame_violation(errors[0]).outcome == row.name
        assert not isinstance(events[0], Frame)
        return
    frame = events[0]
    assert isinstance(frame, Frame) and frame.raw == row.data
    message = row.profile.parse(frame.payload, row.role)
    if row.outcome.startswith("MalformedKind."):
        assert isinstance(message, Malformed)
        assert message.kind is MalformedKind[row.outcome.split(".", 1)[1]]
        outcomes = [v.outcome for v in row.profile.check_message(message, frame.payload)]
        assert row.profile.malformed_outcome(message.kind) in outcomes
    else:
        assert isinstance(message, MESSAGE_TYPES[row.outcome])
    assert expected_name(row, message) == row.name


@pytest.mark.parametrize("row", ROWS, ids=[row.ident for row in ROWS])
def test_row_in_every_chunking(row: Row) -> None:
    for _label, chunks in chunkings(row.data):
        events = decode_all(row.profile.new_decoder(), chunks)
        check_events(row, events, row.data)


@pytest.mark.parametrize(
    "row",
    [row for row in ROWS if row.outcome != "FrameErrorKind.TRUNCATED"],
    ids=lambda row: row.ident,
)
def test_row_followed_by_a_valid_frame(row: Row) -> None:
    prefix = row.data
    if row.outcome == "FrameErrorKind.OVERSIZED" and row.profile.name == "golem":
        (declared,) = struct.unpack("!I", row.data[:4])
        prefix += b"\0" * declared  # the skipped body, then the decoder is back at a boundary
    valid = VALID_FRAME[row.profile.name]
    stream = prefix + valid
    variants = chunkings(stream) if len(stream) <= 4096 else [("64KiB", chunked(stream, 65536))]
    for _label, chunks in variants:
        events = decode_all(row.profile.new_decoder(), chunks)
        check_events(row, events[:-2], prefix)
        last = events[-2]
        assert isinstance(last, Frame) and last.raw == valid
        assert isinstance(row.profile.parse(last.payload, Role.REQUEST), Request)
        assert raw_of(events) == stream


def test_rules_table_is_the_rules_registry() -> None:
    rows = section("contract-rules")
    documented = {unquote(cells[0]): cells[1:] for cells in rows}
    assert len(documented) == len(rows), "a rule id is listed twice"
    unknown = set(documented) - set(RULES)
    missing = set(RULES) - set(documented)
    assert not unknown, f"rule ids in the doc but not in RULES: {sorted(unknown)}"
    assert not missing, f"rule ids in RULES but not in the doc: {sorted(missing)}"
    for rule_id, (severity, summary, source) in documented.items():
        rule = RULES[rule_id]
        assert (severity, summary, source) == (rule.severity.value, rule.summary, rule.source)


def test_every_rule_id_mentioned_anywhere_exists() -> None:
    mentioned = set(re.findall(r"`((?:golem|jsonrpc)\.[a-z-]+\.[a-z0-9-]+)`", TEXT))
    assert mentioned - set(RULES) == set()


@pytest.mark.parametrize(
    "name,table",
    [
        ("GOLEM_JSONRPC", GOLEM_JSONRPC),
        ("GOLEM_DOMAIN", GOLEM_DOMAIN),
        ("JSONRPC_STANDARD", JSONRPC_STANDARD),
        ("SCRYBE_APP", SCRYBE_APP),
    ],
)
def test_registry_tables_match(name: str, table: Any) -> None:
    rows = section(f"registry:{name}")
    documented = [(ast.literal_eval(unquote(c[0])), c[1], c[2], c[3] == "yes") for c in rows]
    assert documented == [(i.code, i.name, i.meaning, i.retryable) for i in table.values()]
