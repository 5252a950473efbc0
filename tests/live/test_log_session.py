"""The live log inside a proxy session: whatever happens to the log's output, the session goes
on forwarding."""

from __future__ import annotations

import io
import os

import pytest
import trio
from rich.console import Console

from golem_core.messages import Response
from golem_core.profiles import GOLEM
from golem_proxy.live.log_output import TerminalOutput
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.session import ProxySession, SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.testing.upstreams import GolemUpstream
from tests.support.harness import GolemClient, connect

pytestmark = pytest.mark.trio


class BurningFile(io.StringIO):
    """A console file whose every write fails (a terminal that went wrong in a way we did not
    foresee)."""

    def write(self, text: str) -> int:
        raise RuntimeError("the terminal is on fire")


async def start_session(nursery: trio.Nursery, console: Console) -> tuple[ProxySession, Address]:
    upstream = GolemUpstream()
    address = await nursery.start(upstream.serve)
    config = SessionConfig(
        routes=[Route("main", Address("127.0.0.1", 0), address)],
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=0.5),
        console=console,
    )
    session = ProxySession(config)
    bound = await nursery.start(session.run)
    return session, bound[0].listen


async def echo_on_new_connections(listen: Address, count: int) -> None:
    for number in range(count):
        stream = await connect(listen)
        async with stream:
            reply = await GolemClient(stream).call(
                {"id": f"c{number}", "method": "echo", "params": {"n": number}}
            )
        assert isinstance(reply, Response) and reply.result == {"n": number}


async def test_a_log_whose_output_raises_costs_lines_not_the_session(
    nursery: trio.Nursery,
) -> None:
    session, listen = await start_session(nursery, Console(file=BurningFile()))
    await echo_on_new_connections(listen, 3)
    session.stop()
    with trio.fail_after(10):
        await session.finished.wait()


async def test_a_closed_output_unsubscribes_the_log(nursery: trio.Nursery) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as stream:
        output = TerminalOutput(stream)
        session, listen = await start_session(nursery, output.console())
        await echo_on_new_connections(listen, 3)
        with trio.fail_after(10):
            while "log" in [s.name for s in session.hub._subscriptions]:
                await echo_on_new_connections(listen, 1)
        assert output.closed
        await echo_on_new_connections(listen, 2)
        session.stop()
        with trio.fail_after(10):
            await session.finished.wait()
