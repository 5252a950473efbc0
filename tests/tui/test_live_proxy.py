"""``golem-proxy proxy --tui``: the real proxy session feeding the app, a GOLEM client
talking to the headless plugin through it, and the recording flushed when the TUI quits."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

from golem_core.profiles import GOLEM
from golem_proxy.commands.proxy import live_source
from golem_proxy.live.relay import ProxyOptions
from golem_proxy.live.session import SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.tui.app import GolemProxyApp
from rhino_plugin import HeadlessPlugin, PluginOptions

from .helpers import run, wait_for


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_live_session_shows_up_and_is_recorded(tmp_path: Path) -> None:
    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=2, behaviour="extended"))
    (host, port), _ = plugin.start()
    record = tmp_path / "live.jsonl"
    listen = Address("127.0.0.1", free_port())
    config = SessionConfig(
        routes=[Route("main", listen, Address(host, port))],
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=1.0),
        record_path=str(record),
    )
    source = live_source(config)
    errors: list[str] = []

    def client(listen: Address) -> None:
        deadline = time.monotonic() + 10
        while True:  # the session starts in the TUI's worker thread: wait until it listens
            try:
                socket.create_connection((listen.host, listen.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        with GolemClient(listen.host, listen.port) as golem:
            golem.send_command(
                "geometry.create_box", {"corner": [0, 0, 0], "width": 1, "depth": 2, "height": 3}
            )
            try:
                golem.send_command("scene.get_object_info", {"guid": "missing"})
            except RhinoCommandError as exc:
                errors.append(str(exc.code))

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "live")
        async with app.run_test(size=(140, 40)) as pilot:
            worker = threading.Thread(target=client, args=(listen,))
            worker.start()
            await wait_for(
                pilot,
                lambda: (
                    len(app.model.flows) == 3
                    and all(flow.response is not None for flow in app.model.flows)
                    and not worker.is_alive()
                ),
            )
            methods = [flow.method for flow in app.model.flows]
            assert methods == ["ping", "geometry.create_box", "scene.get_object_info"]
            statuses = [flow.status(GOLEM) for flow in app.model.flows]
            assert statuses == ["ok", "ok", "OBJECT_NOT_FOUND"]
        for _ in range(1000):  # leaving the app stops the session, which drains and flushes
            if source.done.is_set():
                break
            await asyncio.sleep(0.01)

    try:
        run(body())
    finally:
        plugin.stop()
    assert source.done.is_set() and source.error is None
    assert errors == ["OBJECT_NOT_FOUND"]
    recorded = read_recording(str(record))
    assert [e.method for e in recorded.exchanges()] == [
        "ping",
        "geometry.create_box",
        "scene.get_object_info",
    ]
