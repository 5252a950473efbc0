"""A frame is decoded once: the frame-by-frame pumps hand the tap the frames they decoded, and
the tap's events are the same as if it had framed the bytes itself."""

from __future__ import annotations

from typing import Optional

import pytest
import trio

from golem_core.decoders import Decoder
from golem_core.framing import Frame
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile
from golem_core.profiles.golem import GolemProfile
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.live.faults import FaultPlan
from golem_proxy.live.intercept import InterceptEngine
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.tap import ConnectionTap, ObserveLimits
from golem_proxy.testing.upstreams import TracingUpstream
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy

CALLS = 40


class CountingGolem(GolemProfile):
    """GOLEM, keeping every decoder it makes (the proxy's own: the peers use `GOLEM`)."""

    def __init__(self) -> None:
        super().__init__()
        self.decoders: list[Decoder] = []

    def new_decoder(self, cap: Optional[int] = None, *, skip_oversized: bool = True) -> Decoder:
        decoder = super().new_decoder(cap, skip_oversized=skip_oversized)
        self.decoders.append(decoder)
        return decoder

    @property
    def frames_decoded(self) -> int:
        return sum(decoder.frames_decoded for decoder in self.decoders)


def _faults() -> ProxyOptions:
    return ProxyOptions(drain_timeout=0.5, faults=FaultPlan.parse(["delay:ms=1"], 1))


def _faults_enforced() -> ProxyOptions:
    plan = FaultPlan.parse(["delay:ms=1"], 1)
    return ProxyOptions(drain_timeout=0.5, faults=plan, enforce_limits=True)


def _intercepted() -> ProxyOptions:
    # A filter that selects nothing here: every frame is looked at, none is held.
    engine = InterceptEngine(GOLEM)
    engine.set_filter("~m ^nothing[.]calls[.]this$")
    return ProxyOptions(drain_timeout=0.5, intercept=engine)


@pytest.mark.trio
@pytest.mark.parametrize("options", [_faults, _faults_enforced, _intercepted])
async def test_a_frame_by_frame_route_decodes_each_frame_once(
    nursery: trio.Nursery, options: object
) -> None:
    profile = CountingGolem()
    upstream = TracingUpstream()
    await nursery.start(upstream.serve)
    assert callable(options)
    proxy = await start_proxy(nursery, upstream.address, profile=profile, options=options())
    client = GolemClient(await connect(proxy.listen))
    for n in range(CALLS):
        await client.call({"id": f"r{n}", "method": "echo", "params": {"n": n}})
    await client.stream.aclose()
    await stop_proxy(proxy)
    frames = proxy.of_type(FrameSeen)
    assert len(frames) == 2 * CALLS
    # Each frame framed once, on the forwarding path; the tap took the frames it was handed.
    assert profile.frames_decoded == 2 * CALLS


def _tap(profile: Profile, events: list[Event]) -> ConnectionTap:
    return ConnectionTap(1, "main", profile, events.append)


@pytest.mark.parametrize("profile", [GOLEM, JSONRPC_NDJSON], ids=lambda p: p.name)
def test_frames_handed_over_make_the_events_bytes_make(profile: Profile) -> None:
    """Whole frames handed over, a frame sent in two slices (as bytes) and an error reply the
    proxy wrote (as bytes) in between: the same events as framing every byte, and the frames
    after the slices are taken again once the decoder is back at a boundary."""
    requests = [
        profile.frame_payload(profile.encode_payload({"id": n, "method": "echo", "params": {}}))
        for n in range(4)
    ]
    decoded = [frame for raw in requests for frame in profile.new_decoder().feed(raw)]
    assert all(isinstance(frame, Frame) for frame in decoded)
    sliced = requests[1]
    chunks: list[tuple[bytes, Optional[Frame]]] = [
        (requests[0], decoded[0]),
        (sliced[:5], None),
        (sliced[5:], None),
        (requests[2], decoded[2]),
        (requests[3], decoded[3]),
        (b"", None),
    ]
    handed: list[Event] = []
    framed: list[Event] = []
    taking, bytes_only = _tap(profile, handed), _tap(profile, framed)
    for data, frame in chunks:
        taking.process(Direction.C2S, data, 0.5, frame)
        bytes_only.process(Direction.C2S, data, 0.5)
    assert handed == framed
    assert len([e for e in handed if isinstance(e, FrameSeen)]) == 4
    # Only the sliced frame went through the tap's own decoder.
    own = taking._inputs[Direction.C2S].decoder
    assert own.frames_decoded == 1


def test_a_frame_over_the_observation_limit_is_digested_as_before() -> None:
    """A handed frame larger than the tap observes is fed as bytes: digested, not held."""
    events: list[Event] = []
    tap = ConnectionTap(1, "main", GOLEM, events.append, limits=ObserveLimits(frame=64))
    payload = GOLEM.encode_payload({"id": 1, "method": "echo", "params": {"pad": "x" * 200}})
    raw = GOLEM.frame_payload(payload)
    (frame,) = GOLEM.new_decoder().feed(raw)
    assert isinstance(frame, Frame)
    tap.process(Direction.C2S, raw, 0.5, frame)
    tap.process(Direction.C2S, b"", 0.6)
    assert not [e for e in events if isinstance(e, FrameSeen)]
    assert any(getattr(e, "digest", "").startswith("sha256:") for e in events)
