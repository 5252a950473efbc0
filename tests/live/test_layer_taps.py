"""Tool-call attribution in the observing process (``golem-proxy mcp --observer
child-process``): the MCP hop's chunks and the GOLEM route's go through one real pipe, in the
order the forwarding process handed them on, and the observing side's taps (`LayerTaps`)
share one tracker, made there: every GOLEM frame names the calls in flight as it crossed."""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import ConnectionClosed, ConnectionOpened, Direction, Event, FrameSeen
from golem_proxy.live.handoff_source import HandoffSource
from golem_proxy.live.hub import EventHub
from golem_proxy.live.layer_taps import LayerTaps
from golem_proxy.live.observer_link import ObserverLink
from golem_proxy.live.proxy_options import BoundRoute, ProxyOptions
from golem_proxy.net.addresses import Address, Route
from golem_proxy.recording.format import RouteInfo

MCP_CONN, GOLEM_CONN = 1, 2
LAYERS = (RouteInfo("mcp", "stdio", "server", "mcp"),)


def mcp_line(obj: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **obj}).encode() + b"\n"


def golem_frame(obj: dict[str, Any]) -> bytes:
    payload = json.dumps(obj).encode()
    return struct.pack("!I", len(payload)) + payload


def tool_call(ident: int, name: str, arguments: dict[str, Any]) -> bytes:
    params = {"name": name, "arguments": arguments}
    return mcp_line({"id": ident, "method": "tools/call", "params": params})


def observe(hand_on: list[tuple[str, Any]], layers: tuple[RouteInfo, ...] = LAYERS) -> list[Event]:
    """Hand ``hand_on`` (("data", (conn, direction, bytes)), ("event", event), or for a frame
    held on its way ("arrived", (conn, direction, t)) when it was read and ("held", (conn,
    direction, bytes, t)) when it goes on) through an `ObserverLink` into a real pipe, byte
    by byte for the data, then read it as the observing process does; returns what it
    published, in order."""
    read_fd, write_fd = os.pipe()
    clock = iter(range(1, 1_000_000))
    link = ObserverLink(write_fd, lambda: next(clock) / 1000)
    link.marks_arrivals = bool(layers)  # as the forwarding process sets it for an MCP hop
    for kind, item in hand_on:
        if kind == "event":
            link.publish(item)
            continue
        if kind == "arrived":
            link.arrived(*item)
            continue
        conn, direction, data, *held = item
        for at in range(len(data)):
            link.data(conn, direction, data[at : at + 1], held[0] if held else link.now())
    assert not link.writer.waiting  # it all fit in the pipe
    os.close(write_fd)
    published: list[Event] = []
    main = Route("main", Address("127.0.0.1", 0), Address("127.0.0.1", 9))

    async def run() -> None:
        hub = EventHub()
        hub.attach_sink(published.append)
        options = ProxyOptions()
        bound = [BoundRoute(main, Address("127.0.0.1", 1))]
        source = HandoffSource(hub, read_fd, bound, GOLEM, options, make_tap=LayerTaps(layers))
        with trio.fail_after(30):
            await source.serve()

    try:
        trio.run(run)
    finally:
        os.close(read_fd)
    return published


def opened(conn: int, route: str) -> tuple[str, Event]:
    return ("event", ConnectionOpened(conn=conn, route=route, client="c", upstream="u", t=0.0))


def test_every_golem_frame_names_the_call_in_flight_as_it_crossed() -> None:
    ping = golem_frame({"id": "a", "method": "ping", "params": {}})
    listed = golem_frame({"id": "b", "method": "scene.list_layers", "params": {}})
    events = observe(
        [
            opened(MCP_CONN, "mcp"),
            opened(GOLEM_CONN, "main"),
            ("data", (MCP_CONN, Direction.C2S, tool_call(1, "list_layers", {"deep": True}))),
            ("data", (GOLEM_CONN, Direction.C2S, ping)),
            ("data", (GOLEM_CONN, Direction.S2C, golem_frame({"id": "a", "result": {}}))),
            ("data", (MCP_CONN, Direction.S2C, mcp_line({"id": 1, "result": {"content": []}}))),
            # After the answer: caused by no call.
            ("data", (GOLEM_CONN, Direction.C2S, listed)),
            ("data", (MCP_CONN, Direction.C2S, tool_call(2, "create_layer", {"name": "Z"}))),
            ("event", ConnectionClosed(conn=MCP_CONN, route="mcp", reason="gone", t=1.0)),
            # The hop is closed: the call it left in flight is over.
            ("data", (GOLEM_CONN, Direction.S2C, golem_frame({"id": "b", "result": []}))),
        ]
    )
    frames = [e for e in events if isinstance(e, FrameSeen)]
    golem = [(f.direction, f.method, f.tool_calls) for f in frames if f.route == "main"]
    assert [(d, m, [c.tool for c in calls or ()]) for d, m, calls in golem] == [
        (Direction.C2S, "ping", ["list_layers"]),
        (Direction.S2C, None, ["list_layers"]),
        (Direction.C2S, "scene.list_layers", []),
        (Direction.S2C, None, []),
    ]
    [first] = golem[0][2] or ()
    assert (first.conn, first.id, first.tool) == (MCP_CONN, 1, "list_layers")
    # The MCP hop is decoded with its own profile and annotated with nothing.
    mcp = [f for f in frames if f.route == "mcp"]
    assert [f.method for f in mcp] == ["tools/call", None, "tools/call"]
    assert all(f.tool_calls is None for f in mcp)


def test_without_an_mcp_layer_no_frame_is_annotated() -> None:
    taps = LayerTaps(())
    assert taps.tracker is None
    events = observe(
        [
            opened(GOLEM_CONN, "main"),
            ("data", (GOLEM_CONN, Direction.C2S, golem_frame({"id": "a", "method": "ping"}))),
        ],
        layers=(),
    )
    [frame] = [e for e in events if isinstance(e, FrameSeen)]
    assert frame.tool_calls is None


def closed(conn: int, route: str, sent: int = 0) -> tuple[str, Event]:
    """A connection's close: refused by the upstream when nothing was ``sent``."""
    reason = "upstream 127.0.0.1:9 unreachable: Connection refused" if not sent else "gone"
    return (
        "event",
        ConnectionClosed(
            conn=conn, route=route, reason=reason, t=1.0, bytes_c2s=sent, abnormal=not sent
        ),
    )


def test_a_golem_connection_that_carried_nothing_names_the_calls_in_flight_at_its_open() -> None:
    """Its open is published at once, ahead of the tool call still to decode before it, yet
    noted behind it: the decision is the wire's."""
    events = observe(
        [
            opened(MCP_CONN, "mcp"),
            ("data", (MCP_CONN, Direction.C2S, tool_call(1, "list_layers", {}))),
            opened(GOLEM_CONN, "main"),
            # The call gave up before the connection ended: it still failed the call.
            ("data", (MCP_CONN, Direction.S2C, mcp_line({"id": 1, "result": {"content": []}}))),
            closed(GOLEM_CONN, "main"),
            opened(3, "main"),  # outside any call
            closed(3, "main"),
            ("data", (MCP_CONN, Direction.C2S, tool_call(2, "create_layer", {}))),
            opened(4, "main"),
            ("data", (4, Direction.C2S, golem_frame({"id": "a", "method": "ping"}))),
            closed(4, "main", sent=17),  # bytes crossed: its frames say it
            closed(MCP_CONN, "mcp"),
        ]
    )
    closes = {e.conn: e for e in events if isinstance(e, ConnectionClosed)}
    failed = closes[GOLEM_CONN].tool_calls
    assert failed is not None and [(c.id, c.tool) for c in failed] == [(1, "list_layers")]
    assert closes[3].tool_calls == ()
    assert closes[4].tool_calls is None
    assert closes[MCP_CONN].tool_calls is None  # the MCP hop's own close decides nothing


def test_a_held_golem_request_names_the_call_in_flight_when_it_arrived() -> None:
    """The forwarding process marks when it read a frame it may hold (``--fault delay``,
    ``--intercept``); the frame goes on later, stamped with that time, after the call that
    sent it was answered and another began: it names the call of its arrival, and its answer
    its request's, while a frame read afterwards names the call in flight then."""
    ping = golem_frame({"id": "a", "method": "ping", "params": {}})
    created = golem_frame({"id": "b", "method": "scene.create_layer", "params": {}})
    listed = golem_frame({"id": "c", "method": "scene.list_layers", "params": {}})
    events = observe(
        [
            opened(MCP_CONN, "mcp"),
            opened(GOLEM_CONN, "main"),
            ("data", (MCP_CONN, Direction.C2S, tool_call(1, "create_layer", {"name": "L"}))),
            ("data", (GOLEM_CONN, Direction.C2S, ping)),
            ("data", (GOLEM_CONN, Direction.S2C, golem_frame({"id": "a", "result": {}}))),
            ("arrived", (GOLEM_CONN, Direction.C2S, 0.5)),
            # The tool gave up waiting; the model's next call starts.
            ("data", (MCP_CONN, Direction.S2C, mcp_line({"id": 1, "error": {"code": 1}}))),
            ("data", (MCP_CONN, Direction.C2S, tool_call(2, "list_layers", {}))),
            ("held", (GOLEM_CONN, Direction.C2S, created, 0.5)),
            ("data", (GOLEM_CONN, Direction.S2C, golem_frame({"id": "b", "result": {}}))),
            ("data", (GOLEM_CONN, Direction.C2S, listed)),
        ]
    )
    golem = [e for e in events if isinstance(e, FrameSeen) and e.route == "main"]
    assert [(f.direction, [c.tool for c in f.tool_calls or ()]) for f in golem] == [
        (Direction.C2S, ["create_layer"]),
        (Direction.S2C, ["create_layer"]),
        (Direction.C2S, ["create_layer"]),
        (Direction.S2C, ["create_layer"]),
        (Direction.C2S, ["list_layers"]),
    ]
    assert golem[2].t == 0.5  # the time it arrived, as the relay records it


def test_requests_read_on_behind_a_held_one_name_the_calls_in_flight_when_each_arrived() -> None:
    """While the forwarding process holds a GOLEM request it reads on (read_on.py), marking
    each read: the held request and the one read behind it go on later, each stamped with its
    own read's time, and each names the call in flight when it arrived, though another call
    began between the two."""
    created = golem_frame({"id": "b", "method": "scene.create_layer", "params": {}})
    listed = golem_frame({"id": "c", "method": "scene.list_layers", "params": {}})
    events = observe(
        [
            opened(MCP_CONN, "mcp"),
            opened(GOLEM_CONN, "main"),
            ("data", (MCP_CONN, Direction.C2S, tool_call(1, "create_layer", {"name": "L"}))),
            ("arrived", (GOLEM_CONN, Direction.C2S, 0.5)),  # held on arrival
            ("data", (MCP_CONN, Direction.S2C, mcp_line({"id": 1, "error": {"code": 1}}))),
            ("data", (MCP_CONN, Direction.C2S, tool_call(2, "list_layers", {}))),
            ("arrived", (GOLEM_CONN, Direction.C2S, 0.6)),  # read on behind it
            ("held", (GOLEM_CONN, Direction.C2S, created, 0.5)),
            ("held", (GOLEM_CONN, Direction.C2S, listed, 0.6)),
        ]
    )
    golem = [e for e in events if isinstance(e, FrameSeen) and e.route == "main"]
    assert [(f.t, f.method, [c.tool for c in f.tool_calls or ()]) for f in golem] == [
        (0.5, "scene.create_layer", ["create_layer"]),
        (0.6, "scene.list_layers", ["list_layers"]),
    ]
