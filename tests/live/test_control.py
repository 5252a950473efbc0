"""Driving a live session from another thread (as the terminal UI does): the session runs
under trio in a worker thread, the test calls `LiveControl` from its own."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.live.control import LiveControl, NotLive
from golem_proxy.live.intercept import Accept, Edit, InterceptEngine, InterceptError
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.session import ProxySession, SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.testing.client import GolemClient
from rhino_plugin import HeadlessPlugin, PluginOptions


def until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.005)
    raise AssertionError("timed out")


@pytest.fixture
def live(request: pytest.FixtureRequest) -> Iterator[tuple[LiveControl, Address]]:
    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=2))
    (host, port), _ = plugin.start()
    engine = InterceptEngine(GOLEM, None)
    redact = tuple(getattr(request, "param", ()))  # the session's --redact rules
    config = SessionConfig(
        routes=[Route("main", Address("127.0.0.1", 0), Address(host, port))],
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=0.2, intercept=engine, redact=redact),
    )
    control = LiveControl()
    bound: list[Address] = []
    stop = threading.Event()

    async def serve() -> None:
        session = ProxySession(config)
        control.attach(session)
        async with trio.open_nursery() as nursery:
            routes = await nursery.start(session.run)
            bound.append(routes[0].listen)
            while not stop.is_set():
                await trio.sleep(0.01)
            session.stop()
        control.detach()

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    until(lambda: bound)
    yield control, bound[0]
    stop.set()
    thread.join(10)
    plugin.stop()


def test_hold_edit_and_resend_from_another_thread(live: tuple[LiveControl, Address]) -> None:
    control, listen = live
    assert control.set_filter(r"~q & ~m ^scene\.create_layer$") == r"~q & ~m ^scene\.create_layer$"
    client = GolemClient(listen.host, listen.port)
    client.connect()  # its ping is not held
    results: list[Any] = []
    caller = threading.Thread(
        target=lambda: results.append(
            client.send_command(
                "scene.create_layer", {"name": "Walls", "color": {"r": 255, "g": 0, "b": 0}}
            )
        )
    )
    caller.start()
    held = until(control.held)
    assert [(h.method, h.route) for h in held] == [("scene.create_layer", "main")]
    request = json.loads(held[0].payload)
    with pytest.raises(InterceptError):
        control.decide(held[0].id, Edit(b"{nope"))
    request["params"]["color"] = {"r": 0, "g": 0, "b": 255}
    control.decide(held[0].id, Edit(json.dumps(request).encode()))
    caller.join(10)
    assert results and results[0]["full_path"] == "Walls"
    client.close()  # the plugin serves one client per channel: free it for the side connection
    resent = control.resend("main", held[0].payload)
    assert resent.request_id != request["id"]
    assert "failed to create layer 'Walls'" in resent.message.error.message  # type: ignore[union-attr]
    assert control.set_filter(None) == ""


def test_accept_all_and_not_live(live: tuple[LiveControl, Address]) -> None:
    control, listen = live
    control.set_filter("~q & ~m ^ping$")
    client = GolemClient(listen.host, listen.port, timeout=10)
    connecting = threading.Thread(target=client.connect)
    connecting.start()
    until(control.held)
    assert control.accept_all() == 1
    connecting.join(10)
    assert client.is_connected()
    client.close()
    with pytest.raises(InterceptError):
        control.decide(12345, Accept())
    stopped = LiveControl()
    with pytest.raises(NotLive):
        stopped.held()


@pytest.mark.parametrize("live", [("id",)], indirect=True)
def test_a_held_frame_is_listed_with_its_id_as_redaction_leaves_it(
    live: tuple[LiveControl, Address],
) -> None:
    """The panel shows what may be shown; an answer by hand still carries the real id."""
    control, listen = live
    control.set_filter("~q & ~m ^ping$")
    client = GolemClient(listen.host, listen.port, timeout=10)
    connecting = threading.Thread(target=client.connect)
    connecting.start()
    [held] = until(control.held)
    assert held.shown_id != held.message_id and "redacted" in str(held.shown_id)
    assert control.accept_all() == 1
    connecting.join(10)
    client.close()
