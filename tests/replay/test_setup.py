"""Putting a replay together: the miss policy from the command line, routes placed on the
profile's channels."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem_proxy.net.addresses import Address
from golem_proxy.replay.index import load_exchanges
from golem_proxy.replay.matching import MissPolicy
from golem_proxy.replay.setup import ReplayOptions, assign_routes, engine_for, parse_on_miss
from tests.support.traces import TraceBuilder

MAIN, GH = Address("127.0.0.1", 0), Address("127.0.0.1", 9877)


@pytest.mark.parametrize(
    "text,policy,address",
    [
        ("error", MissPolicy.ERROR, None),
        (" close ", MissPolicy.CLOSE, None),
        ("forward", MissPolicy.FORWARD, None),
        ("forward 127.0.0.1:9876", MissPolicy.FORWARD, Address("127.0.0.1", 9876)),
        ("forward=127.0.0.1:9876", MissPolicy.FORWARD, Address("127.0.0.1", 9876)),
    ],
)
def test_parse_on_miss(text: str, policy: MissPolicy, address: Address | None) -> None:
    assert parse_on_miss(text) == (policy, address)


def test_an_unknown_miss_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="expected error, close or forward"):
        parse_on_miss("ignore")
    path = str(tmp_path / "s.jsonl")
    with TraceBuilder.create(path) as trace:
        trace.call("ping", {}, {"alive": True})
    with pytest.raises(ValueError):
        engine_for(load_exchanges(path), ReplayOptions(on_miss="ignore"))  # type: ignore[arg-type]


def test_a_golem_trace_serves_main_and_gh_on_their_listeners(tmp_path: Path) -> None:
    path = str(tmp_path / "s.jsonl")
    with TraceBuilder.create(path) as trace:
        trace.call("scene.get_info", {}, {"objects": 0})
        trace.call("grasshopper.list_components", {}, {"components": []}, route="gh")
    assert assign_routes(load_exchanges(path), MAIN, GH) == {"main": MAIN, "gh": GH}


def test_a_gh_only_golem_trace_is_served_on_the_grasshopper_listener(tmp_path: Path) -> None:
    path = str(tmp_path / "s.jsonl")
    with TraceBuilder.create(path) as trace:
        trace.call("grasshopper.list_components", {}, {"components": []}, route="gh")
    assert assign_routes(load_exchanges(path), MAIN, GH) == {"main": MAIN, "gh": GH}


def test_routes_beyond_the_profiles_channels_cannot_be_placed(tmp_path: Path) -> None:
    golem = str(tmp_path / "golem.jsonl")
    with TraceBuilder.create(golem) as trace:
        trace.call("ping", {}, {"alive": True})
        trace.call("ping", {}, {"alive": True}, route="other")
    with pytest.raises(ValueError, match=r"cannot place routes other: .* main and gh"):
        assign_routes(load_exchanges(golem), MAIN, GH)
    scrybe = str(tmp_path / "scrybe.jsonl")
    with TraceBuilder.create(scrybe, "jsonrpc-ndjson") as trace:
        trace.call("state", {}, {})
        trace.call("state", {}, {}, route="gh")
    with pytest.raises(ValueError, match="cannot place routes"):
        assign_routes(load_exchanges(scrybe), MAIN, GH)
