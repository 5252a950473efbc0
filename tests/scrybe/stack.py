"""The stand-in app (or a misbehaving server) behind a proxy, all on Unix sockets, inside a
test's nursery; and the contract client run off the trio thread."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

import trio

from golem_core.profiles import JSONRPC_NDJSON
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.net.addresses import Address
from golem_proxy.testing import scrybe_client as contract_client
from golem_proxy.testing.scrybe_app import ScrybeApp
from golem_proxy.testing.scrybe_server import AppServer
from tests.support.harness import RunningProxy, start_proxy, stop_proxy


@dataclass
class Stack:
    server: AppServer
    proxy: RunningProxy

    @property
    def path(self) -> str:
        """The proxy's socket: what a client's SCRYBE_SOCK would name."""
        assert self.proxy.listen.path is not None
        return self.proxy.listen.path

    async def stop(self) -> None:
        """Stop the proxy and wait until every event reached the test's list."""
        await stop_proxy(self.proxy)

    async def call(
        self, method: str, params: Optional[dict[str, Any]] = None
    ) -> contract_client.Outcome:
        with trio.fail_after(30):
            return await trio.to_thread.run_sync(contract_client.call, self.path, method, params)

    async def call_raw(self, line: bytes) -> contract_client.Outcome:
        with trio.fail_after(30):
            return await trio.to_thread.run_sync(contract_client.call_raw, self.path, line)

    async def read_all(self, line: bytes) -> bytes:
        with trio.fail_after(30):
            return await trio.to_thread.run_sync(contract_client.read_all, self.path, line)


async def start_server(
    nursery: trio.Nursery,
    sock_dir: str,
    app: Optional[ScrybeApp] = None,
    raw_reply: Optional[bytes] = None,
    name: str = "app.sock",
) -> AppServer:
    server = AppServer(os.path.join(sock_dir, name), app or ScrybeApp(), raw_reply)
    await nursery.start(server.serve)
    return server


async def start_stack(
    nursery: trio.Nursery,
    sock_dir: str,
    *,
    app: Optional[ScrybeApp] = None,
    raw_reply: Optional[bytes] = None,
    record: Optional[str] = None,
    options: Optional[ProxyOptions] = None,
) -> Stack:
    server = await start_server(nursery, sock_dir, app, raw_reply)
    proxy = await start_proxy(
        nursery,
        Address(path=server.path),
        profile=JSONRPC_NDJSON,
        listen=Address(path=os.path.join(sock_dir, "proxy.sock")),
        record=record,
        options=options,
    )
    return Stack(server, proxy)
