"""A redacted value stays out of the log and off the disk where the plugin echoes it too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from golem_proxy.events import FrameSeen
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.redact import REDACTED, Echoes, Redactor
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
