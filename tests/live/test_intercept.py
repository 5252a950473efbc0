"""Intercepting frames through the real proxy, with the headless plugin as the upstream: hold,
accept, edit, drop, answer, the order behind a held frame, the timeout, and that a held frame
on one connection never holds up another."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, Optional, Union

import pytest
import trio
import trio.testing

from golem_core.messages import ErrorResponse, Response
from golem_core.profiles import GOLEM, JSONRPC_NDJSON
from golem_proxy.analysis.filters import parse_filter
from golem_proxy.analysis.flows import FlowTracker
from golem_proxy.events import (
    Direction,
    ExchangeCompleted,
    FaultInjected,
    FrameSeen,
    InterceptStep,
)
from golem_proxy.live.faults import FaultPlan, received_streams
from golem_proxy.live.intercept import (
    MAX_PENDING,
    Accept,
    Answer,
    Drop,
    Edit,
    HeldFrame,
    InterceptEngine,
    InterceptError,
    route_scope,
)
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.session import ProxySession, SessionConfig
from golem_proxy.net.addresses import Address, Route
from golem_proxy.net.listeners import close_abortively
from golem_proxy.recording.format import read_recording
from rhino_plugin import HeadlessPlugin, PluginOptions
from tests.support.harness import GolemClient, RunningProxy, connect, start_proxy, stop_proxy
from tests.support.waiting import until

pytestmark = pytest.mark.trio

CREATE = r"~q & ~m ^scene\.create_layer$"


@pytest.fixture
def plugin() -> Iterator[tuple[Address, Address]]:
    running = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=7))
    (host, port), (gh_host, gh_port) = running.start()
    yield Address(host, port), Address(gh_host, gh_port)
    running.stop()


async def one_held(engine: InterceptEngine) -> HeldFrame:
    held: list[HeldFrame] = await until(engine.held)
    assert len(held) == 1
    return held[0]


def request(ident: str, method: str, **params: Any) -> dict[str, Any]:
    return {"id": ident, "method": method, "params": params}


async def create_layer_held(client: GolemClient, engine: InterceptEngine, name: str) -> HeldFrame:
    """Send ``scene.create_layer`` (id c1) for a layer ``name``; return the one frame ``engine``
    then holds (the request, or its answer when the filter selects answers)."""
    await client.stream.send_all(GOLEM.encode(request("c1", "scene.create_layer", name=name)))
    return await one_held(engine)


def kinds(proxy: RunningProxy) -> list[str]:
    """The faults and intercept steps published, in order (``intercept:STEP`` for a step)."""
    return [event.fault for event in steps(proxy)]


def steps(proxy: RunningProxy) -> list[Union[FaultInjected, InterceptStep]]:
    return [e for e in proxy.events if isinstance(e, (FaultInjected, InterceptStep))]


async def start(
    nursery: trio.Nursery,
    upstream: Address,
    selecting: Optional[str],
    record: Optional[Path] = None,
    timeout: Optional[float] = None,
) -> tuple[InterceptEngine, RunningProxy, GolemClient]:
    """A proxy to ``upstream`` that holds the GOLEM frames the filter ``selecting`` selects (none
    when None) for up to ``timeout`` seconds, recording to ``record``; returns its intercept
    engine, the proxy, and a client connected to it."""
    filter_ = parse_filter(selecting) if selecting is not None else None
    engine = InterceptEngine(GOLEM, filter_, timeout=timeout)
    options = ProxyOptions(drain_timeout=0.5, intercept=engine)
    proxy = await start_proxy(
        nursery, upstream, options=options, record=str(record) if record else None
    )
    return engine, proxy, GolemClient(await connect(proxy.listen))


async def test_a_held_request_waits_until_accepted(
    nursery: trio.Nursery, plugin: tuple[Address, Address]
) -> None:
    engine, proxy, client = await start(nursery, plugin[0], CREATE)
    assert isinstance(await client.call(request("p1", "ping")), Response)  # not selected
    held = await create_layer_held(client, engine, "Held")
    assert (held.method, held.direction, held.message.id) == (
        "scene.create_layer",
        Direction.C2S,
        "c1",
    )
    await until(lambda: kinds(proxy) == ["intercept:held"])  # events arrive behind the relay
    engine.decide(held.id, Accept())
    reply = await client.receive()
    assert isinstance(reply, Response) and reply.result["full_path"] == "Held"
    assert engine.held() == []
    await client.stream.aclose()
    await stop_proxy(proxy)
    decided = steps(proxy)[-1]
    assert decided.fault == "intercept:accept" and decided.detail.startswith("accepted after ")
    assert decided.method == "scene.create_layer"
    flows = FlowTracker(GOLEM)
    for event in proxy.events:
        flows.apply(event)
    # The held event lands on no earlier flow; the decision lands on the request's flow.
    assert [(f.method, [x.fault for x in f.faults]) for f in flows.flows] == [
        ("ping", []),
        ("scene.create_layer", ["intercept:accept"]),
    ]


async def test_an_edited_request_reaches_the_plugin_and_the_recording_keeps_both(
    nursery: trio.Nursery, plugin: tuple[Address, Address], tmp_path: Path
) -> None:
    record = tmp_path / "edit.jsonl"
    engine, proxy, client = await start(nursery, plugin[0], CREATE, record)
    red, blue = {"r": 255, "g": 0, "b": 0, "a": 255}, {"r": 0, "g": 0, "b": 255, "a": 255}
    original = request("c1", "scene.create_layer", name="Walls", color=red)
    await client.stream.send_all(GOLEM.encode(original))
    held = await one_held(engine)
    with pytest.raises(InterceptError, match="not JSON"):
        engine.decide(held.id, Edit(b'{"id": "c1", "method": '))
    assert engine.held() == [held]  # a refused edit leaves the frame held
    edited = json.dumps(request("c1", "scene.create_layer", name="Walls", color=blue))
    engine.decide(held.id, Edit(edited.encode()))
    assert isinstance(await client.receive(), Response)
    layers = await client.call(request("l1", "scene.list_layers"))
    assert isinstance(layers, Response)
    walls = [layer for layer in layers.result["layers"] if layer["full_path"] == "Walls"]
    assert walls[0]["color"] == blue
    await client.stream.aclose()
    await stop_proxy(proxy)

    recording = read_recording(str(record))
    sent = [
        e for e in recording.events if isinstance(e, FrameSeen) and e.method == "scene.create_layer"
    ]
    assert [json.loads(e.payload) for e in sent] == [json.loads(edited)]
    fault = next(
        e for e in recording.events if isinstance(e, InterceptStep) and e.fault == "intercept:edit"
    )
    assert json.loads(fault.original) == original
    assert "the original is kept" in fault.detail
    line = next(
        json.loads(text) for text in record.read_text().splitlines() if '"step":"edit"' in text
    )
    assert json.loads(base64.b64decode(line["original"])) == original


async def test_a_dropped_request_never_reaches_the_plugin(
    nursery: trio.Nursery, plugin: tuple[Address, Address], tmp_path: Path
) -> None:
    record = tmp_path / "drop.jsonl"
    engine, proxy, client = await start(nursery, plugin[0], CREATE, record)
    engine.decide((await create_layer_held(client, engine, "Gone")).id, Drop())
    layers = await client.call(request("l1", "scene.list_layers"))  # answered: not "c1"
    assert isinstance(layers, Response) and layers.id == "l1"
    assert "Gone" not in json.dumps(layers.result)
    await client.stream.aclose()
    await stop_proxy(proxy)
    assert kinds(proxy) == ["intercept:held", "intercept:drop"]
    recording = read_recording(str(record))
    upstream_got = received_streams(recording.events, recording.profile)[(1, Direction.C2S)]
    assert b"Gone" not in upstream_got and b"scene.list_layers" in upstream_got


async def test_an_answered_request_gets_the_written_response_and_never_reaches_the_plugin(
    nursery: trio.Nursery, plugin: tuple[Address, Address], tmp_path: Path
) -> None:
    record = tmp_path / "answer.jsonl"
    engine, proxy, client = await start(nursery, plugin[0], CREATE, record)
    held = await create_layer_held(client, engine, "Never")
    # No id: it gets the request's.
    answer = {"result": None, "error": {"code": "OBJECT_NOT_FOUND", "message": "by hand"}}
    engine.decide(held.id, Answer(json.dumps(answer).encode()))
    reply = await client.receive()
    assert isinstance(reply, ErrorResponse)
    assert (reply.id, reply.error.code, reply.error.message) == (
        "c1",
        "OBJECT_NOT_FOUND",
        "by hand",
    )
    layers = await client.call(request("l1", "scene.list_layers"))
    assert isinstance(layers, Response) and "Never" not in json.dumps(layers.result)
    await client.stream.aclose()
    await stop_proxy(proxy)
    assert kinds(proxy) == ["intercept:held", "intercept:answer"]
    exchanges = read_recording(str(record)).exchanges()
    assert [(e.method, e.error_code) for e in exchanges] == [
        ("scene.create_layer", "OBJECT_NOT_FOUND"),
        ("scene.list_layers", None),
    ]


async def test_a_held_response_can_be_edited(
    nursery: trio.Nursery, plugin: tuple[Address, Address]
) -> None:
    engine, proxy, client = await start(nursery, plugin[0], "~s & ~m ^ping$")
    await client.stream.send_all(GOLEM.encode(request("p1", "ping")))
    held = await one_held(engine)
    assert (held.direction, held.method) == (Direction.S2C, "ping")
    with pytest.raises(InterceptError, match="only a request is answered"):
        engine.decide(held.id, Answer(b"{}"))
    engine.decide(held.id, Edit(b'{"id": "p1", "result": {"alive": false}, "error": null}'))
    reply = await client.receive()
    assert isinstance(reply, Response) and reply.result == {"alive": False}
    await client.stream.aclose()
    await stop_proxy(proxy)
    edit = steps(proxy)[-1]
    assert (edit.fault, edit.direction) == ("intercept:edit", Direction.S2C)
    assert json.loads(edit.original)["result"] == {"alive": True}


async def test_later_frames_wait_behind_a_held_one(
    nursery: trio.Nursery, plugin: tuple[Address, Address]
) -> None:
    engine, proxy, client = await start(nursery, plugin[0], "~q")
    first = GOLEM.encode(request("a", "scene.create_layer", name="First"))
    second = GOLEM.encode(request("b", "scene.create_layer", name="Second"))
    await client.stream.send_all(first + second)  # pipelined: one write
    held = await one_held(engine)
    await trio.testing.wait_all_tasks_blocked()
    assert [h.message.id for h in engine.held()] == ["a"]  # "b" is not even looked at yet
    engine.decide(held.id, Accept())
    behind = await until(lambda: [h for h in engine.held() if h.message.id == "b"])
    engine.decide(behind[0].id, Accept())
    replies = [await client.receive(), await client.receive()]
    assert [r.id for r in replies] == ["a", "b"]
    assert [r.result["layer_index"] for r in replies if isinstance(r, Response)] == [1, 2]
    await client.stream.aclose()
    await stop_proxy(proxy)


async def test_the_timeout_releases_a_held_frame_and_says_so(
    nursery: trio.Nursery, plugin: tuple[Address, Address]
) -> None:
    _, proxy, client = await start(nursery, plugin[0], CREATE, timeout=0.05)
    reply = await client.call(request("c1", "scene.create_layer", name="Late"))
    assert isinstance(reply, Response)
    await client.stream.aclose()
    await stop_proxy(proxy)
    released = steps(proxy)
    assert [e.fault for e in released] == ["intercept:held", "intercept:timeout"]
    assert "released after 0.05 s (--intercept-timeout)" in released[1].detail


async def test_a_frame_held_when_the_proxy_stops_is_reported_not_sent(
    nursery: trio.Nursery, plugin: tuple[Address, Address]
) -> None:
    engine, proxy, client = await start(nursery, plugin[0], CREATE)
    await create_layer_held(client, engine, "Lost")
    await stop_proxy(proxy)  # drains for 0.5 s, then cuts the connection
    assert kinds(proxy) == ["intercept:held", "intercept:lost"]
    assert "not sent: the connection ended while the request was held" in (steps(proxy)[1].detail)
    assert engine.held() == []
    sent = [e for e in proxy.of_type(FrameSeen) if e.direction is Direction.C2S]
    assert [e.method for e in sent] == ["scene.create_layer"]  # recorded, never forwarded
    await client.stream.aclose()


async def _layers(upstream: Address) -> list[str]:
    """The layers the plugin has: what it ran, asked directly."""
    client = GolemClient(await connect(upstream))
    reply = await client.call(request("l1", "scene.list_layers"))
    await client.stream.aclose()
    assert isinstance(reply, Response)
    return [layer["full_path"] for layer in reply.result["layers"]]


async def _lost_after(proxy: RunningProxy, engine: InterceptEngine, why: str) -> InterceptStep:
    """Wait for the held frame's `intercept:lost` event, saying ``why``; check that a decision
    on it is answered "#N was lost" and that nothing is held."""
    await until(lambda: kinds(proxy) == ["intercept:held", "intercept:lost"])
    lost = steps(proxy)[1]
    assert lost.detail.startswith(f"not sent: {why} while the "), lost.detail
    assert engine.held() == []
    number = int(steps(proxy)[0].detail.split("#")[1].split(":")[0])
    with pytest.raises(InterceptError, match=rf"^#{number} was lost: {why} while it was held$"):
        engine.decide(number, Accept())
    return lost


@pytest.mark.parametrize("how", ["reset", "close", "close behind a pipelined request"])
async def test_a_held_request_whose_client_goes_is_lost_at_once_never_sent(
    nursery: trio.Nursery, plugin: tuple[Address, Address], how: str
) -> None:
    engine, proxy, client = await start(nursery, plugin[0], CREATE)
    await create_layer_held(client, engine, "Gone")
    if how == "reset":
        close_abortively(client.stream)
        why = "the client reset the connection"
    else:
        if how != "close":  # bytes the pump has not read yet hide the close from a read
            await client.stream.send_all(GOLEM.encode(request("p1", "ping")))
        await client.stream.aclose()
        why = "the client closed the connection"
    lost = await _lost_after(proxy, engine, why)
    assert lost.method == "scene.create_layer" and lost.direction is Direction.C2S
    await stop_proxy(proxy)
    assert "Gone" not in await _layers(plugin[0])
    # Nothing reached the plugin (above), but the client sent it: its frame is recorded, as a
    # dropped request's is, and its flow is unanswered.
    sent = [e for e in proxy.of_type(FrameSeen) if e.direction is Direction.C2S]
    if how == "close behind a pipelined request":
        # Read on behind the held request (read_on.py), so recorded too, never delivered.
        assert [(e.method, e.undelivered) for e in sent[1:]] == [("ping", "connection ended")]
        sent = sent[:1]
    assert [(e.method, e.undelivered) for e in sent] == [("scene.create_layer", "")]
    assert sent[0].expects_answer


@pytest.mark.parametrize("how", ["reset", "close"])
async def test_a_held_response_whose_client_goes_is_lost(
    nursery: trio.Nursery, plugin: tuple[Address, Address], how: str
) -> None:
    engine, proxy, client = await start(nursery, plugin[0], r"~s & ~m ^scene\.create_layer$")
    held = await create_layer_held(client, engine, "Ran")
    assert held.direction is Direction.S2C
    if how == "reset":
        close_abortively(client.stream)
        why = "the client reset the connection"
    else:
        await client.stream.aclose()
        why = "the client closed the connection"
    lost = await _lost_after(proxy, engine, why)
    assert "while the response was held" in lost.detail
    await stop_proxy(proxy)
    # The plugin answered and the proxy read it: the answer is recorded, marked as one its
    # client never got, and its flow is answered (not "unanswered") and says so.
    answers = [e for e in proxy.of_type(FrameSeen) if e.direction is Direction.S2C]
    assert [isinstance(e.message, Response) for e in answers] == [True]
    assert answers[0].undelivered in ("client gone", "connection ended")
    (exchange,) = proxy.of_type(ExchangeCompleted)
    assert exchange.method == "scene.create_layer" and exchange.response is answers[0]
    assert exchange.undelivered == answers[0].undelivered


async def test_the_filter_can_be_set_and_cleared_at_run_time(
    nursery: trio.Nursery, plugin: tuple[Address, Address]
) -> None:
    engine, proxy, client = await start(nursery, plugin[0], None)
    assert isinstance(await client.call(request("p1", "ping")), Response)
    engine.set_filter("~m ^ping$ & ~q")
    await client.stream.send_all(GOLEM.encode(request("p2", "ping")))
    held = await one_held(engine)
    engine.clear_filter()
    engine.decide(held.id, Accept())
    assert (await client.receive()).id == "p2"
    assert isinstance(await client.call(request("p3", "ping")), Response)  # not held any more
    with pytest.raises(InterceptError, match="no frame #99 is held"):
        engine.decide(99, Accept())
    await client.stream.aclose()
    await stop_proxy(proxy)
    assert kinds(proxy) == ["intercept:held", "intercept:accept"]


async def test_accept_all(nursery: trio.Nursery, plugin: tuple[Address, Address]) -> None:
    main, gh = plugin
    engine = InterceptEngine(GOLEM, parse_filter("~q & ~m ^ping$"))
    session, listens = await start_two_routes(nursery, main, gh, engine)
    one = GolemClient(await connect(listens[0]))
    two = GolemClient(await connect(listens[1]))
    await one.stream.send_all(GOLEM.encode(request("m", "ping")))
    await two.stream.send_all(GOLEM.encode(request("g", "ping")))
    await until(lambda: len(engine.held()) == 2)
    assert engine.accept_all() == 2
    assert [(await one.receive()).id, (await two.receive()).id] == ["m", "g"]
    await one.stream.aclose()
    await two.stream.aclose()
    session.stop()
    await session.finished.wait()


async def start_two_routes(
    nursery: trio.Nursery, main: Address, gh: Address, engine: InterceptEngine
) -> tuple[ProxySession, list[Address]]:
    config = SessionConfig(
        routes=[
            Route("main", Address("127.0.0.1", 0), main),
            Route("gh", Address("127.0.0.1", 0), gh),
        ],
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=0.5, intercept=engine),
    )
    session = ProxySession(config)
    bound = await nursery.start(session.run)
    return session, [b.listen for b in bound]


async def test_another_connection_goes_on_while_a_frame_is_held(
    nursery: trio.Nursery, plugin: tuple[Address, Address]
) -> None:
    """Measured: the round trips of a second connection (the Grasshopper channel) while a
    request of the first one is held. They all complete, and the held frame is still held
    when they have; their latencies are printed, not asserted on (no wall-clock thresholds)."""
    main, gh = plugin
    engine = InterceptEngine(GOLEM, parse_filter("~route main & " + CREATE))
    session, listens = await start_two_routes(nursery, main, gh, engine)
    held_client = GolemClient(await connect(listens[0]))
    await held_client.stream.send_all(GOLEM.encode(request("h", "scene.create_layer", name="Held")))
    held = await one_held(engine)
    other = GolemClient(await connect(listens[1]))
    latencies = []
    for number in range(50):
        started = trio.current_time()
        reply = await other.call(request(f"g{number}", "ping"))
        latencies.append(trio.current_time() - started)
        assert reply.id == f"g{number}"  # answered (the Grasshopper channel has no ping)
    assert engine.held() == [held]  # all 50 round trips went by while it was held
    latencies.sort()
    print(
        f"other connection while a frame is held: {len(latencies)} round trips, "
        f"median {latencies[len(latencies) // 2] * 1000:.2f} ms, max {latencies[-1] * 1000:.2f} ms"
    )
    engine.decide(held.id, Accept())
    assert isinstance(await held_client.receive(), Response)
    await held_client.stream.aclose()
    await other.stream.aclose()
    session.stop()
    await session.finished.wait()


async def test_route_scope_finds_the_routes_a_filter_can_select() -> None:
    assert route_scope(None) == frozenset()
    assert route_scope(parse_filter("~m ping")) is None
    assert route_scope(parse_filter("~route gh & ~m ping")) == {"gh"}
    assert route_scope(parse_filter("~route gh | ~route main")) == {"gh", "main"}
    assert route_scope(parse_filter("~route gh | ~m ping")) is None
    assert route_scope(parse_filter("!~route gh")) is None


async def test_an_edit_over_several_lines_is_sent_as_one_line_with_ndjson(
    nursery: trio.Nursery,
) -> None:
    received: list[bytes] = []

    async def answer(stream: trio.SocketStream) -> None:
        buffer = b""
        async for chunk in stream:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                received.append(line)
                ident = json.loads(line)["id"]
                reply = {"jsonrpc": "2.0", "id": ident, "result": {"ok": True}}
                await stream.send_all(json.dumps(reply).encode() + b"\n")

    listeners = await nursery.start(partial(trio.serve_tcp, answer, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    engine = InterceptEngine(JSONRPC_NDJSON, parse_filter("~q"))
    proxy = await start_proxy(
        nursery,
        Address("127.0.0.1", port),
        profile=JSONRPC_NDJSON,
        options=ProxyOptions(drain_timeout=0.5, intercept=engine),
    )
    client = GolemClient(await connect(proxy.listen), JSONRPC_NDJSON)
    await client.stream.send_all(b'{"jsonrpc": "2.0", "id": 1, "method": "read", "params": {}}\n')
    held = await one_held(engine)
    pretty = (
        b'{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "method": "read",\n  "params": {"path": "b"}\n}'
    )
    engine.decide(held.id, Edit(pretty))
    reply = await client.receive()
    assert isinstance(reply, Response) and reply.id == 1
    assert [json.loads(line) for line in received] == [json.loads(pretty)]
    assert b"\n" not in received[0]
    await client.stream.aclose()
    await stop_proxy(proxy)


async def test_faults_act_on_what_the_user_decided(
    nursery: trio.Nursery, plugin: tuple[Address, Address]
) -> None:
    """Intercept and faults compose: the accepted request then meets its ``error`` fault."""
    engine = InterceptEngine(GOLEM, parse_filter(r"~q & ~m ^viewport\."))
    faults = FaultPlan.parse(["error:code=TIMEOUT,message=busy,method=viewport.*"], 1)
    options = ProxyOptions(drain_timeout=0.5, intercept=engine, faults=faults)
    proxy = await start_proxy(nursery, plugin[0], options=options)
    client = GolemClient(await connect(proxy.listen))
    await client.stream.send_all(GOLEM.encode(request("v1", "viewport.capture")))
    engine.decide((await one_held(engine)).id, Accept())
    reply = await client.receive()
    assert isinstance(reply, ErrorResponse) and reply.error.code == "TIMEOUT"
    await client.stream.aclose()
    await stop_proxy(proxy)
    assert kinds(proxy) == ["intercept:held", "error", "intercept:accept"]


async def test_what_a_connection_keeps_to_pair_responses_is_bounded() -> None:
    engine = InterceptEngine(GOLEM, parse_filter("~s & ~m ^never$"))
    conn = engine.connection(1, "main")
    for number in range(MAX_PENDING + 500):
        payload = GOLEM.encode_payload(request(f"r{number}", "ping"))
        assert await conn.hold(Direction.C2S, payload, len(payload) + 4, 0.0, _no_events) is None
    assert len(conn._requests) == MAX_PENDING


def _no_events(held: HeldFrame, kind: str, detail: str) -> None:
    raise AssertionError(f"nothing is held here, yet: {kind} {detail}")
