"""``mcp --call-feed`` told to the ``golem_mcp_session`` fixture's stand-in over a real Unix
socket: a call the client cancels ends there (the server never answers it), so the calls
after it are scoped again; and the feed holds no line past its limit, nor any of the
server's while no call is in flight."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Optional

import pytest
import trio

from golem_core.profiles.mcp import MCP_CAP
from golem_proxy.live.call_feed import CallFeed
from golem_proxy.replay.call_follow import CallFollower
from golem_proxy.replay.call_scope import CallRef, CallScope, CallScopes
from golem_proxy.replay.engine import ReplayEngine
from golem_proxy.replay.recorded_exchanges import load_exchanges
from golem_proxy.replay.setup import ReplayOptions, engine_for
from tests.replay.traces import modelling_session

pytestmark = pytest.mark.trio
CALLS = {1: CallRef(1, "slow", {}, 1), 2: CallRef(2, "list_layers", {}, 2)}
MiB = 1024 * 1024


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def call(ident: int, tool: str) -> bytes:
    params = {"name": tool, "arguments": {}}
    return line({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})


def answer(ident: int) -> bytes:
    return line({"jsonrpc": "2.0", "id": ident, "result": {"content": []}})


@asynccontextmanager
async def following(
    tmp_path: Path, limit: int = MCP_CAP
) -> AsyncIterator[tuple[CallFeed, CallFollower, CallScopes]]:
    trace = load_exchanges(str(modelling_session(tmp_path / "session.jsonl")))
    scopes = CallScopes(CALLS, {})
    follower = CallFollower(engine_for(trace, ReplayOptions()), scopes)
    try:
        async with trio.open_nursery() as nursery:
            address = await nursery.start(follower.serve)
            feed = await CallFeed.connect(address, limit=limit)
            try:
                yield feed, follower, scopes
            finally:
                await feed.aclose()
                nursery.cancel_scope.cancel()
    finally:
        follower.close()
        trace.close()


async def scoped(engine: ReplayEngine, scope: Optional[CallScope]) -> bool:
    """Whether ``engine`` comes to serve ``scope`` (an ``end`` is not acknowledged)."""
    with trio.move_on_after(5):
        while engine.scope is not scope:
            await trio.sleep(0.01)
    return engine.scope is scope


async def test_a_cancelled_call_ends_so_the_next_is_scoped(tmp_path: Path) -> None:
    # Before, the cancelled call stayed in flight for good: every later call was taken as
    # overlapping it and served any call's answers, and nothing said so.
    async with following(tmp_path) as (feed, follower, scopes):
        await feed.client_chunk(call(1, "slow"))
        assert follower.engine.scope is scopes.for_index(1)
        cancel = {"requestId": 1, "reason": "the user stopped it"}
        await feed.client_chunk(
            line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        )
        await feed.client_chunk(call(2, "list_layers"))  # acknowledged: the end came first
        assert follower.engine.scope is scopes.for_index(2)
        assert follower.overlapped == 0
        await feed.server_chunk(answer(2))
        assert await scoped(follower.engine, scopes.outside)


async def test_calls_that_overlapped_are_named_for_the_failure(tmp_path: Path) -> None:
    async with following(tmp_path) as (feed, follower, _):
        assert follower.overlap_text() == ""
        await feed.client_chunk(call(1, "slow"))
        await feed.client_chunk(call(2, "list_layers"))
        assert follower.engine.scope is None  # either call's answers, first come first served
        assert follower.overlap_text() == (
            "1 tool call began while another was in flight (#2 list_layers): their GOLEM "
            "requests were served any call's recorded answers, first come first served"
        )


async def test_the_server_is_not_held_while_no_call_is_in_flight(tmp_path: Path) -> None:
    # Before, 256 MiB of server output with no newline was held whole, and copied once
    # the newline came (803 MiB of memory at its peak).
    chunk = b"x" * 65536
    async with following(tmp_path) as (feed, follower, scopes):
        tracemalloc.start()
        try:
            for _ in range(1024):  # 64 MiB, no call in flight
                await feed.server_chunk(chunk)
            await feed.client_chunk(call(2, "list_layers"))
            await feed.server_chunk(b'", "id": 2}\n')  # the end of the long line: no answer
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 4 * MiB, f"{peak / MiB:.0f} MiB held"
        assert follower.engine.scope is scopes.for_index(2)
        await feed.server_chunk(answer(2))
        assert await scoped(follower.engine, scopes.outside)


async def test_a_line_past_the_limit_is_skipped_not_held(tmp_path: Path) -> None:
    chunk = b"x" * 65536
    async with following(tmp_path, limit=MiB) as (feed, follower, scopes):
        await feed.client_chunk(call(2, "list_layers"))
        tracemalloc.start()
        try:
            await feed.server_chunk(b'{"jsonrpc": "2.0", "method": "log", "params": "')
            for _ in range(1024):  # 64 MiB of one line while a call is in flight
                await feed.server_chunk(chunk)
            await feed.server_chunk(b'"}\n')
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 4 * MiB, f"{peak / MiB:.0f} MiB held"
        assert follower.engine.scope is scopes.for_index(2)
        # The lines after it are read: the answer, in two chunks, ends the call.
        whole = answer(2)
        await feed.server_chunk(whole[:10])
        await feed.server_chunk(whole[10:])
        assert await scoped(follower.engine, scopes.outside)
