"""`mcp_known`: what a recording holds of the MCP sessions a new observing process takes up
(each one's ``initialize`` sent and answered, the tools of the last ``tools/list``), read
backwards from the file's end with `os.pread` only, within a bound past which it is unknown."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from golem_core.profiles import MCP
from golem_proxy.events import Direction, GapReason
from golem_proxy.recording.mcp_session_scan import (
    ANSWERED,
    NEVER,
    SENT,
    UNKNOWN,
    McpKnown,
    mcp_known,
)
from tests.support.restarts import TappedSession, restart_gap

C2S, S2C = Direction.C2S, Direction.S2C


def _rpc(**members: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **members}).encode()


def _listing(*names: str) -> bytes:
    tools = [{"name": name, "inputSchema": {"type": "object"}} for name in names]
    return _rpc(id=1, result={"tools": tools})


def _known(path: Path, conns: list[int], **options: Any) -> McpKnown:
    fd = os.open(path, os.O_RDWR)
    try:
        os.lseek(fd, 7, os.SEEK_SET)  # where a writer sharing it might have left it
        found = mcp_known(fd, "main", conns, **options)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 7  # read with pread only
    finally:
        os.close(fd)
    return found


def _session(path: Path, calls: int = 3) -> None:
    """Connection 1 initialized, its tools listed twice (the last listing names "b"), then
    ``calls`` calls; connection 2 sent ``initialize``, unanswered; connection 3 nothing."""
    session = TappedSession(path, MCP)
    for conn in (1, 2, 3):
        session.open(conn)
    session.send(1, C2S, _rpc(id=0, method="initialize", params={}))
    session.send(1, S2C, _rpc(id=0, result={}))
    session.send(1, C2S, _rpc(method="notifications/initialized"))
    session.send(1, C2S, _rpc(id=1, method="tools/list"))
    session.send(1, S2C, _listing("a"))
    session.send(1, C2S, _rpc(id=2, method="tools/list"))
    session.send(1, S2C, _rpc(id=2, result={"tools": [{"name": "b", "inputSchema": {}}]}))
    session.send(2, C2S, _rpc(id=0, method="initialize", params={}))
    for ident in range(3, 3 + calls):
        session.send(1, C2S, _rpc(id=ident, method="tools/call", params={"name": "b"}))
        session.send(1, S2C, _rpc(id=ident, result={"content": []}))
    session.close()


def test_each_session_s_start_and_the_last_listing(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _session(path)
    known = _known(path, [1, 2, 3])
    assert known.sessions[1].initialize == ANSWERED
    assert known.sessions[1].answered_at == 0.002  # its answer's t
    assert [s.initialize for s in (known.sessions[2], known.sessions[3])] == [SENT, NEVER]
    assert known.tools == {"tools": [{"name": "b", "inputSchema": {}}]}
    # Read in blocks smaller than a line, the same.
    assert _known(path, [1, 2, 3], block=97) == known


def test_past_its_bound_a_session_is_unknown(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _session(path, calls=200)
    known = _known(path, [1, 2, 3], look_back=4096, block=1024)
    assert [s.initialize for s in known.sessions.values()] == [UNKNOWN] * 3
    assert known.tools is None


def test_a_gap_after_what_is_known_of_a_start_leaves_it_unknown(tmp_path: Path) -> None:
    """Connection 1's ``initialize`` crossed in a gap (an earlier restart), 2's answer may
    have; 3's was answered before its gap; 4 sent nothing, its gap a request let go."""
    path = tmp_path / "r.jsonl"
    session = TappedSession(path, MCP)
    for conn in (1, 2, 3, 4):
        session.open(conn)
    session.send(2, C2S, _rpc(id=0, method="initialize", params={}))
    session.send(3, C2S, _rpc(id=0, method="initialize", params={}))
    session.send(3, S2C, _rpc(id=0, result={}))
    for conn in (1, 2, 3):
        session.writer.write(restart_gap(conn, session.t, 0, S2C))
    gap = restart_gap(4, session.t, 1)
    session.writer.write(dataclasses.replace(gap, reason=GapReason.EVICTED))
    for conn in (1, 2, 3, 4):
        session.send(conn, C2S, _rpc(id=5, method="tools/call", params={"name": "b"}))
    session.close()
    known = _known(path, [1, 2, 3, 4])
    starts = [known.sessions[conn].initialize for conn in (1, 2, 3, 4)]
    assert starts == [UNKNOWN, UNKNOWN, ANSWERED, NEVER]
    assert _known(path, [1, 2, 3, 4], block=97) == known
