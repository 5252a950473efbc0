"""``golem-proxy proxy --tui``: the real proxy session feeding the app, a GOLEM client
talking to the headless plugin through it, and the recording flushed when the TUI quits."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
from pathlib import Path
from typing import Optional

import trio

from golem_core.profiles import GOLEM
from golem_proxy.commands._live_tui import live_source
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.session import SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.recording.format import read_recording
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import EventBuffer, TrioThreadSource
from golem_proxy.tui.compact import is_compact
from rhino_plugin import HeadlessPlugin, PluginOptions
from tests.support.sessions import SessionBuilder

from .helpers import box_and_missing_object, run, select, wait_for


def config_for(upstream: Address, record: Optional[Path] = None) -> SessionConfig:
    # Port 0: the status bar and the banner must show the port really bound.
    return SessionConfig(
        routes=[Route("main", Address("127.0.0.1", 0), upstream)],
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=1.0),
        record_path=str(record) if record is not None else None,
    )


def bound_port(app: GolemProxyApp) -> int:
    match = re.search(r"GOLEM_RHINO_PORT=(\d+)", app.banner.text)
    assert match is not None, app.banner.text
    return int(match.group(1))


async def until_stopped(source: TrioThreadSource) -> None:
    for _ in range(1000):  # leaving the app stops the session, which drains and flushes
        if source.done.is_set():
            return
        await asyncio.sleep(0.01)


def test_a_live_session_shows_its_addresses_and_is_recorded(tmp_path: Path) -> None:
    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=2))
    (host, port), _ = plugin.start()
    record = tmp_path / "live.jsonl"
    summaries: list[str] = []
    source = live_source(config_for(Address(host, port), record), summaries=summaries)
    errors: list[str] = []

    def client(port: int) -> None:
        errors.extend(box_and_missing_object(port))

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "live")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: "GOLEM_RHINO_PORT=" in app.banner.text)
            listen = bound_port(app)
            assert listen != 0
            assert f"main: 127.0.0.1:{listen} → {host}:{port}" in app.banner.text
            assert f"recording to {record}" in app.banner.text
            assert f"live on 127.0.0.1:{listen}" in app.status_bar.text
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
            assert statuses == ["ok", "ok", "APPLICATION_ERROR"]
        await until_stopped(source)

    try:
        run(body())
    finally:
        plugin.stop()
    assert source.done.is_set() and source.error is None
    assert errors == ["-32000"]
    recorded = read_recording(str(record))
    assert [e.method for e in recorded.exchanges()] == [
        "ping",
        "geometry.create_box",
        "scene.get_object_info",
    ]
    # What `proxy --tui` prints once the TUI is gone, as `proxy` does without it.
    assert summaries == [
        f"golem-proxy proxy: recorded 3 exchanges (1 error, 0 violations) to {record}"
    ]


def test_a_busy_port_is_shown_in_the_app_as_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        config = config_for(Address("127.0.0.1", 9))
        config.routes[0] = Route("main", Address("127.0.0.1", taken), Address("127.0.0.1", 9))
        source = live_source(config)

        async def body() -> None:
            app = GolemProxyApp(source, GOLEM, "live")
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_for(pilot, lambda: app.failed)
                text = app.banner.text
                assert text.startswith("✖ the proxy could not start: ")
                assert str(taken) in text
                assert "Trio nursery" not in text and "sub-exception" not in text
                assert "failed" in app.status_bar.text
                # Nothing runs any more: q quits without asking.
                await pilot.press("q")
                await wait_for(pilot, lambda: not app.is_running)

        run(body())
    assert source.error is not None


def test_q_asks_before_stopping_a_live_proxy_and_ctrl_c_quits_gracefully(
    tmp_path: Path,
) -> None:
    record = tmp_path / "quit.jsonl"
    source = live_source(config_for(Address("127.0.0.1", 9), record))

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "live")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: "GOLEM_RHINO_PORT=" in app.banner.text)
            await pilot.press("q")
            assert type(app.screen).__name__ == "ConfirmQuit"
            await pilot.press("n")
            assert type(app.screen).__name__ != "ConfirmQuit" and app.is_running
            assert not source.done.is_set()
            # From the filter box too: ctrl+c is not copy there, and it does not ask.
            await pilot.press("slash", "ctrl+c")
            await wait_for(pilot, lambda: not app.is_running)
        await until_stopped(source)

    run(body())
    assert source.done.is_set() and source.error is None
    assert read_recording(str(record)).header.profile == "golem"  # flushed and readable


def test_q_then_y_stops_the_proxy() -> None:
    source = live_source(config_for(Address("127.0.0.1", 9)))

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "live")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: "GOLEM_RHINO_PORT=" in app.banner.text)
            await pilot.press("q", "y")
            await wait_for(pilot, lambda: not app.is_running)
        await until_stopped(source)

    run(body())
    assert source.done.is_set()


def test_a_live_sessions_settled_flows_keep_compact_frames(tmp_path: Path) -> None:
    """Settled flows keep their frames compact, as a recording's are: every view reads what
    the tap parsed, and the recording (encoded before the TUI is handed a frame) holds it."""
    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=2))
    (host, port), _ = plugin.start()
    record = tmp_path / "live.jsonl"
    source = live_source(config_for(Address(host, port), record))
    assert source.route_profiles == {}

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "live")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: "GOLEM_RHINO_PORT=" in app.banner.text)
            worker = threading.Thread(target=box_and_missing_object, args=(bound_port(app),))
            worker.start()
            flows = app.model.flows
            await wait_for(
                pilot,
                lambda: len(flows) == 3 and not any(f.pending for f in flows),
            )
            worker.join()
            frames = [frame for flow in flows for frame in (flow.request, flow.response)]
            assert all(frame is not None and is_compact(frame) for frame in frames)
            box = flows[1]
            assert box.request is not None and box.request.message.params["width"] == 1
            assert [app.model.status(flow) for flow in flows] == ["ok", "ok", "APPLICATION_ERROR"]
            await select(pilot, 1)
            assert '"depth": 2' in app.detail.text()
            shown = [(f.request.message.obj, f.response.message.obj) for f in flows]  # type: ignore[union-attr]
        await until_stopped(source)
        recorded = read_recording(str(record))
        exchanges = recorded.exchanges()
        assert [(e.request.message.obj, e.response.message.obj) for e in exchanges] == shown

    try:
        run(body())
    finally:
        plugin.stop()


def test_a_request_waiting_when_the_live_session_ends_says_the_session_ended_and_why() -> None:
    s = SessionBuilder()
    s.open(1, 0.0)
    s.respond(s.request(1, "ping", {}, 0.1), 0.2, result={})
    s.request(1, "viewport.capture", {}, 0.3)
    go_on = threading.Event()

    async def serve(sink: EventBuffer) -> None:
        sink.push_many(s.events)
        await trio.to_thread.run_sync(go_on.wait, 10)
        raise RuntimeError("the relay broke")  # the session ends: no close comes for conn 1

    source = TrioThreadSource(serve, describe_error=lambda exc: f"the proxy stopped: {exc}")

    async def body() -> None:
        app = GolemProxyApp(source, GOLEM, "live")
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(pilot, lambda: len(app.model.flows) == 2)
            waiting = app.model.flows[1]
            await wait_for(pilot, lambda: app.detail.flow is waiting)
            assert app.model.status(waiting) == "pending"  # the session runs: it may come
            go_on.set()
            await wait_for(pilot, lambda: app.failed)
            assert app.model.status(waiting) == "pending (session ended)"
            await wait_for(pilot, lambda: "(none: the session ended first)" in app.detail.text())
            text = app.detail.text()
            assert (
                "no answer read before the session ended (the proxy stopped: the relay broke)"
                in text
            )

    run(body())
