"""The trio replay server: timing on a MockClock over memory streams, real loopback and Unix
sockets, malformed and oversized input, forwarding with --record-new."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Callable

import pytest
import trio
import trio.testing

from golem_core.dispatcher import Dispatcher
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile
from golem_proxy.net.addresses import Address
from golem_proxy.net.framed_stream import FramedStream, FramingFailure
from golem_proxy.net.listeners import connect, open_listener
from golem_proxy.recording.format import read_recording
from golem_proxy.replay import server as replay_server
from golem_proxy.replay.engine import ReplayEngine
from golem_proxy.replay.index import ReplayIndex, load_exchanges
from golem_proxy.replay.matching import IgnoreRules, Keyer, MatchMode
from golem_proxy.replay.server import ReplayServer
from golem_proxy.replay.setup import open_record_new
from tests.support.traces import TraceBuilder

from .traces import BOX, modelling_session

pytestmark = pytest.mark.trio

BOX_PARAMS = {"corner": [0, 0, 0], "width": 40, "depth": 10, "height": 30}
LOOPBACK = Address("127.0.0.1", 0)


def make_engine(path: Path, **kwargs: Any) -> ReplayEngine:
    index = ReplayIndex(load_exchanges(str(path)), Keyer(MatchMode.METHOD_PARAMS, IgnoreRules()))
    return ReplayEngine(index, **kwargs)


class Peer:
    """A client end of any trio stream, speaking one profile."""

    def __init__(self, stream: trio.abc.Stream, profile: Profile = GOLEM) -> None:
        self.stream = stream
        self.profile = profile
        self.framed = FramedStream(stream, profile)
        self.next_id = 1

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        ident: Any = f"00000000-0000-4000-8000-{self.next_id:012d}"
        if self.profile is JSONRPC_NDJSON:
            ident = self.next_id
        self.next_id += 1
        obj: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if self.profile is JSONRPC_NDJSON:
            obj["jsonrpc"] = "2.0"
        await self.framed.send(self.profile.encode(obj))
        answer = await self.framed.receive_answer(self.framed.answers.key_of(obj))
        reply: dict[str, Any] = answer.message.obj
        assert reply["id"] == ident
        return reply

    async def read(self) -> Any:
        """The next frame's JSON, or None when the server closed the connection."""
        try:
            frame = await self.framed.receive_frame()
        except (EOFError, FramingFailure):
            return None
        return json.loads(frame.payload)


async def timed_box(engine: ReplayEngine, sleep: Any = trio.sleep) -> float:
    server = ReplayServer(engine, {}, sleep=sleep)
    client_end, server_end = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve_connection, "main", server_end)
        peer = Peer(client_end)
        await peer.call("ping")
        started = trio.current_time()
        reply = await peer.call("geometry.create_box", BOX_PARAMS)
        elapsed = trio.current_time() - started
        assert reply["result"]["guid"] == BOX
        await client_end.aclose()
    return elapsed


async def test_original_timing_waits_the_recorded_latency(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    session = modelling_session(tmp_path / "s.jsonl")
    assert await timed_box(make_engine(session, timing=1.0)) == pytest.approx(0.25)
    assert await timed_box(make_engine(session, timing=4.0)) == pytest.approx(1.0)
    assert await timed_box(make_engine(session)) == 0.0


async def test_the_sleep_function_is_injectable(tmp_path: Path) -> None:
    delays: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        delays.append(seconds)

    session = modelling_session(tmp_path / "s.jsonl")
    await timed_box(make_engine(session, timing=0.5), sleep=fake_sleep)
    assert delays == [pytest.approx(0.0005), pytest.approx(0.125)]  # ping, then the box


async def test_loopback_session_malformed_and_oversized(tmp_path: Path) -> None:
    engine = make_engine(modelling_session(tmp_path / "s.jsonl"))
    server = ReplayServer(engine, {"main": LOOPBACK, "gh": LOOPBACK})
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(server.run)
            assert bound["main"].port != 0 and bound["gh"].port != bound["main"].port
            gh = Peer(await connect(bound["gh"]))
            assert (await gh.call("grasshopper.list_components"))["result"] == {"components": []}
            main = Peer(await connect(bound["main"]))
            await main.stream.send_all(GOLEM.frame_payload(b'{"id": "x", "method": '))
            bad = await main.read()
            assert bad["id"] is None and bad["error"]["code"] == -32603
            assert (await main.call("geometry.create_box", BOX_PARAMS))["result"]["guid"] == BOX
            await main.stream.send_all(struct.pack("!I", 64 * 1024 * 1024 + 1) + b"{")
            assert await main.read() is None  # oversized header: the connection is closed
            nursery.cancel_scope.cancel()
    assert engine.report.served == 2 and engine.report.malformed == 1


async def test_jsonrpc_over_a_unix_socket_answers_jsonrpc_errors(tmp_path: Path) -> None:
    path = tmp_path / "scrybe.jsonl"
    with TraceBuilder.create(str(path), "jsonrpc-ndjson") as trace:
        trace.call("open", {"path": "a.md"}, {"tab_id": 1, "reloaded": False})
        trace.call("read", {"path": "a.md"}, {"path": "a.md", "content": "# A", "is_dirty": False})
    engine = make_engine(path)
    socket_path = tmp_path / "sock"
    server = ReplayServer(engine, {"main": Address(path=str(socket_path))})
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(server.run)
            assert (socket_path.stat().st_mode & 0o777) == 0o600
            peer = Peer(await connect(bound["main"]), JSONRPC_NDJSON)
            assert (await peer.call("open", {"path": "a.md"}))["result"]["tab_id"] == 1
            miss = await peer.call("read", {"path": "b.md"})
            assert miss["jsonrpc"] == "2.0" and miss["error"]["code"] == -32601
            assert "params.path ('a.md' vs 'b.md')" in miss["error"]["message"]
            await peer.stream.send_all(b"{nope\n")
            parse_error = await peer.read()
            assert parse_error["id"] == 0 and parse_error["error"]["code"] == -32700
            nursery.cancel_scope.cancel()
    assert not socket_path.exists()  # cancelled: the listeners closed, the socket file gone


async def golem_plugin(
    reply: Callable[[bytes], bytes], task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """A live plugin on loopback that sends ``reply(payload)`` for each frame it reads."""
    listener = await open_listener(LOOPBACK)
    task_status.started(listener.address)

    async def handle(stream: trio.SocketStream) -> None:
        decoder = GOLEM.new_decoder()
        async for chunk in stream:
            for event in decoder.feed(bytes(chunk)):
                await stream.send_all(reply(event.payload))  # type: ignore[union-attr]

    await trio.serve_listeners(handle, [listener.listener])


async def live_plugin(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """A tiny live plugin on the golem_core dispatcher."""
    dispatcher = Dispatcher()
    dispatcher.register("scene.delete_layer", lambda params: {"deleted": params["name"]})

    def respond(payload: bytes) -> bytes:
        reply = dispatcher.respond(payload)
        assert reply is not None
        return reply

    await golem_plugin(respond, task_status)


async def test_forward_misses_and_record_them(tmp_path: Path) -> None:
    engine = make_engine(modelling_session(tmp_path / "s.jsonl"), on_miss="forward")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            upstream = await nursery.start(live_plugin)
            new = tmp_path / "new.jsonl"
            recorder = open_record_new(str(new), engine, {"main": upstream})
            server = ReplayServer(
                engine, {"main": LOOPBACK}, upstreams={"main": upstream}, record_new=recorder
            )
            bound = await nursery.start(server.run)
            peer = Peer(await connect(bound["main"]))
            assert (await peer.call("geometry.create_box", BOX_PARAMS))["result"]["guid"] == BOX
            forwarded = await peer.call("scene.delete_layer", {"name": "Walls"})
            assert forwarded["result"] == {"deleted": "Walls"}
            await peer.stream.aclose()
            nursery.cancel_scope.cancel()
    recorder.close()
    recording = read_recording(str(new))
    exchanges = recording.exchanges()
    assert [e.method for e in exchanges] == ["scene.delete_layer"]
    assert json.loads(exchanges[0].response.payload)["result"] == {"deleted": "Walls"}
    assert engine.report.forwarded == 1 and engine.report.recorded_new == 1


def stale_then_answer(payload: bytes) -> bytes:
    """What a chatty plugin sends: a frame answering nothing before each answer."""
    request = json.loads(payload)
    stale = {"id": "stale", "result": {"late": True}, "error": None}
    answer = {"id": request["id"], "result": {"deleted": "x"}, "error": None}
    return GOLEM.encode(stale) + GOLEM.encode(answer)


async def test_a_forwarded_miss_passes_on_what_answers_nothing_and_answers_with_its_reply(
    tmp_path: Path,
) -> None:
    # The plugin's stray reply used to be taken for the answer, and the real answer then
    # for the answer to the next forwarded request.
    engine = make_engine(modelling_session(tmp_path / "s.jsonl"), on_miss="forward")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            upstream = await nursery.start(golem_plugin, stale_then_answer)
            server = ReplayServer(engine, {"main": LOOPBACK}, upstreams={"main": upstream})
            bound = await nursery.start(server.run)
            peer = Peer(await connect(bound["main"]))
            for name in ("a", "b"):
                request = {"id": name, "method": "scene.delete_layer", "params": {"name": name}}
                await peer.stream.send_all(GOLEM.encode(request))
                assert (await peer.read())["id"] == "stale"
                assert (await peer.read())["id"] == name
            nursery.cancel_scope.cancel()
    assert engine.report.forwarded == 2


async def test_forward_without_a_live_plugin_answers_an_error(tmp_path: Path) -> None:
    engine = make_engine(modelling_session(tmp_path / "s.jsonl"), on_miss="forward")
    server = ReplayServer(engine, {"main": LOOPBACK}, upstreams={"main": Address("127.0.0.1", 1)})
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(server.run)
            peer = Peer(await connect(bound["main"]))
            reply = await peer.call("scene.delete_layer", {"name": "x"})
            assert reply["error"]["code"] == -32603
            assert "cannot reach the live plugin" in reply["error"]["message"]
            nursery.cancel_scope.cancel()


async def test_close_policy_closes_the_connection(tmp_path: Path) -> None:
    engine = make_engine(modelling_session(tmp_path / "s.jsonl"), on_miss="close")
    client_end, server_end = trio.testing.memory_stream_pair()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ReplayServer(engine, {}).serve_connection, "main", server_end)
            peer = Peer(client_end)
            await client_end.send_all(GOLEM.encode({"id": "1", "method": "nope", "params": {}}))
            assert await peer.read() is None
    assert engine.report.misses[0].method == "nope"


def other_id(payload: bytes) -> bytes:
    """A plugin that answers with an id it was not sent."""
    request = json.loads(payload)
    return GOLEM.encode({"id": f"nope-{request['id']}", "result": {}, "error": None})


async def test_a_forwarded_miss_answered_with_another_id_fails_in_time_and_serves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_server, "FORWARD_WAIT", 0.3)
    engine = make_engine(modelling_session(tmp_path / "s.jsonl"), on_miss="forward")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            upstream = await nursery.start(golem_plugin, other_id)
            server = ReplayServer(engine, {"main": LOOPBACK}, upstreams={"main": upstream})
            bound = await nursery.start(server.run)
            peer = Peer(await connect(bound["main"]))
            request = {"id": "a", "method": "scene.delete_layer", "params": {"name": "a"}}
            await peer.stream.send_all(GOLEM.encode(request))
            assert (await peer.read())["id"] == "nope-a"  # passed on as it came
            failed = await peer.read()
            assert failed["id"] == "a" and "no answer with the request's id" in str(failed)
            assert (await peer.call("ping", {}))["result"] == {"alive": True}  # served on
            nursery.cancel_scope.cancel()
