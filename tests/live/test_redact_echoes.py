"""A redacted value stays out of the log and off the disk where the plugin echoes it too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest
import trio

from golem_core.messages import Malformed, Role
from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, FrameSeen, GapReason, ObservationLost
from golem_proxy.live.frame_redaction import values_replaced
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.redact import REDACTED, Echoes, Redactor
from golem_proxy.live.tap import ConnectionTap
from golem_proxy.live.tap_parse import parse_for_view
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.upstreams import GolemUpstream
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy


def test_the_values_a_rule_replaced_are_found_and_scrubbed_elsewhere() -> None:
    replaced: list[str] = []
    obj = {"method": "scene.create_layer", "params": {"layer": "SECRET-LAYER", "n": 7}}
    _, rules = Redactor(["params.layer"]).apply(obj, "scene.create_layer", replaced)
    assert rules == ("params.layer",) and replaced == ["SECRET-LAYER"]
    echoes = Echoes()
    echoes.remember([*replaced, "ab"])  # too short to chase
    answer = {"error": {"message": "Layer 'SECRET-LAYER' does not exist.", "ab": "ab"}}
    assert echoes.might_be_in(json.dumps(answer).encode())
    scrubbed, changed = echoes.scrub(answer)
    assert changed
    assert scrubbed == {"error": {"message": f"Layer '{REDACTED}' does not exist.", "ab": "ab"}}


def test_a_value_is_found_where_a_json_text_holds_it_escaped() -> None:
    """An MCP tool's result is the plugin's answer as JSON text: ``json.dumps`` escapes a
    non-ASCII character, a quote, a newline. Each value is hidden in those forms too, by the
    placeholder written the same way (the text stays the JSON it was); they were recorded in
    clear, and a multi-line value was not even looked for."""
    values = ["שכבה-סודית", 'say "hi" now', "import os\nprint(TOKEN)"]
    echoes = Echoes()
    echoes.remember(values)
    text = json.dumps({"names": values})
    assert echoes.might_be_in(json.dumps({"text": text}).encode())
    scrubbed, changed = echoes.scrub({"text": text, "plain": list(values)})
    assert changed
    assert json.loads(scrubbed["text"]) == {"names": [REDACTED] * 3}
    assert scrubbed["plain"] == [REDACTED] * 3
    # Bytes that decode to nothing hold the text's escapes as they are.
    broken = text.encode() + b"\xff"
    cleaned = echoes.scrub_bytes(broken)
    assert b"TOKEN" in broken and b"TOKEN" not in cleaned and b"\\u05e9" not in cleaned


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("other", ["Layer 01", "Ébauche—层 🦛"])
def test_the_placeholder_is_written_as_the_text_writes_json(ascii_only: bool, other: str) -> None:
    """An ASCII value with a backslash or a quote is written alike by a JSON writer that
    escapes non-ASCII and by one that does not: the placeholder in its place is written as
    the text it is in writes non-ASCII, so the text is what the server writes of the
    redacted value. It was ASCII-escaped in every text: a server that does not escape
    (GOLEM-3DMCP) writes ``«redacted»``, and mcp-verify of the same build differed."""
    values = ["C:\\Projects\\Client X", 'say "hi" now']
    echoes = Echoes()
    echoes.remember(values)
    answer = {"full_path": values[0], "said": values[1], "other": other}
    text = json.dumps(answer, ensure_ascii=ascii_only)
    scrubbed, changed = echoes.scrub({"text": text})
    assert changed
    redacted = {"full_path": REDACTED, "said": REDACTED, "other": other}
    if ascii_only and other.isascii():
        # Nothing in the text says how its writer writes non-ASCII: as it is, valid either way.
        assert scrubbed["text"] == json.dumps(redacted, ensure_ascii=False)
    else:
        assert scrubbed["text"] == json.dumps(redacted, ensure_ascii=ascii_only)
    cleaned = echoes.scrub_bytes(text.encode() + b"\xff")
    assert cleaned.decode("utf-8", "replace").startswith(scrubbed["text"])


def test_a_scrub_copies_only_the_containers_on_the_way_to_a_replaced_string() -> None:
    """Nothing else is copied (a copy of every container cost a large frame its size again),
    the original is left as it was, keys are scrubbed too, and a message nested deeper than
    a recursive walk goes is scrubbed all the way down."""
    echoes = Echoes()
    echoes.remember(["SECRET-LAYER"])
    points = [[n, n + 1] for n in range(1000)]
    obj = {"a": points, "b": {"c": [1, "x SECRET-LAYER y"]}, "SECRET-LAYER": {"d": [2]}}
    scrubbed, changed = echoes.scrub(obj)
    assert changed and scrubbed["a"] is points and scrubbed[REDACTED] is obj["SECRET-LAYER"]
    assert scrubbed["b"] == {"c": [1, f"x {REDACTED} y"]}
    assert obj["b"] == {"c": [1, "x SECRET-LAYER y"]} and "SECRET-LAYER" in obj
    untouched = {"k": ["nothing here"], "n": [[]]}
    assert echoes.scrub(untouched) == (untouched, False)
    assert echoes.scrub(untouched)[0] is untouched
    deep: object = "SECRET-LAYER"
    for _ in range(5000):
        deep = [deep]
    scrubbed, changed = echoes.scrub(deep)
    assert changed
    for _ in range(5000):
        assert isinstance(scrubbed, list) and len(scrubbed) == 1
        scrubbed = scrubbed[0]
    assert scrubbed == REDACTED


@pytest.mark.trio
async def test_an_echoed_value_is_redacted_in_the_response_and_the_recording(
    tmp_path: Path,
) -> None:
    record = tmp_path / "r.jsonl"
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        upstream.dispatcher.register(
            "layer", lambda params: {"said": f"Layer '{params['layer']}' does not exist."}
        )
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, redact=("params.layer",))
        proxy = await start_proxy(nursery, upstream.address, record=str(record), options=options)
        client = GolemClient(await connect(proxy.listen))
        answer = await client.call({"id": "1", "method": "layer", "params": {"layer": "SECRET"}})
        assert "SECRET" in json.dumps(answer.obj)  # the client gets the real answer
        await client.stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    assert b"SECRET" not in record.read_bytes()
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    assert "echo" in frames[1].redacted
    assert all(b"SECRET" not in frame.payload for frame in proxy.of_type(FrameSeen))


@pytest.mark.trio
async def test_a_value_redacted_on_one_connection_is_hidden_on_the_next(tmp_path: Path) -> None:
    """A secret is one on every connection of the session: the MCP server reconnects after a
    reset, and a value a rule replaced on the first connection comes back on the second (a
    list of layers); it was recorded there in clear."""
    record = tmp_path / "r.jsonl"
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        upstream.dispatcher.register("layer", lambda params: {"made": True})
        upstream.dispatcher.register("layers", lambda params: {"names": ["Default", "SECRET"]})
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, redact=("params.layer",))
        proxy = await start_proxy(nursery, upstream.address, record=str(record), options=options)
        first = GolemClient(await connect(proxy.listen))
        await first.call({"id": "1", "method": "layer", "params": {"layer": "SECRET"}})
        await first.stream.aclose()
        second = GolemClient(await connect(proxy.listen))
        answer = await second.call({"id": "2", "method": "layers", "params": {}})
        assert answer.obj["result"]["names"] == ["Default", "SECRET"]  # forwarded as it came
        await second.stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    assert b"SECRET" not in record.read_bytes()
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    assert [frame.conn for frame in frames] == [1, 1, 2, 2]
    assert frames[3].redacted == ("echo",)
    assert frames[3].message.obj["result"]["names"] == ["Default", REDACTED]


@pytest.mark.trio
async def test_an_echo_nested_as_deep_as_the_decoder_goes_is_redacted(tmp_path: Path) -> None:
    """A walk that recursed gave up past ~500 levels and recorded the echo as it came; the
    encoding of the redacted message must go as deep as the decoding went."""
    record = tmp_path / "r.jsonl"
    async with trio.open_nursery() as nursery:
        upstream = GolemUpstream()
        upstream.dispatcher.register("layer", lambda params: {"made": True})
        await nursery.start(upstream.serve)
        options = ProxyOptions(drain_timeout=1.0, redact=("params.layer",))
        proxy = await start_proxy(nursery, upstream.address, record=str(record), options=options)
        client = GolemClient(await connect(proxy.listen))
        await client.call({"id": "1", "method": "layer", "params": {"layer": "SECRET"}})
        for number, depth in enumerate((600, 900), start=2):
            deep = b'"SECRET and more"'
            payload = b'{"id":"%d","method":"layer","params":{"deep":%s%s%s}}' % (
                number,
                b"[" * depth,
                deep,
                b"]" * depth,
            )
            await client.framed.send(GOLEM.frame_payload(payload))
            answer = await client.receive()
            assert answer.obj["id"] == str(number)
        await client.stream.aclose()
        await stop_proxy(proxy)
        nursery.cancel_scope.cancel()
    assert b"SECRET" not in record.read_bytes()
    frames = [e for e in read_recording(str(record)).events if isinstance(e, FrameSeen)]
    assert [frame.redacted for frame in frames[2::2]] == [("echo",), ("echo",)]


def test_a_request_corrupted_past_decoding_is_scrubbed_of_a_value_redacted_before() -> None:
    """``--fault corrupt`` hands the tap bytes that decode to nothing: no rule finds its path
    in them, but a value the rules replaced earlier on the connection is scrubbed from them,
    and they stay as malformed as they were sent."""
    events: list[object] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=Redactor(["params.code"]))
    login = {"id": "1", "method": "auth.login", "params": {"code": "TOPSECRET-hunter2"}}
    tap.process(Direction.C2S, GOLEM.encode(login), 0.0)
    corrupted = b'{"id": "2", "method": "auth.login", "params": {"code": "TOPSECRET-hunter2"}\xfe'
    tap.process(Direction.C2S, GOLEM.frame_payload(corrupted), 0.1)
    first, second = [e for e in events if isinstance(e, FrameSeen)]
    assert first.redacted == ("params.code",) and second.redacted == ("echo",)
    assert b"TOPSECRET" not in second.payload and REDACTED.encode() in second.payload
    assert isinstance(second.message, Malformed)


def test_a_frame_not_recorded_as_it_came_is_learned_from_and_publishes_nothing() -> None:
    """An answer dropped before the tap saw it (``--intercept``, ``--fault drop``): the
    forwarding side hands the tap the values the rules replace in it, found there with its
    request's method (`frame_redaction.values_replaced`), never the frame; they are hidden
    where a later frame repeats them, and nothing is published of the answer itself."""
    events: list[object] = []
    redactor = Redactor(["auth.issue:result.token"])
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=redactor)
    tap.process(Direction.C2S, GOLEM.encode({"id": "1", "method": "auth.issue"}), 0.0)
    issued = GOLEM.encode({"id": "1", "result": {"token": "ISSUED-token-7f3a"}})[4:]
    message = GOLEM.parse(issued, Role.RESPONSE)
    assert values_replaced(GOLEM, redactor, issued, message, Role.RESPONSE, "auth.other") == ()
    learned = values_replaced(GOLEM, redactor, issued, message, Role.RESPONSE, "auth.issue")
    assert learned == ("ISSUED-token-7f3a",)
    again = {"id": "2", "method": "auth.check", "params": {"token": "ISSUED-token-7f3a"}}
    tap.process(Direction.C2S, GOLEM.encode(again), 0.1)
    published = len(events)
    tap.learn_unrecorded(learned, 0.15)
    assert len(events) == published
    tap.process(Direction.C2S, GOLEM.encode({**again, "id": "3"}), 0.2)
    first, second = [e for e in events if isinstance(e, FrameSeen)][1:]
    assert first.redacted == () and b"ISSUED" in first.payload
    assert second.redacted == ("echo",) and b"ISSUED" not in second.payload


def test_a_value_elided_from_a_large_frame_is_found_where_a_rule_names_it() -> None:
    """A 2 MiB answer is typed with its long strings left out: a rule that names one of them
    has the frame parsed whole, one that names none costs no parse."""
    token = "T0KEN" * 20_000
    payload = GOLEM.encode_payload(
        {"id": "1", "result": {"token": token, "blob": "QUJD" * 400_000}}
    )
    message, elided = parse_for_view(GOLEM, payload, Role.RESPONSE)
    assert elided and token not in str(message.obj)
    found = values_replaced(
        GOLEM, Redactor(["result.token"]), payload, message, Role.RESPONSE, None, elided
    )
    assert found == (token,)
    none = values_replaced(
        GOLEM, Redactor(["result.other"]), payload, message, Role.RESPONSE, None, elided
    )
    assert none == ()


def test_learning_that_fails_costs_the_connection_s_inspection_said_when_it_failed() -> None:
    """A learning the tap cannot take stops its decoding as a decoding bug does: once, with a
    gap at the moment it failed (not at the session's start)."""
    events: list[object] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, redactor=Redactor(["params.token"]))
    tap.learn_unrecorded(cast("tuple[str, ...]", (None,)), 4.5)
    assert tap.failed is not None
    (gap,) = [e for e in events if isinstance(e, ObservationLost)]
    assert gap.reason is GapReason.OBSERVER_FAILED and gap.t == 4.5
