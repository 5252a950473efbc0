"""The replay engine without sockets: matching, FIFO, reuse, GUIDs, built-ins, misses."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Optional

import pytest

from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile
from golem_proxy.events import Direction
from golem_proxy.net.addresses import Address
from golem_proxy.replay.engine import Close, Forward, ReplayEngine, Reply, summary
from golem_proxy.replay.index import ReplayIndex, load_exchanges
from golem_proxy.replay.matching import IgnoreRules, Keyer, MatchMode
from golem_proxy.replay.setup import ReplayOptions, assign_routes
from tests.support.traces import TraceBuilder

from .traces import BOX, SPHERE, UNION, modelling_session


def engine_for(
    path: Path,
    *,
    match: MatchMode = MatchMode.METHOD_PARAMS,
    ignore: tuple[str, ...] = (),
    reuse: bool = False,
    on_miss: str = "error",
    timing: Optional[float] = None,
    reuse_hint: Optional[str] = ReplayOptions().reuse_hint,
) -> ReplayEngine:
    index = ReplayIndex(
        load_exchanges(str(path)), Keyer(match, IgnoreRules.parse(ignore)), reuse=reuse
    )
    return ReplayEngine(index, on_miss=on_miss, timing=timing, reuse_hint=reuse_hint)


def request(method: str, params: Any = None, ident: Any = None, profile: Profile = GOLEM) -> bytes:
    obj: dict[str, Any] = {"id": ident or str(uuid.uuid4()), "method": method}
    obj["params"] = {} if params is None else params
    if profile is JSONRPC_NDJSON:
        obj = {"jsonrpc": "2.0", **obj}
    return profile.encode_payload(obj)


def answer(
    engine: ReplayEngine, method: str, params: Any = None, route: str = "main", ident: Any = None
) -> dict[str, Any]:
    ident = ident or str(uuid.uuid4())
    decision = engine.decide(route, request(method, params, ident, engine.profile))
    assert isinstance(decision, Reply), decision
    obj = json.loads(engine.profile.new_decoder().feed(decision.data)[0].payload)
    assert obj["id"] == ident  # the live id, never the recorded one
    return obj


@pytest.fixture
def session(tmp_path: Path) -> Path:
    return modelling_session(tmp_path / "session.jsonl")


def test_replays_a_session_with_fresh_ids_and_a_fresh_layer_name(session: Path) -> None:
    engine = engine_for(session, ignore=("scene.create_layer:params.name",))
    assert answer(engine, "ping")["result"] == {"alive": True}
    layer = answer(engine, "scene.create_layer", {"name": "walls-0001", "color": [200, 80, 40]})
    assert layer["result"]["layer_index"] == 1
    box = answer(
        engine, "geometry.create_box", {"width": 40, "corner": [0, 0, 0], "height": 30, "depth": 10}
    )
    assert box["result"]["guid"] == BOX  # member order and 40 vs 40.0 do not matter
    sphere = answer(engine, "geometry.create_sphere", {"center": [20, 5, 45], "radius": 8})
    assert answer(engine, "scene.list_objects")["result"]["objects"][1]["guid"] == SPHERE
    union = answer(
        engine,
        "operations.boolean_union",
        {"guids": [box["result"]["guid"], sphere["result"]["guid"]]},
    )
    assert union["result"]["guids"] == [UNION]
    assert answer(engine, "scene.list_objects")["result"]["objects"] == [{"guid": UNION}]
    error = answer(
        engine, "scene.get_object_info", {"guid": "00000000-0000-4000-8000-000000000000"}
    )
    assert error["error"]["code"] == "OBJECT_NOT_FOUND" and error["result"] is None
    report = summary(engine)
    assert report["served"] == 8 and report["misses"] == []
    assert [u["method"] for u in report["unused"]] == ["grasshopper.list_components"]


def test_repeated_identical_requests_are_answered_in_recorded_order(session: Path) -> None:
    engine = engine_for(session)
    first = answer(engine, "scene.list_objects")["result"]["objects"]
    second = answer(engine, "scene.list_objects")["result"]["objects"]
    assert (len(first), len(second)) == (2, 1)
    decision = engine.decide("main", request("scene.list_objects"))
    assert isinstance(decision, Reply)
    message = json.loads(GOLEM.new_decoder().feed(decision.data)[0].payload)["error"]["message"]
    assert "already answered" in message and "--reuse" in message
    # Where reusing is no option (mcp-verify's stand-in), the miss does not offer it.
    engine = engine_for(session, reuse_hint=None)
    for _ in range(2):
        answer(engine, "scene.list_objects")
    decision = engine.decide("main", request("scene.list_objects"))
    assert isinstance(decision, Reply)
    message = json.loads(GOLEM.new_decoder().feed(decision.data)[0].payload)["error"]["message"]
    assert message.endswith("was already answered")


def test_reuse_repeats_the_last_answer(session: Path) -> None:
    engine = engine_for(session, reuse=True)
    answer(engine, "scene.list_objects")
    answer(engine, "scene.list_objects")
    third = answer(engine, "scene.list_objects")
    assert third["result"]["objects"] == [{"guid": UNION}]
    assert engine.report.served == 3 and not engine.report.misses


def test_a_miss_names_the_nearest_recorded_request_and_the_difference(session: Path) -> None:
    engine = engine_for(session)
    reply = answer(engine, "scene.create_layer", {"name": "roof", "color": [200, 80, 40]})
    error = reply["error"]
    assert error["code"] == "NOT_FOUND" and reply["result"] is None
    assert error["message"] == (
        "no recorded scene.create_layer with these params; nearest: "
        "#2 differs at params.name ('walls-4821' vs 'roof')"
    )
    unknown = answer(engine, "scene.delete_layer", {"name": "x"})["error"]["message"]
    assert unknown.startswith("no recorded scene.delete_layer on main (recorded methods: ")


def test_a_miss_on_a_request_recorded_without_an_answer_says_so(tmp_path: Path) -> None:
    """Its answer was dropped, or too large to observe: the request is in the trace, and the
    miss said it was never recorded ("no recorded … (recorded methods: …)")."""
    path = tmp_path / "unanswered.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        trace.call("scene.get_document_info", {}, {"name": "doc"})
        conn = trace._conn("main")
        asked = GOLEM.encode({"id": "u1", "method": "scene.list_layers", "params": {}})
        trace.tap.send(conn, Direction.C2S, asked)
        trace._write()
    message = answer(engine_for(path), "scene.list_layers")["error"]["message"]
    assert message.startswith("recorded scene.list_layers on main (#2) has no answer"), message


def test_a_miss_names_some_recorded_methods_and_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        for number in range(12):
            trace.call(f"scene.method_{number:02d}", {}, {})
    message = answer(engine_for(path), "scene.other")["error"]["message"]
    assert message.endswith("scene.method_07, … 4 more)"), message


def test_method_matching_ignores_params_and_sequence_follows_the_order(session: Path) -> None:
    by_method = engine_for(session, match=MatchMode.METHOD)
    assert answer(by_method, "geometry.create_box", {"width": 1})["result"]["guid"] == BOX
    in_order = engine_for(session, match=MatchMode.SEQUENCE)
    assert answer(in_order, "ping")["result"] == {"alive": True}
    decision = in_order.decide("main", request("geometry.create_box"))
    message = json.loads(GOLEM.new_decoder().feed(decision.data)[0].payload)  # type: ignore[union-attr]
    assert message["error"]["message"] == (
        "sequence mismatch on main: expected #2 scene.create_layer, got geometry.create_box"
    )


def test_builtins_answer_even_when_the_trace_lacks_them(tmp_path: Path) -> None:
    with TraceBuilder.create(str(tmp_path / "t.jsonl")) as trace:
        trace.call("scene.list_layers", {}, {"layers": []})
    engine = engine_for(tmp_path / "t.jsonl")
    assert answer(engine, "ping")["result"] == {"alive": True}
    assert answer(engine, "ping")["result"] == {"alive": True}
    methods = answer(engine, "list_methods")["result"]["methods"]
    assert methods == ["list_methods", "ping", "scene.list_layers"]
    assert engine.report.builtins == 3 and summary(engine)["unused"][0]["number"] == 1


def test_malformed_requests_get_the_plugin_reply(session: Path) -> None:
    engine = engine_for(session)
    decision = engine.decide("main", b"{not json")
    assert isinstance(decision, Reply)
    reply = json.loads(GOLEM.new_decoder().feed(decision.data)[0].payload)
    assert reply["id"] is None and reply["error"]["code"] == -32603
    assert engine.report.malformed == 1


def test_miss_policies_close_and_forward(session: Path) -> None:
    closing = engine_for(session, on_miss="close")
    assert isinstance(closing.decide("main", request("scene.delete_layer")), Close)
    forwarding = engine_for(session, on_miss="forward")
    decision = forwarding.decide("main", request("scene.delete_layer", {"name": "a"}))
    assert isinstance(decision, Forward) and decision.method == "scene.delete_layer"
    assert forwarding.report.forwarded == 1


def test_a_forward_of_a_used_up_request_teaches_the_guid_map(session: Path) -> None:
    engine = engine_for(session, on_miss="forward")
    params = {"width": 40, "corner": [0, 0, 0], "height": 30, "depth": 10}
    answer(engine, "geometry.create_box", params)
    decision = engine.decide("main", request("geometry.create_box", params))
    assert isinstance(decision, Forward)
    live = "0f0f0f0f-0000-4000-8000-000000000001"
    engine.learn_from_forward(
        decision,
        GOLEM.encode_payload(
            {"id": "x", "result": {"guid": live, "bounding_box": {}}, "error": None}
        ),
    )
    assert engine.guids.to_live_map == {BOX: live}
    # The live GUID now stands for the recorded one: the union is matched, and the recorded
    # listing comes back speaking of the live object.
    answer(engine, "geometry.create_sphere", {"center": [20, 5, 45], "radius": 8})
    listing = answer(engine, "scene.list_objects")["result"]["objects"]
    assert listing[0] == {"guid": live}
    union = answer(engine, "operations.boolean_union", {"guids": [live, SPHERE]})
    assert union["result"]["guids"] == [UNION]


def test_timing_scales_recorded_latencies(session: Path) -> None:
    engine = engine_for(session, timing=2.0)
    engine.decide("main", request("ping"))
    decision = engine.decide(
        "main",
        request(
            "geometry.create_box", {"corner": [0, 0, 0], "width": 40, "depth": 10, "height": 30}
        ),
    )
    assert isinstance(decision, Reply) and decision.delay == pytest.approx(0.5)
    assert isinstance(engine_for(session).decide("main", request("ping")), Reply)


def test_jsonrpc_misses_are_jsonrpc_errors(tmp_path: Path) -> None:
    with TraceBuilder.create(str(tmp_path / "s.jsonl"), "jsonrpc-ndjson") as trace:
        trace.call("state", {}, {"active_path": None})
    engine = engine_for(tmp_path / "s.jsonl")
    decision = engine.decide("main", request("ping", profile=JSONRPC_NDJSON, ident=7))
    assert isinstance(decision, Reply)
    reply = json.loads(JSONRPC_NDJSON.new_decoder().feed(decision.data)[0].payload)
    assert reply["jsonrpc"] == "2.0" and reply["id"] == 7 and "result" not in reply
    assert reply["error"]["code"] == -32601 and "no recorded ping" in reply["error"]["message"]


def test_a_single_route_trace_opens_the_grasshopper_channel_only_for_golem(
    tmp_path: Path, session: Path
) -> None:
    main, gh = Address("127.0.0.1", 0), Address("127.0.0.1", 9877)
    with TraceBuilder.create(str(tmp_path / "s.jsonl"), "jsonrpc-ndjson") as trace:
        trace.call("state", {}, {"active_path": None})
    assert assign_routes(engine_for(tmp_path / "s.jsonl").index.trace, main, gh) == {"main": main}
    golem = assign_routes(engine_for(session).index.trace, main, gh)
    assert golem["gh"] == gh


def test_a_jsonrpc_notification_is_answered_as_the_app_answers_it(tmp_path: Path) -> None:
    # The Scrybe app answers a request without an id as invalid, with id 0: so does replay
    # (a notification is a first-class message on the wire, not a request it can serve).
    with TraceBuilder.create(str(tmp_path / "s.jsonl"), "jsonrpc-ndjson") as trace:
        trace.call("state", {}, {"active_path": None})
    engine = engine_for(tmp_path / "s.jsonl")
    for payload in (b'{"jsonrpc":"2.0","method":"state"}', b'{"jsonrpc":"2.0","id":3,"result":{}}'):
        decision = engine.decide("main", payload)
        assert isinstance(decision, Reply)
        reply = json.loads(JSONRPC_NDJSON.new_decoder().feed(decision.data)[0].payload)
        assert reply["error"]["code"] == -32600
    assert engine.report.malformed == 2
