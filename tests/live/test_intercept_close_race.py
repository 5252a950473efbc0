"""A decision typed on the intercept console in the very instant a held request's client closes
the connection: the close is being acted on (the request recorded as sent, then the client's
end of stream) when the decision arrives. The request is then lost, as a close makes it, and
the decision is not carried out after the end it follows: nothing of the connection is handed
to inspection behind its client's end of stream (which stopped decoding it: "receive_data()
after receive_eof()"), and the recording has the request once, its `lost` step, then the close."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
import trio

from golem_core.messages import Response
from golem_core.profiles import GOLEM
from golem_proxy.analysis.filters import parse_filter
from golem_proxy.events import (
    ConnectionClosed,
    FrameSeen,
    GapReason,
    InterceptStep,
    ObservationLost,
)
from golem_proxy.live.intercept import InterceptEngine
from golem_proxy.live.intercept_console import InterceptConsole
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.net.addresses import Address
from golem_proxy.recording.format import read_recording
from rhino_plugin import HeadlessPlugin, PluginOptions
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy
from tests.support.waiting import until

pytestmark = pytest.mark.trio

CREATE = r"~q & ~m ^scene\.create_layer$"
WATCHER = "._watch_client"
"""The end of the name of the task that, while a request is held, watches for its client
going away (intercept_holding.py)."""


@pytest.fixture
def plugin() -> Iterator[Address]:
    running = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=7))
    (host, port), _ = running.start()
    yield Address(host, port)
    running.stop()


class DecideAsTheCloseIsActedOn(trio.abc.Instrument):
    """Types ``command`` (``drop``, ``accept``, …, with the number filled in) on the console
    for a held request right after the step in which its watcher read the client's close and
    began ending the connection: before it recorded that end, with the decision's task woken
    behind it. A race with the client's close that otherwise hits this instant at random."""

    def __init__(self, console: InterceptConsole, commands: dict[int, str]) -> None:
        self.console = console
        self.commands = commands
        """What to type for each connection (by number), once."""
        self.answers: dict[int, str] = {}
        """What the console answered, by connection."""

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if not task.name.endswith(WATCHER):
            return
        frame = task.coro.cr_frame
        relay: Any = frame.f_locals.get("self") if frame is not None else None
        intercept = getattr(relay, "intercept", None)
        if intercept is None or intercept.gone is None:
            return  # still watching: the close was not read yet
        conn = intercept.conn
        command = self.commands.pop(conn, None)
        if command is None:
            return
        (held,) = [h for h in self.console.engine.held() if h.conn == conn]
        verb, _, rest = command.partition(" ")
        line = f"{verb} {held.id} {rest}".strip()
        self.answers[conn] = " ".join(str(text) for text in self.console.handle(line))


def _create(ident: str, name: str) -> bytes:
    return GOLEM.encode({"id": ident, "method": "scene.create_layer", "params": {"name": name}})


async def _layers(upstream: Address) -> list[str]:
    client = GolemClient(await connect(upstream))
    reply = await client.call({"id": "l1", "method": "scene.list_layers", "params": {}})
    await client.stream.aclose()
    assert isinstance(reply, Response)
    return [layer["full_path"] for layer in reply.result["layers"]]


async def test_a_decision_in_the_instant_its_client_closes_leaves_the_request_lost(
    nursery: trio.Nursery, plugin: Address, tmp_path: Path
) -> None:
    record = tmp_path / "race.jsonl"
    engine = InterceptEngine(GOLEM, parse_filter(CREATE))
    console = InterceptConsole(engine, editor=[])
    options = ProxyOptions(drain_timeout=0.5, intercept=engine)
    proxy = await start_proxy(nursery, plugin, options=options, record=str(record))
    edited = json.dumps({"id": "c1", "method": "scene.create_layer", "params": {"name": "E"}})
    decisions = ["accept", f"edit {edited}", 'answer {"result": {"made": true}}', "drop"]
    clients: dict[int, GolemClient] = {}
    for number in range(1, len(decisions) + 1):
        client = GolemClient(await connect(proxy.listen))
        await client.stream.send_all(_create("c1", f"Gone{number}"))
        (held,) = await until(lambda: engine.held()[len(clients) :])  # this client's request
        clients[held.conn] = client
    instrument = DecideAsTheCloseIsActedOn(console, dict(zip(clients, decisions)))
    trio.lowlevel.add_instrument(instrument)
    try:
        for client in clients.values():
            await client.stream.aclose()
        await until(lambda: not engine.held())
    finally:
        trio.lowlevel.remove_instrument(instrument)
    await stop_proxy(proxy)

    # Each decision was typed in time: the console took it (no "#N was lost").
    assert sorted(instrument.answers) == sorted(clients)
    for conn, answer in instrument.answers.items():
        assert answer.startswith("#") and "lost" not in answer, (conn, answer)
    layers = await _layers(plugin)
    assert not [n for n in range(1, len(decisions) + 1) if f"Gone{n}" in layers]
    events = read_recording(str(record)).events
    assert not [e for e in events if isinstance(e, ObservationLost)]
    for conn in clients:
        mine = [e for e in events if getattr(e, "conn", None) == conn]
        story = [_told(e) for e in mine if _told(e) is not None]
        assert story == [
            "intercept:held",
            "frame c2s scene.create_layer",
            "intercept:lost",
            "close: client closed while a frame was held",
        ], (conn, story)
        (lost,) = [e for e in mine if isinstance(e, InterceptStep) and e.fault == "intercept:lost"]
        assert "not sent: the client closed the connection while the request" in lost.detail
        assert lost.withheld


def _told(event: object) -> Optional[str]:
    """What one recorded event of a connection says, in short (None: not asserted on)."""
    if isinstance(event, FrameSeen):
        return f"frame {event.direction.value} {event.method}"
    if isinstance(event, InterceptStep):
        return event.fault
    if isinstance(event, ConnectionClosed):
        return f"close: {event.reason}"
    if isinstance(event, ObservationLost) and event.reason is GapReason.OBSERVER_FAILED:
        return "observer-failed"
    return None
