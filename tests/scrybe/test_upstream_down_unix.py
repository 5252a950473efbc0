"""A unix: route whose upstream is down stops listening (its socket file goes away, as the
app's own would) and listens again once the stand-in app is back on its path."""

from __future__ import annotations

import os

import pytest
import trio

from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.events import UpstreamStatus
from golem_proxy.net.addresses import Address
from golem_proxy.net.listeners import connect
from golem_proxy.testing.scrybe_server import AppServer
from tests.support.harness import start_proxy, stop_proxy

pytestmark = pytest.mark.trio

STATE = b'{"jsonrpc":"2.0","id":1,"method":"state"}\n'


async def test_a_unix_route_refuses_while_its_app_is_down(
    nursery: trio.Nursery, sock_dir: str
) -> None:
    app_path = os.path.join(sock_dir, "app.sock")
    listen = Address(path=os.path.join(sock_dir, "proxy.sock"))
    proxy = await start_proxy(
        nursery, Address(path=app_path), profile=JSONRPC_NDJSON, listen=listen
    )
    client = await connect(listen)
    with trio.fail_after(10):
        try:  # the first client is let in, then cut: no app behind
            await client.send_all(STATE)
            assert await client.receive_some(100) == b""
        except trio.BrokenResourceError:
            pass
    await client.aclose()
    with pytest.raises(FileNotFoundError):  # what a client finds when the app is not running
        await connect(listen)
    assert not os.path.exists(listen.path or "")

    server = AppServer(app_path)
    await nursery.start(server.serve)
    with trio.fail_after(10):
        while True:
            try:
                client = await connect(listen)
                break
            except OSError:
                await trio.sleep(0.02)
        await client.send_all(STATE)
        reply = b""
        while not reply.endswith(b"\n"):
            reply += await client.receive_some(1000)
    await client.aclose()
    assert b'"result"' in reply
    await stop_proxy(proxy)
    assert [change.up for change in proxy.of_type(UpstreamStatus)] == [False, True]
