"""Shared helpers for the TUI tests: sources that stay under test control, and waits that
poll the app between pilot pauses (bounded, never open-ended)."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Callable, Optional, TypeVar

from textual.pilot import Pilot

from golem_core.profiles import GOLEM
from golem_proxy.analysis.filters import Filter
from golem_proxy.commands._live_tui import live_source
from golem_proxy.events import Event
from golem_proxy.live.control import LiveControl
from golem_proxy.live.intercept import InterceptEngine
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.session import SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.tui.app import GolemProxyApp
from golem_proxy.tui.bridge import EventBuffer, TrioThreadSource
from golem_proxy.tui.payloads import PayloadBudget
from golem_proxy.tui.sources import RecordingSource

T = TypeVar("T")
TIMEOUT = 20.0


def run(coro: Coroutine[Any, Any, T], timeout: float = TIMEOUT) -> T:
    """Run an async test body (Textual runs on asyncio; there is no asyncio plugin here),
    failing it after ``timeout`` seconds."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], limit: int = 2000) -> None:
    """Let the app process messages until ``condition()`` holds (at most ``limit`` rounds)."""
    for _ in range(limit):
        if condition():
            return
        await pilot.pause(0.005)
    raise AssertionError("condition not reached")


async def loaded(pilot: Pilot[Any], limit: int = 2000) -> None:
    """Wait until the app's source has finished and every event is folded in."""
    app = pilot.app
    assert isinstance(app, GolemProxyApp)
    await wait_for(pilot, lambda: app.source_done, limit)
    await pilot.pause()


async def select(pilot: Pilot[Any], position: int, limit: int = 2000) -> None:
    """Put the cursor on view ``position`` and wait until the detail pane shows that flow
    whole: of moves in quick succession, a large payload is drawn only once the cursor
    rests, so one pause is not enough."""
    app = pilot.app
    assert isinstance(app, GolemProxyApp)
    app.table.select_position(position)
    flow = app.model.flows[app.model.view[position]]
    await wait_for(pilot, lambda: app.detail.flow is flow and app.detail.complete, limit)


@asynccontextmanager
async def recording_app(
    path: str, size: tuple[int, int] = (160, 45), **options: Any
) -> AsyncIterator[tuple[GolemProxyApp, Pilot[None]]]:
    """The app on the recording at ``path`` as `golem-proxy tui` opens it (its header kept for
    `w`), under the pilot at ``size``, once every event is loaded; ``options`` go to the app
    (``resend_target``, ``filter_text``)."""
    source = RecordingSource.open(path)
    app = GolemProxyApp(source, source.profile, "test", header=source.header, **options)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot)
        yield app, pilot


@asynccontextmanager
async def live_app(
    source: TrioThreadSource, control: LiveControl, payload_budget: Optional[PayloadBudget] = None
) -> AsyncIterator[tuple[GolemProxyApp, Pilot[None], int]]:
    """The app on a live session (see `intercepting_source`) under the pilot, once the session
    listens; with the loopback port clients connect to (and ``payload_budget``, when given)."""
    app = GolemProxyApp(source, GOLEM, "live", control=control, payload_budget=payload_budget)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "live on 127.0.0.1:" in app.status_bar.text)
        listen = int(app.status_bar.text.split("live on 127.0.0.1:")[1].split()[0])
        yield app, pilot, listen


class ManualSource:
    """A live source the test drives: it pushes ``events`` at start, then whatever the test
    pushes into ``app.buffer`` itself, until stopped."""

    live = True
    serving = False
    buffer_limit: Optional[int] = None
    description = "test"

    def __init__(self, events: Optional[list[Event]] = None) -> None:
        self.events = events or []
        self.stopped = threading.Event()

    def run(self, sink: EventBuffer) -> None:
        sink.push_many(self.events)
        self.stopped.wait(TIMEOUT)

    def stop(self) -> None:
        self.stopped.set()


def intercepting_source(
    upstream: Address, hold: Optional[Filter] = None
) -> tuple[TrioThreadSource, LiveControl, InterceptEngine]:
    """A live GOLEM proxy session on a free loopback port to ``upstream``, holding what
    ``hold`` matches, as the TUI's source; with the control the TUI reaches it through and
    its intercept engine."""
    engine = InterceptEngine(GOLEM, hold)
    config = SessionConfig(
        routes=[Route("main", Address("127.0.0.1", 0), upstream)],
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=1.0, intercept=engine),
    )
    control = LiveControl()
    return live_source(config, control), control, engine


def position_of(app: GolemProxyApp, method: str) -> int:
    """The view position of the first flow of ``method``."""
    return next(i for i, n in enumerate(app.model.view) if app.model.flows[n].method == method)


async def select_method(pilot: Pilot[Any], method: str) -> None:
    """Put the cursor on the first flow of ``method`` and wait until the detail shows it."""
    app = pilot.app
    assert isinstance(app, GolemProxyApp)
    await select(pilot, position_of(app, method))


def box_and_missing_object(port: int) -> list[str]:
    """Two calls through the proxy on 127.0.0.1:``port``: one that succeeds, one the plugin
    answers with an error; returns the error codes that came back (``["-32000"]``)."""
    errors = []
    with GolemClient("127.0.0.1", port) as golem:
        golem.send_command(
            "geometry.create_box", {"corner": [0, 0, 0], "width": 1, "depth": 2, "height": 3}
        )
        try:
            golem.send_command("scene.get_object_info", {"guid": "missing"})
        except RhinoCommandError as exc:
            errors.append(str(exc.code))
    return errors


@contextmanager
def large_answer_upstream(size: int) -> Iterator[Address]:
    """An upstream on loopback that answers every GOLEM call on every connection, one at a
    time, with a result string of ``size`` bytes of ``C``."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            while True:
                header = conn.recv(4, socket.MSG_WAITALL)
                if len(header) < 4:
                    return
                (length,) = struct.unpack("!I", header)
                request = conn.recv(length, socket.MSG_WAITALL)
                ident = request.split(b'"id":', 1)[1].split(b",", 1)[0]
                body = b'{"id":' + ident + b',"result":"' + b"C" * size + b'","error":null}'
                conn.sendall(struct.pack("!I", len(body)) + body)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.settimeout(None)
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield Address(*server.getsockname())
    finally:
        stop.set()
        thread.join(5)
        server.close()
