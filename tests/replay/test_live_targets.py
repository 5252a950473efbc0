"""`mcp-verify --target`'s question to a live plugin after a failed check (`LiveTargets`):
only a refused connection says the plugin went away, and a run of failures asks once, so
the probes never fill the backlog of a plugin that serves one client at a time (the real
one listens with a backlog of 5 and keeps the server's connection for the whole session)."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import trio

from golem_proxy.net.addresses import Address
from golem_proxy.replay.live_targets import PROBES_AT_MOST, LiveTargets
from golem_proxy.replay.mcp_verify import McpCheck


def check(number: int, *, ok: bool) -> McpCheck:
    found = McpCheck(number, "list_layers", "tools/call", number)
    if not ok:
        found.problem = "differs"
    return found


Steps = Callable[[LiveTargets, socket.socket], Awaitable[None]]


def against_a_busy_plugin(calls: int, steps: Steps) -> LiveTargets:
    """``steps`` run on `LiveTargets` for ``calls`` tool calls against a listener that never
    accepts (its backlog fills as probes connect), which they may close (the plugin gone)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    host, port = listener.getsockname()

    async def main() -> LiveTargets:
        live = LiveTargets({"--target": Address(host, port)}, calls)
        await steps(live, listener)
        return live

    try:
        return trio.run(main)
    finally:
        listener.close()


def test_a_plugin_whose_backlog_is_full_is_not_taken_for_gone() -> None:
    async def steps(live: LiveTargets, listener: socket.socket) -> None:
        for number in range(40):  # failures, each after a match: as often as it may ask
            await live.after_check(check(number, ok=number % 2 == 0))

    assert against_a_busy_plugin(40, steps).lost is None


def test_a_run_asks_a_bounded_number_of_times() -> None:
    async def steps(live: LiveTargets, listener: socket.socket) -> None:
        for number in range(2 * PROBES_AT_MOST):
            await live.after_check(check(number, ok=number % 2 == 0))
        listener.close()  # gone, but asked as often as a run may
        assert not await live.after_check(check(98, ok=True))
        assert not await live.after_check(check(99, ok=False))

    assert against_a_busy_plugin(40, steps).lost is None


def test_a_run_of_failures_asks_once_and_a_refusal_is_the_plugin_gone() -> None:
    async def steps(live: LiveTargets, listener: socket.socket) -> None:
        assert not await live.after_check(check(1, ok=False))  # asked: it accepts
        listener.close()  # the plugin goes away
        assert not await live.after_check(check(2, ok=False))  # the same run: not asked
        assert not await live.after_check(check(3, ok=True))
        assert await live.after_check(check(4, ok=False))  # a new run: asked, refused

    lost = against_a_busy_plugin(10, steps).lost
    assert lost is not None and lost.number == 4
    assert "refused" in lost.reason and lost.not_played == 10 - 4
